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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::blocking::Interrupted;
use super::client_io::ClientIo;
use super::forward::error_reply;
use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::backend::{Lane, Topology};
use crate::registry::lock;
use crate::resp::{encode_request, Proto, ReplyBuf};

/// The answer when the slot map changed after the client's writes.
pub const MAP_CHANGED: &str = "ERR slotproxy: WAIT cannot count the replicas that acknowledged this client's writes: the cluster's slot map changed since they were made (failover or slot migration), so the nodes that hold them may have changed";

/// The answer for WAIT in a transaction of one master when the client wrote to others.
pub const MULTI_OTHER_MASTERS: &str = "ERR slotproxy: WAIT inside MULTI counts the replicas of the transaction's master only, and this client also wrote to other masters; call WAIT outside the transaction";

/// The masters a client's possible writes went to.
#[derive(Default)]
pub struct Writes(Option<Box<Trail>>);

struct Trail {
    /// The slot map the indexes below refer to.
    topology: Arc<Topology>,
    /// Bit `i` set: `masters[i]` of that slot map ran a request of the client that may
    /// write.
    masters: Vec<u64>,
    /// A master written to lost a slot or left, or a write ran on a node the map did not
    /// list: where the writes are now cannot be known.
    moved: bool,
}

impl Trail {
    fn has(&self, index: usize) -> bool {
        self.masters
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    fn set(&mut self, index: usize) {
        let word = index / 64;
        if self.masters.len() <= word {
            self.masters.resize(word + 1, 0);
        }
        self.masters[word] |= 1 << (index % 64);
    }

    /// Moves the trail onto a newer slot map. The writes stay where they are only if
    /// every master written to is still a master (same address and id) and still serves
    /// every slot it served: a slot it lost may have taken the client's keys elsewhere (a
    /// migration, a failover). Changes among the other masters do not matter.
    fn rebase(&mut self, next: &Arc<Topology>) {
        let old = self.topology.clone();
        let mut masters = Vec::new();
        for (index, node) in old.masters.iter().enumerate() {
            if !self.has(index) {
                continue;
            }
            let same = |m: &crate::backend::topology::Node| {
                m.addr == node.addr && (m.id.is_empty() || node.id.is_empty() || m.id == node.id)
            };
            let Some(now) = next.masters.iter().position(same) else {
                self.moved = true;
                return;
            };
            let kept_every_slot = (0..crate::cluster::SLOT_COUNT as u16).all(|slot| {
                old.master_of_slot(slot) != Some(index) || next.master_of_slot(slot) == Some(now)
            });
            if !kept_every_slot {
                self.moved = true;
                return;
            }
            masters.push(now);
        }
        self.masters.clear();
        self.topology = next.clone();
        for index in masters {
            self.set(index);
        }
    }
}

impl Writes {
    fn trail(&mut self, topology: &Arc<Topology>) -> Option<&mut Trail> {
        let trail = self.0.get_or_insert_with(|| {
            Box::new(Trail {
                topology: topology.clone(),
                masters: Vec::new(),
                moved: false,
            })
        });
        if !trail.moved && trail.topology.version != topology.version {
            trail.rebase(topology);
        }
        (!trail.moved).then_some(trail)
    }

    /// The master at `index` in `topology.masters` ran a request that may write.
    pub fn note_index(&mut self, topology: &Arc<Topology>, index: usize) {
        if let Some(trail) = self.trail(topology) {
            trail.set(index);
        }
    }

    /// A request that may write went to the master of `slot` (none: it was refused there
    /// and then, and wrote nothing).
    pub fn note_slot(&mut self, topology: &Arc<Topology>, slot: u16) {
        if let Some(index) = topology.master_of_slot(slot) {
            self.note_index(topology, index);
        }
    }

    /// A request that may write ran on the node at `addr`.
    pub fn note_addr(&mut self, topology: &Arc<Topology>, addr: &str) {
        match topology.masters.iter().position(|m| m.addr == addr) {
            Some(index) => self.note_index(topology, index),
            None => {
                if let Some(trail) = self.trail(topology) {
                    trail.moved = true;
                }
            }
        }
    }

