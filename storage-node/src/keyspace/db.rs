//! One database, sharded into a small hash table per hash slot.
//!
//! Sharding by slot keeps every table small, so no single resize stalls the node, and it
//! gives cluster mode its per-slot index for free (COUNTKEYSINSLOT, GETKEYSINSLOT, migration).
//! The slot tables are allocated on the first write, so the 15 databases that are usually
//! empty cost nothing.

use std::hash::BuildHasher;

use hashbrown::DefaultHashBuilder;
use slotproxy::cluster::{key_slot, SLOT_COUNT};

use super::access::{self, Arrivals};
use super::entry::Entry;
use super::lfu::Lfu;
use super::slot_table::{SlotTable, Stored};
use super::snapshot_cow::SnapshotCow;
use super::watch::{Replacement, WatchIndex};
use crate::pubsub::notify;
use crate::types::{CompactBytes, Value};

/// Something the database did on its own that keyspace notifications report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbEvent {
    /// A key was removed because it had expired (`expired`, class `x`).
    Expired,
    /// A key was created (`new`, class `n`).
    New,
}

/// One of the node's databases.
#[derive(Default)]
pub struct Db {
    /// Entries are boxed: with every slot table holding about the same number of keys, all
    /// tables cross the load threshold together and then sit half empty (at one million
    /// keys, 61 keys in 128 buckets). An empty bucket then costs 16 bytes, not a whole
    /// entry, which keeps memory per key close to Redis's (its dict does the same).
    pub(super) slots: Vec<SlotTable>,
    hasher: DefaultHashBuilder,
    len: usize,
    volatile: usize,
    /// The clock used for lazy expiry, set by the keyspace before each command.
    pub(super) now_ms: u64,
    /// Keys removed because they were found expired.
    pub expired_keys: u64,
    /// Writes since the last save, as Redis's `dirty` counter.
    pub dirty: u64,
    /// Read lookups that found / did not find their key (INFO keyspace_hits/misses).
    pub hits: u64,
    pub misses: u64,
    /// Clients watching keys of this database (WATCH).
    pub(super) watched: WatchIndex,
    /// Notification classes to record in `events` (set by the keyspace before each use).
    pub(super) log_events: u32,
    /// Expiries and key creations not yet published as keyspace notifications.
    pub(super) events: Vec<(DbEvent, CompactBytes)>,
    /// Set while the writes are propagated (`crate::propagation`): keys removed because
    /// they expired are kept in `expired_log` until the keyspace writes them as DEL.
    pub(super) log_expired: bool,
    pub(super) expired_log: Vec<CompactBytes>,
    /// Set while an LFU `maxmemory-policy` is selected: entries' access words then hold
    /// access frequencies (see `keyspace::lfu`).
    pub lfu: Option<Lfu>,
    /// The arrival generation new keys get (`keyspace::access`).
    pub arrivals: Arrivals,
    /// The running snapshot's pre-images, while it has not written this database yet
    /// (`super::snapshot_cow`).
    pub(super) cow: Option<Box<SnapshotCow>>,
    /// How expired keys are treated (set by the keyspace before each use).
    pub(super) expiry: Expiry,
    /// Keys changed, for CLIENT TRACKING's invalidations (`super::tracking`).
    pub(super) modified: super::tracking::ModifiedKeys,
}

/// How lookups treat a key past its expiry time. A replica never removes keys on its own:
/// its master's DEL arrives in the stream (Redis 7.0's `expireIfNeeded` on a replica).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expiry {
    /// A master: expired keys are removed when found (and propagated as DEL).
    #[default]
    Remove,
    /// A replica serving its clients: expired keys look missing but stay.
    Hide,
    /// A replica applying its master's stream: keys live until the master removes them.
    Ignore,
}

impl Db {
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    fn table(&self, key: &[u8]) -> Option<&SlotTable> {
        self.slots.get(key_slot(key) as usize)
    }

    fn table_mut(&mut self, slot: u16) -> &mut SlotTable {
        if self.slots.is_empty() {
            self.slots = (0..SLOT_COUNT).map(|_| SlotTable::default()).collect();
        }
        &mut self.slots[slot as usize]
    }

