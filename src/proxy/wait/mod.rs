//! `WAIT numreplicas timeout` through the proxy.
//!
//! Reply: an integer, the number of replicas that acknowledged every write this client
//! made (the least such number over the masters its writes went to); or an error that says
//! why no such number can be given. Never a count that includes a replica lacking one of
//! the client's writes.
//!
//! Why the count is true: Redis's WAIT counts the replicas whose acknowledged offset reached
//! the calling connection's `woff`, and every command (PING included) sets `woff` to the
//! master's replication offset when it returns. WAIT is parked like a transaction: it runs
//! once every earlier request of the client has been answered, so each write is inside its
//! master's offset by then. `PING` then `WAIT` sent on a connection to that master makes
//! `woff` the offset right after the PING: at or past every write of this client there. It
//! may also cover other clients' later writes, so WAIT can wait longer than on one server;
//! it never counts less data than the client wrote. (Checked with redis-server 7.0.15:
//! after a write on another connection and with the replica stopped, `WAIT 1 300` as a
//! connection's first command answers 1 — the false acknowledgement — and `PING`, `WAIT 1
//! 300` answers 0.)
//!
//! The connection is a dedicated one per master, not the shared one that carried the
//! writes: WAIT blocks up to its timeout (for ever with 0), and on a shared connection it
//! would stall every other client queued behind it. The masters are asked concurrently, so
//! the reply takes at most about one timeout.
//!
//! Which masters: [`Writes`] notes, per client, the master of every request that may write
//! (everything not flagged `readonly`), by its index in the slot map of the moment. A
//! request that a node redirected (MOVED, ASK, TRYAGAIN) or that was retried elsewhere
//! ran on another node than the one noted; [`RedirectNotes`] records where, from the retry
//! loop, and WAIT adds those nodes. If a master written to then lost a slot or left the
//! slot map (a failover, a slot moved off it), the client's keys may now be elsewhere: WAIT
//! answers an error and starts a new trail, as a client whose connection to a failed node
//! broke starts again with a new connection. Changes among the other masters do not
//! matter. The trail is otherwise kept for the life of the client: on one server, WAIT
//! covers every earlier write of the connection, not only those since the last WAIT.
//!
//! A client with no write: `WAIT` alone on a fresh connection to one master, which is
//! exactly what Redis answers on a connection that never wrote (its `woff` is 0).
//!
//! WAIT inside MULTI runs inside EXEC on the transaction's master, where Redis answers at
//! once with the replicas that acknowledged the offset of the connection at MULTI: every
//! earlier write of the client to that master. That is the client's whole trail only if
//! its writes all went to that master; otherwise ([`check_multi`]) EXEC is refused.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::blocking::Interrupted;
use super::client_io::ClientIo;
use super::forward::error_reply;
use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::backend::{Lane, Topology};
use crate::resp::{encode_request, parse_frame, Proto, ReplyBuf};

mod trail;
pub use trail::{RedirectNotes, Writes, MAP_CHANGED};

/// The answer for WAIT in a transaction of one master when the client wrote to others.
pub const MULTI_OTHER_MASTERS: &str = "ERR slotproxy: WAIT inside MULTI counts the replicas of the transaction's master only, and this client also wrote to other masters; call WAIT outside the transaction";

/// The nodes' redirect notes for `lane`, added to the trail.
fn absorb_notes(proxy: &Proxy, writes: &mut Writes, lane: Lane, topology: &Arc<Topology>) {
    for addr in proxy.wait_notes.take(lane) {
        writes.note_addr(topology, &addr);
    }
}

