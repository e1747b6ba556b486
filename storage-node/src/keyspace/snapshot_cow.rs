//! The keyspace's half of a point-in-time snapshot taken without fork (BGSAVE; the writer
//! is `persistence::snapshot`).
//!
//! A snapshot walks every database slot by slot, a few slots per hold of the keyspace lock.
//! Clients write meanwhile, so each database being written carries a [`SnapshotCow`]: the
//! first write to a key whose slot the walk has not reached yet keeps the key's *pre-image*
//! (the entry as it was, or "absent" for a key created after the start). When the walk
//! reaches the slot it writes the pre-images instead of the live entries, so the file holds
//! the keyspace as it was at the start, with expiry times as they were then:
//! - a key changed or deleted after the start is written with its old value;
//! - a key created after the start is left out;
//! - a slot already written needs nothing: later writes there cost no copy.
//!
//! A slot with many keys (they share a hash tag) is written in pieces, so that no hold of
//! the lock encodes more than about [`PIECE_KEYS`] keys: the pieces are ranges of the tag
//! each bucket keeps (32 bits of the key's hash, fixed while the key exists), cut when the
//! walk enters the slot. Inside the slot being written, a key is still pending when its
//! tag is at or above the walk's position.
//!
//! FLUSHDB/FLUSHALL during a snapshot moves the database's former slot tables into the
//! snapshot ("frozen") instead of copying anything; SWAPDB swaps the snapshot state with the
//! contents, which is why a state remembers the database index it started under.
//!
//! With no snapshot running, a write pays one `is_some` check on `Db::cow`.

use std::collections::HashMap;

use slotproxy::cluster::{key_slot, SLOT_COUNT};

use super::db::Db;
use super::entry::Entry;
use super::read_ahead::read_ahead;
use super::slot_table::{tag_of, SlotTable};
use super::Keyspace;

/// A slot with more keys than this is written in pieces of about this many keys.
pub const PIECE_KEYS: usize = 4096;

/// Past the last tag: a piece ending here ends the slot.
const TAG_END: u64 = 1 << 32;

/// A database's snapshot in progress.
pub struct SnapshotCow {
    /// The database index the contents had when the snapshot started.
    origin: usize,
    /// Slots below this one are already written.
    next_slot: usize,
    /// In `next_slot`, the keys whose tag is below this are already written.
    tag_floor: u64,
    /// Where the remaining pieces of a big `next_slot` end, last first.
    piece_ends: Vec<u64>,
    /// Pre-images by slot: `Some(entry)` as it was at the start, `None` for a key that did
    /// not exist then.
    preimages: HashMap<u16, HashMap<Vec<u8>, Option<Entry>>>,
    /// The slot tables a flush replaced; they hold the rest of the snapshot.
    frozen: Option<Vec<SlotTable>>,
    /// Bytes the pre-images hold (`rdb_last_cow_size`).
    bytes: usize,
}

/// A database as the snapshot found it at the start.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotDb {
    pub index: usize,
    pub keys: usize,
    pub volatile: usize,
}

/// What one call of [`Keyspace::snapshot_chunk`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkProgress {
    /// Some slots were written; more remain.
    More,
    /// The database is completely written.
    Done,
    /// A script has the keyspace lent out: try again later.
    Busy,
}

impl SnapshotCow {
    /// Whether some key of `slot` may still be unwritten.
    fn slot_pending(&self, slot: u16) -> bool {
        self.frozen.is_none() && slot as usize >= self.next_slot
    }

    /// Whether the key of `slot` with hash `hash` is still unwritten.
    fn pending(&self, slot: u16, hash: impl FnOnce() -> u64) -> bool {
        self.slot_pending(slot)
            && (slot as usize > self.next_slot || u64::from(tag_of(hash())) >= self.tag_floor)
    }

    fn recorded(&self, slot: u16, key: &[u8]) -> bool {
        self.preimages
            .get(&slot)
            .is_some_and(|keys| keys.contains_key(key))
    }
}

impl Db {
    /// Before any change to `key`: keeps its pre-image if a snapshot has yet to write its
    /// slot. One branch when no snapshot runs.
    #[inline]
    pub(super) fn preserve(&mut self, key: &[u8]) {
        if self.cow.is_some() {
            self.preserve_slow(key);
        }
    }

