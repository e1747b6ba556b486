//! WATCH: which clients watch which keys of a database, and marking them dirty when a
//! watched key changes (Redis's `touchWatchedKey` / `touchAllWatchedKeysInDb`).
//!
//! Each database keeps a [`WatchIndex`]. Every write path of the database (insert, remove,
//! expiry removal, set_expiry, clear) touches the key here, which costs one `is_empty` check
//! when nobody watches anything. A write lookup (`get_mut`) cannot tell whether the caller
//! will change the value, so it is only noted; after the command, the noted keys are touched
//! if the database's `dirty` counter moved since (an in-place change always adds to `dirty`),
//! so SET NX on an existing key, a failed INCR or a WRONGTYPE error leave watchers alone, as
//! in Redis.
//!
//! A key that had already expired (but was not yet removed) when it was watched is flagged:
//! removing it changes nothing logically, so that does not make the watcher dirty (Redis 7.0).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;

use super::Keyspace;
use crate::server::clients::ClientHandle;

struct Watcher {
    handle: Arc<ClientHandle>,
    /// The key existed but had expired when WATCH ran.
    expired_at_watch: bool,
}

impl Watcher {
    fn mark_dirty(&self) {
        self.handle.watch_dirty.store(true, Relaxed);
    }
}

/// What a flushed or swapped-out database's key is replaced with (SWAPDB).
#[derive(Clone, Copy)]
pub(super) struct Replacement {
    pub exists: bool,
    pub expired: bool,
}

/// The watched keys of one database.
#[derive(Default)]
pub struct WatchIndex {
    keys: HashMap<Bytes, Vec<Watcher>>,
    /// Watched keys looked up for writing during the current command.
    pending: Vec<Bytes>,
    /// The database's `dirty` counter when the first of `pending` was looked up.
    pending_since_dirty: u64,
}

impl WatchIndex {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub(super) fn add(&mut self, key: Bytes, handle: &Arc<ClientHandle>, expired_at_watch: bool) {
        let watchers = self.keys.entry(key).or_default();
        if !watchers.iter().any(|w| w.handle.id == handle.id) {
            watchers.push(Watcher {
                handle: handle.clone(),
                expired_at_watch,
            });
        }
    }

    pub(super) fn remove(&mut self, key: &[u8], client_id: u64) {
        if let Some(watchers) = self.keys.get_mut(key) {
            watchers.retain(|w| w.handle.id != client_id);
            if watchers.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    /// Whether `client_id` watched `key` when it had already expired.
    pub(super) fn expired_at_watch(&self, key: &[u8], client_id: u64) -> bool {
        self.keys
            .get(key)
            .and_then(|ws| ws.iter().find(|w| w.handle.id == client_id))
            .is_some_and(|w| w.expired_at_watch)
    }

    /// A watched key changed; `exists` tells whether it is still stored.
    pub(super) fn touch(&mut self, key: &[u8], exists: bool) {
        let Some(watchers) = self.keys.get_mut(key) else {
            return;
        };
        for watcher in watchers {
            if watcher.expired_at_watch && !exists {
                // An expired key was removed: logically nothing changed.
                watcher.expired_at_watch = false;
                continue;
            }
            watcher.mark_dirty();
        }
    }

    pub(super) fn note_write_lookup(&mut self, key: &[u8], dirty: u64) {
        if let Some((key, _)) = self.keys.get_key_value(key) {
            if self.pending.is_empty() {
                self.pending_since_dirty = dirty;
            }
            self.pending.push(key.clone());
        }
    }

    /// The keys looked up for writing that must be touched now that the command is over.
    pub(super) fn take_written(&mut self, dirty: u64) -> Vec<Bytes> {
        let pending = std::mem::take(&mut self.pending);
        if dirty > self.pending_since_dirty {
            pending
        } else {
            Vec::new()
        }
    }

    pub(super) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub(super) fn keys(&self) -> Vec<Bytes> {
        self.keys.keys().cloned().collect()
    }

    /// The database was flushed (`replacement` None) or swapped with another one
    /// (`replacement` is what the other database holds under the key).
    pub(super) fn touch_flushed(
        &mut self,
        key: &[u8],
        existed: bool,
        replacement: Option<Replacement>,
    ) {
        let replaced_exists = replacement.is_some_and(|r| r.exists);
        let replaced_expired = replacement.is_some_and(|r| r.exists && r.expired);
        if !(existed || replaced_exists) {
            return;
        }
        let Some(watchers) = self.keys.get_mut(key) else {
            return;
        };
        for watcher in watchers {
            if watcher.expired_at_watch {
                if !replaced_exists {
                    watcher.expired_at_watch = false;
                    continue;
                }
                if replaced_expired {
                    continue;
                }
            } else if !existed && replaced_expired {
                watcher.expired_at_watch = true;
                continue;
            }
            watcher.mark_dirty();
        }
    }
}

impl Keyspace {
    /// WATCH `key` in database `db` for a client.
    pub fn watch(&mut self, db: usize, key: Bytes, handle: &Arc<ClientHandle>) {
        let db = self.db(db);
        let expired = db.is_expired_in_place(&key);
        db.watched.add(key, handle, expired);
        self.watch_count += 1;
    }

    /// Stops watching `key` in `db` for a client.
    pub fn unwatch(&mut self, db: usize, key: &[u8], client_id: u64) {
        if let Some(db) = self.dbs.get_mut(db) {
            db.watched.remove(key, client_id);
            self.watch_count = self.watch_count.saturating_sub(1);
        }
    }

    /// Whether a watched key expired since WATCH (EXEC refuses to run then).
    pub fn watched_key_expired(&mut self, db: usize, key: &[u8], client_id: u64) -> bool {
        let db = self.db(db);
        !db.watched.expired_at_watch(key, client_id) && db.is_expired_in_place(key)
    }

    /// Touches the watched keys the finished command changed in place.
    pub(super) fn settle_write_lookups(&mut self) {
        if self.watch_count == 0 && !self.tracking.active() {
            return;
        }
        for db in &mut self.dbs {
            if db.watched.has_pending() || db.modified.has_pending() {
                db.settle_write_lookups();
            }
        }
    }
}