    /// A request that may write went to every master.
    pub fn note_all(&mut self, topology: &Arc<Topology>) {
        for index in 0..topology.masters.len() {
            self.note_index(topology, index);
        }
    }

    /// The addresses of the masters written to, in slot-map order; an error when they
    /// cannot be known (the trail then starts anew).
    fn masters(&mut self, topology: &Arc<Topology>) -> Result<Vec<String>, &'static str> {
        if self.0.is_none() {
            return Ok(Vec::new());
        }
        let Some(trail) = self.trail(topology) else {
            self.0 = None;
            return Err(MAP_CHANGED);
        };
        Ok(topology
            .masters
            .iter()
            .enumerate()
            .filter(|(i, _)| trail.has(*i))
            .map(|(_, node)| node.addr.clone())
            .collect())
    }
}

/// Where requests ran after a redirect or a retry, per client, noted by the retry loop
/// (which has the client's lane but not its session) and taken by the client's next WAIT.
#[derive(Default)]
pub struct RedirectNotes {
    /// Whether any client has a note: most WAITs and disconnects take no lock.
    any: AtomicBool,
    by_client: Mutex<HashMap<(usize, usize), Vec<String>>>,
}

impl RedirectNotes {
    /// A request of the client on `lane` was answered by `addr` after a redirect or retry.
    pub fn note(&self, lane: Lane, addr: &str) {
        let mut notes = lock(&self.by_client);
        let addrs = notes.entry((lane.worker, lane.conn)).or_default();
        if !addrs.iter().any(|a| a == addr) {
            addrs.push(addr.to_string());
        }
        self.any.store(true, Ordering::Release);
    }

    /// The client's notes, removed.
    pub fn take(&self, lane: Lane) -> Vec<String> {
        if !self.any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut notes = lock(&self.by_client);
        let taken = notes.remove(&(lane.worker, lane.conn)).unwrap_or_default();
        if notes.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        taken
    }
}

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
        let count = std::str::from_utf8(&reply)
            .ok()
            .and_then(|text| text.strip_prefix(':'))
            .and_then(|text| text.trim_end().parse::<i64>().ok());
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

    const A: &str = "127.0.0.1:7000";
    const B: &str = "127.0.0.1:7001";
    const C: &str = "127.0.0.1:7002";

    /// Slot 0 on A, 1 on B, 2 on C.
    fn three_masters() -> Arc<Topology> {
        let map = Topology::default()
            .with_moved(0, A)
            .with_moved(1, B)
            .with_moved(2, C);
        Arc::new(map)
    }

    #[test]
    fn the_trail_lists_written_masters_until_one_loses_a_slot() {
        let map = three_masters();
        let mut writes = Writes::default();
        assert_eq!(writes.masters(&map), Ok(vec![]));
        writes.note_slot(&map, 2);
        writes.note_addr(&map, A);
        assert_eq!(writes.masters(&map), Ok(vec![A.to_string(), C.to_string()]));
        // Kept after a WAIT: the next one covers these writes too.
        assert_eq!(writes.masters(&map).map(|m| m.len()), Ok(2));
        // A slot moves between masters the client did not write to: nothing changes.
        let unrelated = Arc::new(map.with_moved(1, "127.0.0.1:7003"));
        assert_eq!(
            writes.masters(&unrelated),
            Ok(vec![A.to_string(), C.to_string()])
        );
        // A master written to loses a slot: no count, then a new trail.
        let lost = Arc::new(unrelated.with_moved(0, B));
        assert_eq!(writes.masters(&lost), Err(MAP_CHANGED));
        assert_eq!(writes.masters(&lost), Ok(vec![]));
        // A write that ran on a node the map does not list.
        writes.note_addr(&lost, "10.0.0.1:1");
        assert_eq!(writes.masters(&lost), Err(MAP_CHANGED));
    }

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