    #[cold]
    fn preserve_slow(&mut self, key: &[u8]) {
        let slot = key_slot(key);
        match self.cow.as_deref() {
            Some(cow) if cow.pending(slot, || self.key_hash(key)) && !cow.recorded(slot, key) => {}
            _ => return,
        }
        let before = self.stored(key).cloned();
        if let Some(cow) = self.cow.as_deref_mut() {
            cow.bytes += key.len() + before.as_ref().map_or(0, Entry::memory_usage);
            cow.preimages
                .entry(slot)
                .or_default()
                .insert(key.to_vec(), before);
        }
    }

    /// Before the active expiry cycle removes the expired keys of `slot`.
    pub(super) fn preserve_expiring(&mut self, slot: usize, now_ms: u64) {
        if !self
            .cow
            .as_deref()
            .is_some_and(|cow| cow.slot_pending(slot as u16))
        {
            return;
        }
        let expiring: Vec<Vec<u8>> = self.slots[slot]
            .iter()
            .filter(|e| e.is_expired(now_ms))
            .map(|e| e.key().as_slice().to_vec())
            .collect();
        for key in expiring {
            self.preserve(&key);
        }
    }

    /// A flush during a snapshot: the snapshot keeps the old tables (no copy).
    pub(super) fn freeze_for_snapshot(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        match self.cow.as_deref_mut() {
            Some(cow) if cow.frozen.is_none() => cow.frozen = Some(slots),
            _ => drop(slots),
        }
    }

    /// The table a snapshot reads `slot` from: the frozen one after a flush.
    fn snapshot_table(&self, slot: u16) -> Option<&SlotTable> {
        match &self.cow.as_deref()?.frozen {
            Some(frozen) => frozen.get(slot as usize),
            None => self.slots.get(slot as usize),
        }
    }

    /// Calls `emit` with each entry of `slot` whose tag is in `tags`, as the snapshot sees
    /// it, and its access word: a pre-image gets the word its key has now (a save writes it
    /// as a hint only), a key deleted since the start none.
    fn snapshot_piece(
        &self,
        slot: u16,
        tags: std::ops::Range<u64>,
        emit: &mut impl FnMut(&Entry, Option<u32>),
    ) {
        let Some(cow) = self.cow.as_deref() else {
            return;
        };
        let table = self.snapshot_table(slot);
        let preimages = cow.preimages.get(&slot);
        for stored in read_ahead(|| table.into_iter().flat_map(SlotTable::iter_stored)) {
            if !tags.contains(&u64::from(stored.tag)) {
                continue;
            }
            match preimages.and_then(|p| p.get(stored.entry.key().as_slice())) {
                Some(Some(before)) => emit(before, Some(stored.access)),
                Some(None) => {}
                None => emit(stored.entry, Some(stored.access)),
            }
        }
        // Keys deleted since the start, in the table no more.
        for (key, before) in preimages.into_iter().flatten() {
            let Some(before) = before else { continue };
            let hash = self.key_hash(key);
            if tags.contains(&u64::from(tag_of(hash)))
                && table.and_then(|t| t.find(hash, key)).is_none()
            {
                emit(before, None);
            }
        }
    }

    /// Cuts `slot` into pieces of about [`PIECE_KEYS`] keys if it is bigger than one.
    fn plan_pieces(&self, slot: u16) -> Vec<u64> {
        let table_len = self.snapshot_table(slot).map_or(0, SlotTable::len);
        let Some(cow) = self.cow.as_deref() else {
            return Vec::new();
        };
        let preimages = cow.preimages.get(&slot);
        if table_len + preimages.map_or(0, HashMap::len) <= PIECE_KEYS {
            return vec![TAG_END];
        }
        let mut tags: Vec<u32> = self
            .snapshot_table(slot)
            .into_iter()
            .flat_map(SlotTable::iter_stored)
            .map(|stored| stored.tag)
            .chain(
                preimages
                    .into_iter()
                    .flat_map(|p| p.keys())
                    .map(|key| tag_of(self.key_hash(key))),
            )
            .collect();
        tags.sort_unstable();
        // Equal tags fall in one piece: a piece ends just past a tag, at a change of tag.
        let mut ends: Vec<u64> = tags
            .chunks(PIECE_KEYS)
            .skip(1)
            .map(|chunk| u64::from(chunk[0]))
            .collect();
        ends.dedup();
        ends.push(TAG_END);
        ends.reverse();
        ends
    }
}