    /// Number of keys, expired ones not yet removed included (as DBSIZE in Redis).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of keys with an expiry time.
    pub fn volatile_len(&self) -> usize {
        self.volatile
    }

    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Whether `entry` counts as expired now (never while the master's stream applies).
    fn dead(&self, entry: &Entry) -> bool {
        self.expiry != Expiry::Ignore && entry.is_expired(self.now_ms)
    }

    /// Removes `key` if it has expired. Returns true if it was removed.
    fn expire_if_needed(&mut self, key: &[u8]) -> bool {
        let slot = key_slot(key) as usize;
        let hash = self.hash(key);
        self.expire_at(slot, hash, key)
    }

    fn expire_at(&mut self, slot: usize, hash: u64, key: &[u8]) -> bool {
        let Some(table) = self.slots.get(slot) else {
            return false;
        };
        let expired = table
            .find_index(hash, key)
            .filter(|&index| table.at(index).is_some_and(|e| self.dead(e)));
        let Some(index) = expired else {
            return false;
        };
        if self.expiry == Expiry::Hide {
            return true;
        }
        self.preserve(key);
        let Some(removed) = self.slots[slot].remove_at(index) else {
            return false;
        };
        self.count_expired(&removed, key);
        true
    }

    /// The bookkeeping for a key just removed because it expired.
    fn count_expired(&mut self, removed: &Entry, key: &[u8]) {
        self.len -= 1;
        self.volatile -= removed.has_expiry() as usize;
        self.dirty += 1;
        self.expired_keys += 1;
        self.modified.changed(key);
        if !self.watched.is_empty() {
            self.watched.touch(key, false);
        }
        if self.log_events & notify::EXPIRED != 0 {
            self.events.push((DbEvent::Expired, CompactBytes::new(key)));
        }
        if self.log_expired {
            self.expired_log.push(CompactBytes::new(key));
        }
    }

    /// The one lookup every access goes through, in one probe of the slot table: an expired
    /// key is removed, then the live entry (if any) is returned, its LRU clock refreshed
    /// when `touch`, and the read counted as a hit or miss when `count`.
    fn lookup(&mut self, key: &[u8], touch: bool, count: bool) -> Option<&mut Entry> {
        let slot = key_slot(key) as usize;
        let hash = self.hash(key);
        let now = self.now_ms;
        let found = self.slots.get(slot).and_then(|t| t.find_index(hash, key));
        let lfu = self.lfu;
        let entry = match found {
            Some(index) if self.slots[slot].at(index).is_some_and(|e| self.dead(e)) => {
                if self.expiry == Expiry::Hide {
                    if count {
                        self.misses += 1;
                    }
                    return None;
                }
                self.preserve(key);
                if let Some(removed) = self.slots[slot].remove_at(index) {
                    self.count_expired(&removed, key);
                }
                None
            }
            Some(index) => {
                let table = &mut self.slots[slot];
                if touch {
                    let word = access::touched(lfu, table.access_at(index), now);
                    table.set_access_at(index, word);
                }
                table.at_mut(index)
            }
            None => None,
        };
        if count {
            if entry.is_some() {
                self.hits += 1;
            } else {
                self.misses += 1;
            }
        }
        entry
    }

    fn log_event(&mut self, event: DbEvent, key: &[u8]) {
        let class = match event {
            DbEvent::Expired => notify::EXPIRED,
            DbEvent::New => notify::NEW,
        };
        if self.log_events & class != 0 {
            self.events.push((event, CompactBytes::new(key)));
        }
    }

    /// The entry as stored, expired or not, without side effects.
    pub(super) fn stored(&self, key: &[u8]) -> Option<&Entry> {
        let hash = self.hash(key);
        self.table(key)?.find(hash, key)
    }

    /// Whether `key` is stored but past its expiry time (Redis's `keyIsExpired`), without
    /// removing it.
    pub fn is_expired_in_place(&self, key: &[u8]) -> bool {
        self.stored(key).is_some_and(|e| self.dead(e))
    }

    /// Marks the clients watching `key` dirty after a change.
    fn touch_watched(&mut self, key: &[u8]) {
        self.modified.changed(key);
        if self.watched.is_empty() {
            return;
        }
        let exists = self.stored(key).is_some();
        self.watched.touch(key, exists);
    }

    /// After a command: watched keys it looked up for writing count as changed if the
    /// database's `dirty` counter moved meanwhile.
    pub(super) fn settle_write_lookups(&mut self) {
        self.modified.settle(self.dirty);
        for key in self.watched.take_written(self.dirty) {
            self.touch_watched(&key);
        }
    }

    /// Redis's `touchAllWatchedKeysInDb`: this database is being emptied (FLUSHDB,
    /// FLUSHALL) or its contents replaced by `replaced_with`'s (SWAPDB).
    pub(super) fn touch_all_watched(&mut self, replaced_with: Option<&Db>) {
        if self.watched.is_empty() {
            return;
        }
        for key in self.watched.keys() {
            let existed = self.stored(&key).is_some();
            let replacement = replaced_with.map(|other| Replacement {
                exists: other.stored(&key).is_some(),
                expired: other.is_expired_in_place(&key),
            });
            self.watched.touch_flushed(&key, existed, replacement);
        }
    }

    /// Looks a key up for reading (Redis's `lookupKeyRead`): an expired key is removed and
    /// reported missing, the hit or miss is counted and the key's LRU clock is refreshed.
    pub fn get(&mut self, key: &[u8]) -> Option<&Entry> {
        self.lookup(key, true, true).map(|e| &*e)
    }

    /// Looks a key up for reading, counting the hit or miss but leaving its LRU clock alone
    /// (Redis's `LOOKUP_NOTOUCH` reads: EXISTS, TYPE, TTL).
    pub fn get_no_touch(&mut self, key: &[u8]) -> Option<&Entry> {
        self.lookup(key, false, true).map(|e| &*e)
    }

    /// The hash the slot tables use for `key`. It is fixed for the life of the database's
    /// contents, so SCAN cursors can be positions in this hash order.
    pub fn key_hash(&self, key: &[u8]) -> u64 {
        self.hash(key)
    }

    /// Looks a key up without touching statistics or its LRU clock (TYPE, OBJECT, EXISTS,
    /// internal checks). Expired keys are still removed.
    pub fn peek(&mut self, key: &[u8]) -> Option<&Entry> {
        self.lookup(key, false, false).map(|e| &*e)
    }

    /// Mutable access without statistics, LRU or WATCH effects, for a change Redis makes
    /// silently (an encoding conversion).
    ///
    /// A running snapshot keeps no pre-image for such a change: the value stays the same.
    pub fn peek_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.lookup(key, false, false)
    }

