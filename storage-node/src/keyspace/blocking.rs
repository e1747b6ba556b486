//! Clients blocked on keys (BLPOP, BZPOPMIN, BLMOVE, XREAD BLOCK, ...).
//!
//! A blocking command that finds nothing registers here instead of replying. A write that
//! may satisfy it (a push, an add) marks the key ready; after the writing command has fully
//! completed (a whole MULTI/EXEC or script counts as one), the server re-runs the blocked
//! commands waiting on each ready key, oldest first, and sends each one's reply to its
//! connection. A command that still finds nothing stays blocked in its place. This is
//! Redis's first-come first-served order, and it never lets a blocked client observe the
//! middle of a transaction.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use slotproxy::resp::Proto;
use tokio::sync::oneshot;

use crate::server::clients::ClientHandle;
use crate::types::Value;

/// The type of value a blocked command can take from a ready key. A key signalled ready
/// serves a waiter only if, once the signalling command (or transaction, or script) is
/// over, it still holds this type: a list pushed then deleted, or replaced by a string,
/// inside one MULTI wakes nobody (Redis checks the same in `handleClientsBlockedOnKeys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wants {
    /// BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH.
    List,
    /// BZPOPMIN, BZPOPMAX, BZMPOP.
    ZSet,
    /// XREAD BLOCK.
    Stream,
    /// XREADGROUP BLOCK: also woken when the stream goes (deleted, replaced) or its group
    /// is destroyed, to answer Redis's error.
    StreamGroup,
}

impl Wants {
    /// Whether the key's value (None: no key) can serve a command waiting for this type.
    pub fn served_by(self, value: Option<&Value>) -> bool {
        matches!(
            (self, value),
            (Wants::List, Some(Value::List(_)))
                | (Wants::ZSet, Some(Value::ZSet(_)))
                | (Wants::Stream, Some(Value::Stream(_)))
                | (Wants::StreamGroup, _)
        )
    }
}

/// What a blocked command answers when its timeout expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutReply {
    /// `*-1` (RESP2) / `_` (RESP3): BLPOP, BRPOP, BZPOPMIN, BLMPOP, XREAD ...
    NullArray,
    /// `$-1` (RESP2) / `_` (RESP3): BLMOVE, BRPOPLPUSH.
    NullBulk,
}

/// What a command asks for when it must wait (set through `Ctx::block_on`).
#[derive(Clone, Debug)]
pub struct BlockRequest {
    pub keys: Vec<Bytes>,
    pub wants: Wants,
    /// None: wait forever (a timeout argument of 0).
    pub timeout: Option<Duration>,
    pub on_timeout: TimeoutReply,
    /// The command to run again instead of the one sent (see `Ctx::rerun_blocked_as`).
    pub rerun_as: Option<Vec<Bytes>>,
}

/// A registered blocked client.
pub struct Blocked {
    pub handle: Arc<ClientHandle>,
    pub db: usize,
    pub proto: Proto,
    /// The command to run again when a key is ready.
    pub args: Vec<Bytes>,
    pub keys: Vec<Bytes>,
    pub wants: Wants,
    pub on_timeout: TimeoutReply,
    reply: oneshot::Sender<Bytes>,
}

impl Blocked {
    /// Delivers the reply that ends the wait.
    pub fn finish(self, reply: Bytes) {
        let _ = self.reply.send(reply);
    }
}

/// All blocked clients of the node.
#[derive(Default)]
pub struct BlockingRegistry {
    waiters: HashMap<(usize, Bytes), VecDeque<u64>>,
    blocked: HashMap<u64, Blocked>,
    ready: VecDeque<(usize, Bytes)>,
    ready_set: HashSet<(usize, Bytes)>,
    /// How many blocked clients are group readers (see [`Self::group_reader_keys`]).
    group_readers: usize,
}