impl Keyspace {
    /// Starts a snapshot of every non-empty database. Returns them as they are now.
    pub fn begin_snapshot(&mut self) -> Vec<SnapshotDb> {
        let mut found = Vec::new();
        for (index, db) in self.dbs.iter_mut().enumerate() {
            db.cow = None;
            if db.is_empty() {
                continue;
            }
            db.cow = Some(Box::new(SnapshotCow {
                origin: index,
                next_slot: 0,
                tag_floor: 0,
                piece_ends: Vec::new(),
                preimages: HashMap::new(),
                frozen: None,
                bytes: 0,
            }));
            found.push(SnapshotDb {
                index,
                keys: db.len(),
                volatile: db.volatile_len(),
            });
        }
        found
    }

    /// Passes to `emit` the snapshot's entries of the database that was `origin` at the
    /// start, slot after slot (piece after piece in a big slot), until `stop` (asked after
    /// each) says so: at least one slot or piece per call.
    pub fn snapshot_chunk(
        &mut self,
        origin: usize,
        mut stop: impl FnMut() -> bool,
        mut emit: impl FnMut(&Entry, Option<u32>),
    ) -> ChunkProgress {
        if self.dbs.is_empty() {
            return ChunkProgress::Busy;
        }
        let Some(db) = self
            .dbs
            .iter_mut()
            .find(|db| db.cow.as_deref().is_some_and(|c| c.origin == origin))
        else {
            return ChunkProgress::Done;
        };
        loop {
            let Some(slot) = db.cow.as_deref().map(|c| c.next_slot) else {
                return ChunkProgress::Done;
            };
            if slot >= SLOT_COUNT {
                db.cow = None;
                return ChunkProgress::Done;
            }
            let slot_id = slot as u16;
            if db.cow.as_deref().is_some_and(|c| c.piece_ends.is_empty()) {
                let ends = db.plan_pieces(slot_id);
                if let Some(cow) = db.cow.as_deref_mut() {
                    cow.piece_ends = ends;
                }
            }
            let (floor, end) = match db.cow.as_deref() {
                Some(cow) => (
                    cow.tag_floor,
                    cow.piece_ends.last().copied().unwrap_or(TAG_END),
                ),
                None => return ChunkProgress::Done,
            };
            db.snapshot_piece(slot_id, floor..end, &mut emit);
            let written_preimages: Vec<(Vec<u8>, usize)> = db
                .cow
                .as_deref()
                .and_then(|cow| cow.preimages.get(&slot_id))
                .into_iter()
                .flatten()
                .filter(|(key, _)| end == TAG_END || u64::from(tag_of(db.key_hash(key))) < end)
                .map(|(key, e)| {
                    (
                        key.clone(),
                        key.len() + e.as_ref().map_or(0, Entry::memory_usage),
                    )
                })
                .collect();
            let Some(cow) = db.cow.as_deref_mut() else {
                return ChunkProgress::Done;
            };
            if let Some(keys) = cow.preimages.get_mut(&slot_id) {
                for (key, bytes) in written_preimages {
                    keys.remove(&key);
                    cow.bytes = cow.bytes.saturating_sub(bytes);
                }
            }
            cow.piece_ends.pop();
            if end == TAG_END {
                cow.next_slot = slot + 1;
                cow.tag_floor = 0;
                cow.piece_ends.clear();
                cow.preimages.remove(&slot_id);
                if let Some(table) = cow.frozen.as_mut().and_then(|f| f.get_mut(slot)) {
                    *table = SlotTable::default();
                }
            } else {
                cow.tag_floor = end;
            }
            if stop() {
                return ChunkProgress::More;
            }
        }
    }

    /// Bytes of pre-images the running snapshot holds.
    pub fn snapshot_cow_bytes(&self) -> usize {
        self.dbs
            .iter()
            .filter_map(|db| db.cow.as_deref())
            .map(|cow| cow.bytes)
            .sum()
    }

    /// Drops whatever a snapshot still holds (it ended, or failed).
    pub fn end_snapshot(&mut self) {
        self.dbs.iter_mut().for_each(|db| db.cow = None);
    }
}
