//! Blocking commands (BLPOP, BRPOP, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, XREAD and
//! XREADGROUP with BLOCK) on a dedicated connection. WAIT has its own path
//! ([`super::wait`]).
//!
//! A blocked command would stall every other client on a shared connection, so it gets a
//! connection of its own from the bounded dedicated pool, without the operation timeout.
//! While it waits, the session keeps reading from its client: if the client goes away, the
//! connection is dropped, which unblocks and frees it on the node.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::client_io::ClientIo;
use super::failover;
use super::forward::{error_reply, not_a_cluster_node, MAX_REDIRECTS};
use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::resp::Proto;

/// Why a blocking command ended without a reply for the client.
pub enum Interrupted {
    ClientGone,
}

/// Runs a blocking command to completion, following MOVED/ASK.
pub async fn run(
    proxy: &Arc<Proxy>,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    io: &mut ClientIo,
    cached: &mut Option<Box<Dedicated>>,
) -> Result<Bytes, Interrupted> {
    // `None`: the slot's master, through a failover if it cannot be reached; after a
    // redirect, the node it names.
    let mut addr: Option<String> = None;
    let mut asking = false;
    for _ in 0..=MAX_REDIRECTS {
        let current = match &addr {
            Some(addr) => Some(addr.clone()),
            None => slot.and_then(|s| proxy.master_addr(s).ok()),
        };
        let mut conn = match cached.take().filter(|c| Some(&c.addr) == current.as_ref()) {
            Some(conn) => *conn,
            None => match failover::open_dedicated(proxy, slot, addr.clone(), proto).await {
                Ok(conn) => conn,
                Err(e) => return Ok(error_reply(&e.to_reply())),
            },
        };
        if asking {
            if let Err(e) = conn.call(b"*1\r\n$6\r\nASKING\r\n").await {
                return Ok(error_reply(&e.to_reply()));
            }
        }
        if let Err(e) = conn.send(&request).await {
            return Ok(error_reply(&e.to_reply()));
        }
        let reply = loop {
            tokio::select! {
                reply = conn.read_reply() => break reply,
                alive = io.read_more() => if !alive {
                    return Err(Interrupted::ClientGone);
                },
            }
        };
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => return Ok(error_reply(&e.to_reply())),
        };
        let text = String::from_utf8_lossy(&reply);
        let mut words = text.trim_end().split(' ');
        match words.next() {
            Some("-MOVED") | Some("-ASK") => {
                asking = text.starts_with("-ASK");
                let slot_moved = words.next().and_then(|s| s.parse::<u16>().ok());
                let Some(target) = words.next().map(str::to_string) else {
                    return Ok(reply);
                };
                let connect = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
                if !proxy
                    .is_cluster_node(&target, tokio::time::Instant::now() + connect)
                    .await
                {
                    return Ok(not_a_cluster_node(&target, &reply));
                }
                if let (false, Some(s)) = (asking, slot_moved) {
                    proxy.apply_moved(s, &target);
                }
                addr = Some(target);
            }
            _ => {
                *cached = Some(Box::new(conn));
                return Ok(reply);
            }
        }
    }
    Ok(error_reply("ERR slotproxy: too many redirects"))
}
