//! `read_from`: where a read-only command of one slot goes.
//!
//! `master` (the default) sends it to the slot's master like any request. `prefer-replica`
//! sends it to a healthy replica of that master, on a shared connection that sent
//! `READONLY` first, and to the master when the master has none (or the replica cannot be
//! connected to). `replica` sends it to a replica only; without one the client gets an
//! error. A client keeps to one replica of a master (chosen by its lane), so its reads do
//! not go back in time between replicas that lag by different amounts.
//!
//! The setting is global (`read_from`) and per user (`users[].read_from`), both live
//! (SIGHUP). A replica's reply follows the same redirect and retry rules as any reply
//! ([`super::forward`]): a replica that no longer serves the slot answers MOVED, which
//! leads to the slot's master; a read whose replica connection broke is sent again to
//! the master (reads may be resent).

use std::sync::Arc;

use bytes::Bytes;

use super::forward::{error_reply, send_on_conn, Pending};
use super::Proxy;
use crate::backend::Lane;
use crate::config::ReadFrom;
use crate::resp::Proto;

/// A read-only `request` of `slot` for a client authenticated as `user`: the [`Pending`]
/// of its replica read, or `None` when it goes to the master as usual.
pub fn route(
    proxy: &Arc<Proxy>,
    user: Option<&str>,
    slot: u16,
    request: &Bytes,
    proto: Proto,
    lane: Lane,
) -> Option<Pending> {
    let read_from = proxy.config.load().read_from_for(user);
    if read_from == ReadFrom::Master {
        return None;
    }
    let topology = proxy.topology.load();
    let replicas = topology.replicas_for(slot);
    let Some(replica) = replicas.get(lane.conn % replicas.len().max(1)) else {
        return match read_from {
            ReadFrom::Replica => Some(Pending::Ready(error_reply(&format!(
                "ERR slotproxy: no healthy replica serves slot {slot} (read_from: replica)"
            )))),
            _ => None,
        };
    };
    match proxy
        .pool(lane)
        .get_readonly(&replica.addr, proto, lane.conn)
    {
        Ok(conn) => Some(send_on_conn(conn, Some(slot), request.clone(), proto, lane)),
        Err(e) => match read_from {
            ReadFrom::Replica => Some(Pending::Ready(error_reply(&e.to_reply()))),
            _ => None,
        },
    }
}