impl BlockingRegistry {
    /// Number of blocked clients (INFO `blocked_clients`).
    pub fn count(&self) -> usize {
        self.blocked.len()
    }

    pub fn is_blocked(&self, client_id: u64) -> bool {
        self.blocked.contains_key(&client_id)
    }

    /// Registers a blocked command; the receiver gets its reply when it is served.
    pub fn register(
        &mut self,
        handle: Arc<ClientHandle>,
        db: usize,
        proto: Proto,
        args: Vec<Bytes>,
        request: BlockRequest,
    ) -> oneshot::Receiver<Bytes> {
        let (reply, rx) = oneshot::channel();
        let id = handle.id;
        let args = request.rerun_as.unwrap_or(args);
        if request.wants == Wants::StreamGroup && !self.blocked.contains_key(&id) {
            self.group_readers += 1;
        }
        for key in &request.keys {
            let queue = self.waiters.entry((db, key.clone())).or_default();
            if !queue.contains(&id) {
                queue.push_back(id);
            }
        }
        self.blocked.insert(
            id,
            Blocked {
                handle,
                db,
                proto,
                args,
                keys: request.keys,
                wants: request.wants,
                on_timeout: request.on_timeout,
                reply,
            },
        );
        rx
    }

    /// Notes that `key` may now satisfy a blocked command. Cheap when nobody waits.
    pub fn signal_ready(&mut self, db: usize, key: &[u8]) {
        if self.waiters.is_empty() {
            return;
        }
        let entry = (db, Bytes::copy_from_slice(key));
        if self.waiters.contains_key(&entry) && self.ready_set.insert(entry.clone()) {
            self.ready.push_back(entry);
        }
    }

    /// The next key marked ready, with the clients waiting on it, oldest first.
    pub fn next_ready(&mut self) -> Option<((usize, Bytes), Vec<u64>)> {
        let entry = self.ready.pop_front()?;
        self.ready_set.remove(&entry);
        let ids = self
            .waiters
            .get(&entry)
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default();
        Some((entry, ids))
    }

    /// Every blocked client's id.
    pub fn ids(&self) -> Vec<u64> {
        self.blocked.keys().copied().collect()
    }

    /// A blocked client, to check what it waits for and run its command again.
    pub fn get(&self, id: u64) -> Option<&Blocked> {
        self.blocked.get(&id)
    }

    /// Removes a blocked client (served, timed out, unblocked or disconnected).
    pub fn remove(&mut self, id: u64) -> Option<Blocked> {
        let blocked = self.blocked.remove(&id)?;
        if blocked.wants == Wants::StreamGroup {
            self.group_readers -= 1;
        }
        for key in &blocked.keys {
            let entry = (blocked.db, key.clone());
            if let Some(queue) = self.waiters.get_mut(&entry) {
                queue.retain(|&w| w != id);
                if queue.is_empty() {
                    self.waiters.remove(&entry);
                }
            }
        }
        Some(blocked)
    }

    /// The keys group readers wait on, with their databases; empty (and cheap) when no
    /// group reader waits. A key among them that no longer holds a stream is signalled
    /// after every command, so its readers get Redis's error.
    pub fn group_reader_keys(&self) -> Vec<(usize, Bytes)> {
        if self.group_readers == 0 {
            return Vec::new();
        }
        self.blocked
            .values()
            .filter(|b| b.wants == Wants::StreamGroup)
            .flat_map(|b| b.keys.iter().map(|key| (b.db, key.clone())))
            .collect()
    }

    /// The keys of database `db` some client waits on (SWAPDB signals those that exist).
    pub fn keys_waited_in(&self, db: usize) -> Vec<Bytes> {
        self.waiters
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, key)| key.clone())
            .collect()
    }

    /// Whether any client waits on `key`.
    pub fn waiting_on(&self, db: usize, key: &[u8]) -> bool {
        self.waiters
            .contains_key(&(db, Bytes::copy_from_slice(key)))
    }
}