/// Runs WAIT (see the module doc). `Err` only when the client went away meanwhile.
pub async fn run(
    proxy: &Arc<Proxy>,
    writes: &mut Writes,
    lane: Lane,
    request: Bytes,
    proto: Proto,
    io: &mut ClientIo,
) -> Result<Bytes, Interrupted> {
    let topology = proxy.topology.load_full();
    absorb_notes(proxy, writes, lane, &topology);
    let masters = match writes.masters(&topology) {
        Ok(masters) => masters,
        Err(e) => return Ok(error_reply(e)),
    };
    // No write: WAIT alone, as the first command of its connection (`woff` 0).
    let first_command = masters.is_empty();
    let targets = if first_command {
        match proxy.any_master() {
            Ok(addr) => vec![addr],
            Err(e) => return Ok(error_reply(&e.to_reply())),
        }
    } else {
        masters
    };
    let (sent, replies_each) = if first_command {
        (request, 1)
    } else {
        let mut bytes = BytesMut::new();
        encode_request(&mut bytes, &["PING"]);
        bytes.extend_from_slice(&request);
        (bytes.freeze(), 2)
    };
    let connect = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
    // Aborted on drop: a client that leaves closes the connections, which frees them on
    // the nodes.
    let mut asks = tokio::task::JoinSet::new();
    for (i, addr) in targets.iter().enumerate() {
        let (proxy, addr, sent) = (proxy.clone(), addr.clone(), sent.clone());
        asks.spawn(async move {
            let reply = ask(&proxy, &addr, &sent, replies_each, proto, connect).await;
            (i, reply)
        });
    }
    let mut replies: Vec<Option<Bytes>> = vec![None; targets.len()];
    while !asks.is_empty() {
        tokio::select! {
            done = asks.join_next() => match done {
                Some(Ok((i, reply))) => replies[i] = Some(reply),
                Some(Err(_)) => return Ok(error_reply("ERR slotproxy: WAIT failed")),
                None => break,
            },
            alive = io.read_more() => if !alive {
                return Err(Interrupted::ClientGone);
            },
        }
    }
    // A failover or slot move while WAIT waited: the node that counted may no longer
    // hold the writes.
    if let Err(e) = writes.masters(&proxy.topology.load_full()) {
        return Ok(error_reply(e));
    }
    Ok(least(replies, proto))
}

/// Sends `sent` on a new dedicated connection to `addr` and returns the last of its
/// `replies` replies (WAIT's), or the first error among them.
async fn ask(
    proxy: &Arc<Proxy>,
    addr: &str,
    sent: &[u8],
    replies: usize,
    proto: Proto,
    connect: Duration,
) -> Bytes {
    let mut conn = match Dedicated::open(addr, proto, &proxy.dedicated, connect).await {
        Ok(conn) => conn,
        Err(e) => return error_reply(&e.to_reply()),
    };
    if let Err(e) = conn.send(sent).await {
        return error_reply(&e.to_reply());
    }
    let mut last = Bytes::new();
    for _ in 0..replies {
        last = match conn.read_reply().await {
            Ok(reply) if reply.first() == Some(&b'-') => return reply,
            Ok(reply) => reply,
            Err(e) => return error_reply(&e.to_reply()),
        };
    }
    last
}

/// The least count among the masters' replies, or the first error (in slot-map order).
fn least(replies: Vec<Option<Bytes>>, proto: Proto) -> Bytes {
    let mut least: Option<i64> = None;
    for reply in replies {
        let Some(reply) = reply else {
            return error_reply("ERR slotproxy: WAIT got no reply from a master");
        };
        if reply.first() == Some(&b'-') {
            return reply;
        }
        let count = match parse_frame(&reply) {
            Ok(Some((frame, _))) => frame.as_integer(),
            _ => None,
        };
        match count {
            Some(n) => least = Some(least.map_or(n, |l| l.min(n))),
            None => {
                return error_reply(&format!(
                    "ERR slotproxy: unexpected WAIT reply from a master: {}",
                    String::from_utf8_lossy(&reply).trim_end()
                ))
            }
        }
    }
    let mut buf = BytesMut::new();
    ReplyBuf::new(&mut buf, proto).integer(least.unwrap_or(0));
    buf.freeze()
}

/// Before EXEC of a transaction that holds WAIT: the master it must run on when it has no
/// key (the one master the client wrote to, or any), or why it cannot count this client's
/// writes. `slot_master`: the master of the transaction's slot, if it has keys.
pub fn check_multi(
    proxy: &Proxy,
    writes: &mut Writes,
    lane: Lane,
    slot_master: Option<&str>,
) -> Result<Option<String>, String> {
    let topology = proxy.topology.load();
    absorb_notes(proxy, writes, lane, &topology);
    let masters = writes.masters(&topology).map_err(str::to_string)?;
    match (slot_master, masters.as_slice()) {
        (_, []) => Ok(None),
        (Some(slot_master), written) if written.iter().all(|m| m == slot_master) => Ok(None),
        (None, [only]) => Ok(Some(only.clone())),
        _ => Err(MULTI_OTHER_MASTERS.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_count_or_the_first_error() {
        let reply = |s: &'static [u8]| Some(Bytes::from_static(s));
        assert_eq!(
            least(vec![reply(b":2\r\n"), reply(b":1\r\n")], Proto::Resp2),
            Bytes::from_static(b":1\r\n")
        );
        assert_eq!(
            least(vec![reply(b":2\r\n"), reply(b"-ERR x\r\n")], Proto::Resp2),
            Bytes::from_static(b"-ERR x\r\n")
        );
        assert!(least(vec![reply(b"+PONG\r\n")], Proto::Resp2).starts_with(b"-ERR"));
    }
}
