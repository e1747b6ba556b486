//! Serving blocked clients whose keys became ready, and ending waits.
//!
//! Called after every top-level command (a whole MULTI/EXEC or script is one), under the same
//! keyspace lock, so a woken client sees the state after the command and before anything
//! else. See `keyspace::blocking` for the registry.

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Proto, ReplyBuf};

use super::execute;
use crate::keyspace::blocking::{Blocked, TimeoutReply};
use crate::keyspace::Keyspace;
use crate::server::clients::Client;
use crate::server::Shared;

/// Re-runs the commands blocked on every ready key, oldest first, until no key is ready.
/// A key serves a waiter only if it now holds the type the waiter wants (a list pushed and
/// deleted again in one transaction serves nobody). A command that succeeds is unblocked
/// and its reply delivered; one that still finds nothing stays blocked in its place.
pub fn serve_ready_keys(shared: &Shared, keyspace: &mut Keyspace) {
    while let Some(((db, key), waiting)) = keyspace.blocking.next_ready() {
        for id in waiting {
            let Some(blocked) = keyspace.blocking.get(id) else {
                continue;
            };
            let wants = blocked.wants;
            let serves = keyspace.db(db).peek(&key).map(|entry| &entry.value);
            let serves = wants.served_by(serves);
            if !serves {
                // Stays blocked; a waiter for another type may still be served.
                continue;
            }
            let Some(blocked) = keyspace.blocking.get(id) else {
                continue;
            };
            let mut client = Client::new(blocked.handle.clone(), false);
            client.db = blocked.db;
            client.proto = blocked.proto;
            client.retrying = true;
            client.woken_by = Some(key.clone());
            let args = blocked.args.clone();
            let mut out = BytesMut::new();
            execute(shared, keyspace, &mut client, &mut out, &args);
            if client.block.is_some() {
                continue;
            }
            if let Some(blocked) = keyspace.blocking.remove(id) {
                blocked.finish(out.freeze());
            }
        }
    }
}

/// SWAPDB: a key some client waits on may exist now in either database; each is signalled
/// and served after the command if it holds what its waiters want (Redis's
/// `scanDatabaseForReadyKeys`).
pub fn signal_swapped_dbs(keyspace: &mut Keyspace, first: usize, second: usize) {
    for db in [first, second] {
        for key in keyspace.blocking.keys_waited_in(db) {
            keyspace.blocking.signal_ready(db, &key);
        }
    }
}

/// The reply a blocked command gives when its timeout expires.
pub fn timeout_reply(on_timeout: TimeoutReply, proto: Proto) -> Bytes {
    let mut buf = BytesMut::new();
    let mut out = ReplyBuf::new(&mut buf, proto);
    match on_timeout {
        TimeoutReply::NullArray => out.null_array(),
        TimeoutReply::NullBulk => out.null(),
    }
    buf.freeze()
}

/// Ends a wait from outside (CLIENT UNBLOCK): with the timeout reply, or with an error.
pub fn unblock(keyspace: &mut Keyspace, id: u64, with_error: bool) -> bool {
    let Some(blocked) = keyspace.blocking.remove(id) else {
        return false;
    };
    let reply = if with_error {
        Bytes::from_static(b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
    } else {
        timeout_reply(blocked.on_timeout, blocked.proto)
    };
    blocked.finish(reply);
    true
}

/// Removes a client's wait when it times out or disconnects; the timeout reply if it was
/// still waiting.
pub fn expire_wait(keyspace: &mut Keyspace, id: u64) -> Option<Bytes> {
    let blocked: Blocked = keyspace.blocking.remove(id)?;
    Some(timeout_reply(blocked.on_timeout, blocked.proto))
}