    /// Looks a key up for writing (Redis's `lookupKeyWrite`): an expired key is removed and
    /// reported missing; the key's LRU clock is refreshed.
    ///
    /// A change made in place through the returned entry must add to `dirty` (as Redis's
    /// `server.dirty++`): that is how WATCH learns the key changed. A lookup that changes
    /// nothing (SET NX finding the key, a WRONGTYPE error) leaves watchers alone.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        if !self.watched.is_empty() {
            self.watched.note_write_lookup(key, self.dirty);
        }
        self.modified.write_lookup(key, self.dirty);
        self.preserve(key);
        self.lookup(key, true, false)
    }

    /// A live key with its access word (LRU clock, or LFU word under an LFU policy) as
    /// [`peek`](Self::peek) finds it: for OBJECT IDLETIME/FREQ and DEBUG OBJECT.
    pub fn peek_with_access(&mut self, key: &[u8]) -> Option<(&Entry, u32)> {
        self.peek(key)?;
        let (slot, index) = self.position(key)?;
        self.slots[slot].with_access_at(index)
    }

    /// Sets a stored key's access word from a frequency or an idle time (RESTORE's FREQ and
    /// IDLETIME, an RDB file's FREQ and IDLE hints), as Redis's `objectSetLRUOrLFU` does:
    /// the frequency counts under an LFU policy, the idle time under any other. The key is
    /// looked up only when a hint applies.
    pub fn set_access_hint(
        &mut self,
        key: &[u8],
        frequency: Option<u8>,
        idle_seconds: Option<i64>,
        now_ms: u64,
    ) {
        enum Hint {
            Frequency(u8),
            Idle(i64),
        }
        let hint = match (self.lfu, frequency, idle_seconds) {
            (Some(_), Some(frequency), _) => Hint::Frequency(frequency),
            (None, _, Some(idle)) => Hint::Idle(idle),
            _ => return,
        };
        let Some((slot, index)) = self.position(key) else {
            return;
        };
        let table = &mut self.slots[slot];
        let word = table.access_at(index);
        let word = match hint {
            Hint::Frequency(frequency) => Lfu::with_frequency(word, frequency, now_ms),
            Hint::Idle(idle) => access::with_idle(word, idle, now_ms),
        };
        table.set_access_at(index, word);
    }

    /// The slot and bucket index holding `key`, expired or not.
    fn position(&self, key: &[u8]) -> Option<(usize, usize)> {
        let slot = key_slot(key) as usize;
        let hash = self.hash(key);
        Some((slot, self.slots.get(slot)?.find_index(hash, key)?))
    }

    /// Whether a live key exists (no statistics, no LRU update).
    pub fn contains(&mut self, key: &[u8]) -> bool {
        self.peek(key).is_some()
    }

    /// Stores a value under `key`, replacing any previous one together with its expiry
    /// (as SET does). Returns the previous entry.
    pub fn insert(&mut self, key: &[u8], value: Value, expire_at_ms: u64) -> Option<Entry> {
        self.insert_entry(Entry::with_expiry(key, value, expire_at_ms))
    }

    /// Stores a whole entry, replacing any previous one. Returns the previous entry (None
    /// when there was none, or only an expired one, which is then counted as expired).
    pub fn insert_entry(&mut self, entry: Entry) -> Option<Entry> {
        self.preserve(entry.key());
        let slot = key_slot(entry.key());
        let hash = self.hash(entry.key());
        self.dirty += 1;
        // The key is needed after the entry moved into the table only when someone listens.
        let observed_key =
            (!self.watched.is_empty() || self.log_events & notify::NEW != 0 || self.modified.on)
                .then(|| entry.key().clone());
        let volatile = entry.has_expiry();
        let now = self.now_ms;
        let lfu_policy = self.lfu;
        let expiry = self.expiry;
        let (mut arrivals, len) = (self.arrivals, self.len);
        // The access word of a key arriving now, in the current arrival generation.
        let mut arrive = || access::arrival_word(lfu_policy, now, arrivals.arrive(len));
        let table = self.table_mut(slot);
        // An expired entry found under the key is replaced in place and counted as expired,
        // as if it had been removed first.
        let found = table.find_index(hash, entry.key());
        let (old, expired) = match found.and_then(|i| table.at_mut(i).map(|stored| (i, stored))) {
            Some((index, stored)) => {
                let previous = std::mem::replace(stored, entry);
                let previous_access = table.access_at(index);
                if expiry != Expiry::Ignore && previous.is_expired(now) {
                    table.set_access_at(index, arrive());
                    (None, Some(previous))
                } else {
                    // A value replacing a live one keeps its access frequency, counting
                    // this write as an access (Redis's `setKey`: a write lookup, then
                    // `dbOverwrite` under an LFU policy).
                    table.set_access_at(index, access::touched(lfu_policy, previous_access, now));
                    (Some(previous), None)
                }
            }
            None => {
                table.insert_new(hash, Box::new(entry), arrive());
                (None, None)
            }
        };
        self.arrivals = arrivals;
        if let Some(expired) = expired {
            self.count_expired(&expired, expired.key());
        }
        match &old {
            Some(old) => {
                self.volatile = self.volatile + volatile as usize - old.has_expiry() as usize
            }
            None => {
                self.len += 1;
                self.volatile += volatile as usize;
            }
        }
        if let Some(key) = observed_key {
            if old.is_none() {
                self.log_event(DbEvent::New, &key);
            }
            self.touch_watched(&key);
        }
        old
    }

    fn remove_entry(&mut self, key: &[u8]) -> Option<Entry> {
        self.preserve(key);
        let hash = self.hash(key);
        let slot = key_slot(key) as usize;
        let table = self.slots.get_mut(slot)?;
        let index = table.find_index(hash, key)?;
        let removed = *table.remove_at(index)?;
        self.len -= 1;
        self.volatile -= removed.has_expiry() as usize;
        self.dirty += 1;
        self.touch_watched(key);
        Some(removed)
    }

    /// Removes a key chosen for eviction, expired or not (Redis's `dbSyncDelete` from
    /// `performEvictions`). Returns the entry, or None if it is gone.
    pub(super) fn remove_evicted(&mut self, key: &[u8]) -> Option<Entry> {
        self.remove_entry(key)
    }

    /// Removes a live key. Returns the entry, or None if it was missing or expired.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        if self.expire_if_needed(key) {
            return None;
        }
        self.remove_entry(key)
    }

    /// Sets or clears (0) the expiry of a live key. Returns false if the key is missing.
    pub fn set_expiry(&mut self, key: &[u8], expire_at_ms: u64) -> bool {
        let Some(entry) = self.get_mut(key) else {
            return false;
        };
        let was = entry.has_expiry();
        entry.set_expire_at_ms(expire_at_ms);
        let is = entry.has_expiry();
        self.volatile = self.volatile + is as usize - was as usize;
        self.dirty += 1;
        self.touch_watched(key);
        true
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.touch_all_watched(None);
        self.modified.flushed |= self.modified.on;
        if self.len > 0 {
            self.dirty += self.len as u64;
        }
        if self.cow.is_some() {
            self.freeze_for_snapshot();
        }
        self.slots = Vec::new();
        self.len = 0;
        self.volatile = 0;
    }

    /// Bytes this database's own structures take (MEMORY STATS `overhead.hashtable.main`,
    /// which in Redis counts the dict's buckets, its entries and the value objects): the
    /// slot tables with their buckets and the boxed entries, not what keys and values own
    /// on the heap.
    pub fn table_bytes(&self) -> u64 {
        let buckets: usize = self.slots.iter().map(SlotTable::bucket_count).sum();
        (self.slots.capacity() * std::mem::size_of::<SlotTable>()
            + buckets * super::slot_table::BUCKET_BYTES
            + self.len * std::mem::size_of::<Entry>()) as u64
    }

    /// Number of keys stored in one hash slot.
    pub fn count_in_slot(&self, slot: u16) -> usize {
        self.slots.get(slot as usize).map_or(0, SlotTable::len)
    }

    /// The entries of one slot, in table order (expired ones included).
    pub fn slot_entries(&self, slot: u16) -> impl Iterator<Item = &Entry> {
        self.slots
            .get(slot as usize)
            .into_iter()
            .flat_map(SlotTable::iter)
    }

    /// All entries, slot by slot (expired ones included).
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().flat_map(SlotTable::iter)
    }

    /// All entries with their access words (and tags), slot by slot: what a save writes.
    pub fn entries_stored(&self) -> impl Iterator<Item = Stored<'_>> {
        self.slots.iter().flat_map(SlotTable::iter_stored)
    }

    /// Removes expired keys from the slots `from..` until `budget` slots were visited.
    /// Returns the slot to continue from next time.
    pub fn expire_slots(&mut self, from: usize, budget: usize) -> usize {
        if self.slots.is_empty() || self.volatile == 0 {
            return 0;
        }
        let now = self.now_ms;
        let mut slot = from % SLOT_COUNT;
        // Removed keys are kept only when watchers or notifications need them.
        let observe = !self.watched.is_empty()
            || self.log_events & notify::EXPIRED != 0
            || self.log_expired
            || self.modified.on;
        let mut removed_keys = Vec::new();
        for _ in 0..budget {
            if self.cow.is_some() {
                self.preserve_expiring(slot, now);
            }
            let table = &mut self.slots[slot];
            let before = table.len();
            let mut volatile_removed = 0;
            table.retain(|e| {
                let expired = e.is_expired(now);
                volatile_removed += expired as usize;
                if expired && observe {
                    removed_keys.push(e.key().clone());
                }
                !expired
            });
            let removed = before - table.len();
            self.len -= removed;
            self.volatile -= volatile_removed;
            self.expired_keys += removed as u64;
            self.dirty += removed as u64;
            slot = (slot + 1) % SLOT_COUNT;
        }
        for key in removed_keys {
            if self.log_expired {
                self.expired_log.push(key.clone());
            }
            self.log_event(DbEvent::Expired, &key);
            self.touch_watched(&key);
        }
        slot
    }

    /// Swaps the contents (not the counters of work done, nor the watchers) of two databases.
    pub fn swap_contents(&mut self, other: &mut Db) {
        // Watchers stay with their database index; their keys now hold other values.
        self.touch_all_watched(Some(other));
        other.touch_all_watched(Some(self));
        std::mem::swap(&mut self.slots, &mut other.slots);
        std::mem::swap(&mut self.hasher, &mut other.hasher);
        std::mem::swap(&mut self.len, &mut other.len);
        std::mem::swap(&mut self.volatile, &mut other.volatile);
        // The keys' arrival generations count from their own database's.
        std::mem::swap(&mut self.arrivals, &mut other.arrivals);
        // The snapshot's state belongs with the contents it describes.
        std::mem::swap(&mut self.cow, &mut other.cow);
    }
}
