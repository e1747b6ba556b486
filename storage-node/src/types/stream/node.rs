//! One node of a stream: the listpack Redis 7.0 keeps in one leaf of its radix tree, byte
//! for byte.
//!
//! Redis packs entries into listpacks of at most `stream-node-max-entries` entries and
//! `stream-node-max-bytes` bytes, keyed by the id of the first entry (the "master" id):
//!
//! ```text
//! live count · deleted count · master field count · master fields... · 0
//! per entry: flags · ms diff · seq diff · [field count] · [field] value ... · element count
//! ```
//!
//! The first entry's field names become the master fields; a later entry with the same names
//! has the SAMEFIELDS flag and stores its values only. Ids are stored as differences from the
//! master id. Deleting an entry only flags it; the node is dropped when no live entry is left
//! (XDEL) or when trimming removes it whole. Approximate trimming drops whole nodes only, so
//! replies and DUMP bytes depend on this layout; keeping Redis's listpack itself makes the
//! layout, the byte limits and the memory use Redis's, and DUMP writes it as it is.

use crate::persistence::listpack::{self, Element, ListpackError};
use crate::types::CompactBytes;

use super::id::StreamId;
use super::walk::Walk;

/// The entry is deleted (a tombstone kept in its node).
pub const FLAG_DELETED: i64 = 1;
/// The entry has the node's master fields; only its values are stored.
pub const FLAG_SAMEFIELDS: i64 = 2;

/// One entry, decoded: its id, flags, `field, value, field, value ...`, and where its flags
/// are in the node's listpack.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: StreamId,
    pub deleted: bool,
    pub same_fields: bool,
    pub fields: Box<[CompactBytes]>,
    pub(super) flags_at: usize,
}

/// A node of the stream.
#[derive(Clone, Debug)]
pub struct Node {
    pub master_id: StreamId,
    /// Entries not deleted (also the listpack's first element).
    pub live: u64,
    /// Entries flagged deleted (the second element).
    pub deleted: u64,
    lp: Vec<u8>,
    master_field_count: usize,
    /// Where the first entry starts (after the master entry).
    entries_at: usize,
    /// The id of the last entry, tombstone or not: kept so that the stream's last live id
    /// (asked by every XREADGROUP `>`) needs no walk while the node has no tombstone.
    last: StreamId,
}

/// Reads the listpack element by element.
pub(super) struct Cursor<'a> {
    pub(super) lp: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn next(&mut self) -> Result<Element<'a>, ListpackError> {
        let (element, next) = listpack::read_element(self.lp, self.pos)?;
        self.pos = next;
        Ok(element)
    }

    pub(super) fn int(&mut self) -> Result<i64, ListpackError> {
        match self.next()? {
            Element::Int(v) => Ok(v),
            Element::Str(s) => slotproxy::numbers::parse_i64(s)
                .ok_or(ListpackError("stream node: integer expected")),
        }
    }

    pub(super) fn count(&mut self) -> Result<u64, ListpackError> {
        u64::try_from(self.int()?).map_err(|_| ListpackError("stream node: negative count"))
    }

    pub(super) fn done(&self) -> bool {
        listpack::at_end(self.lp, self.pos)
    }
}

impl Node {
    /// A node whose first entry is `id` with `fields` (pairs); the fields become the master.
    pub fn new(id: StreamId, fields: &[&[u8]]) -> Node {
        let pairs = fields.len() / 2;
        let mut lp = listpack::empty();
        listpack::push_int(&mut lp, 1);
        listpack::push_int(&mut lp, 0);
        listpack::push_int(&mut lp, pairs as i64);
        for field in fields.iter().step_by(2) {
            listpack::push(&mut lp, field);
        }
        listpack::push_int(&mut lp, 0);
        let entries_at = lp.len() - 1;
        let mut node = Node {
            master_id: id,
            live: 1,
            deleted: 0,
            lp,
            master_field_count: pairs,
            entries_at,
            last: id,
        };
        node.push_entry(id, fields, true);
        node
    }

    /// Bytes of the listpack.
    pub fn lp_bytes(&self) -> usize {
        self.lp.len()
    }

    /// The listpack, as DUMP and the RDB write it.
    pub fn listpack(&self) -> &[u8] {
        &self.lp
    }

    /// Where the first entry starts.
    pub(super) fn entries_at(&self) -> usize {
        self.entries_at
    }

    /// How many master fields the node has.
    pub(super) fn master_field_count(&self) -> usize {
        self.master_field_count
    }

    /// Whether the field names of `fields` (pairs) are the master fields, in order.
    fn has_master_fields(&self, fields: &[&[u8]]) -> bool {
        if fields.len() / 2 != self.master_field_count {
            return false;
        }
        let mut cursor = Cursor {
            lp: &self.lp,
            pos: listpack::FIRST,
        };
        if (0..3).try_for_each(|_| cursor.next().map(|_| ())).is_err() {
            return false;
        }
        fields.iter().step_by(2).all(|f| match cursor.next() {
            Ok(Element::Str(s)) => *f == s,
            Ok(Element::Int(v)) => *f == slotproxy::numbers::IntegerText::new(v).as_bytes(),
            Err(_) => false,
        })
    }

    /// Appends an entry to a node that already has entries (the count goes up by one).
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]]) {
        self.set_counts(self.live + 1, self.deleted);
        let same = self.has_master_fields(fields);
        self.push_entry(id, fields, same);
        self.last = id;
    }

    fn push_entry(&mut self, id: StreamId, fields: &[&[u8]], same_fields: bool) {
        let pairs = (fields.len() / 2) as i64;
        let (ms_diff, seq_diff) = self.id_diffs(id);
        let lp = &mut self.lp;
        listpack::push_int(lp, if same_fields { FLAG_SAMEFIELDS } else { 0 });
        listpack::push_int(lp, ms_diff);
        listpack::push_int(lp, seq_diff);
        if !same_fields {
            listpack::push_int(lp, pairs);
        }
        for (i, element) in fields.iter().enumerate() {
            if i % 2 == 1 || !same_fields {
                listpack::push(lp, element);
            }
        }
        listpack::push_int(
            lp,
            if same_fields {
                pairs + 3
            } else {
                2 * pairs + 4
            },
        );
    }

    /// An entry's id as Redis stores it: differences from the master id, in wrapping
    /// unsigned arithmetic read back as signed integers.
    fn id_diffs(&self, id: StreamId) -> (i64, i64) {
        (
            id.ms.wrapping_sub(self.master_id.ms) as i64,
            id.seq.wrapping_sub(self.master_id.seq) as i64,
        )
    }

    /// Sets the live/deleted counters of the master entry.
    pub fn set_counts(&mut self, live: u64, deleted: u64) {
        // Every append rewrites the counters: while both are and stay below 128 they are
        // one-byte integers (plus a one-byte back length), rewritten in place.
        let small = |v: u64| v < 0x80;
        let at = listpack::FIRST;
        if small(live)
            && small(deleted)
            && self.lp.get(at).is_some_and(|&b| b & 0x80 == 0)
            && self.lp.get(at + 2).is_some_and(|&b| b & 0x80 == 0)
        {
            self.lp[at] = live as u8;
            self.lp[at + 2] = deleted as u8;
            self.live = live;
            self.deleted = deleted;
            return;
        }
        let before = self.lp.len();
        let replaced = listpack::replace_int(&mut self.lp, listpack::FIRST, live as i64)
            .and_then(|after| listpack::replace_int(&mut self.lp, after, deleted as i64));
        debug_assert!(replaced.is_ok());
        self.entries_at = self.entries_at + self.lp.len() - before;
        self.live = live;
        self.deleted = deleted;
    }

    /// Flags `entry` deleted in place (flags stay below 128: one byte). Does not touch the
    /// counters.
    pub fn flag_deleted(&mut self, entry: &Entry) {
        let flags = if entry.same_fields {
            FLAG_SAMEFIELDS | FLAG_DELETED
        } else {
            FLAG_DELETED
        };
        if let Some(byte) = self.lp.get_mut(entry.flags_at) {
            *byte = flags as u8;
        }
    }

    /// Every entry in id order, tombstones included.
    pub fn entries(&self) -> Vec<Entry> {
        let mut entries = Vec::with_capacity((self.live + self.deleted) as usize);
        // The listpack is checked when it is built or loaded; a failure here only ends the
        // walk early.
        let _ = self.decode_entries(&mut entries);
        entries
    }

    fn decode_entries(&self, entries: &mut Vec<Entry>) -> Result<(), ListpackError> {
        let mut walk = Walk::new(self);
        while let Some(header) = walk.header()? {
            entries.push(walk.entry(&header)?);
        }
        Ok(())
    }

    /// The id of the last entry, tombstone or not (`lpGetEdgeStreamID`).
    pub fn last_id(&self) -> StreamId {
        self.last
    }

    /// The id of the first entry, tombstone or not.
    pub fn first_id(&self) -> Option<StreamId> {
        Walk::new(self).header().ok().flatten().map(|h| h.id)
    }

    /// The id of the last live entry, if any.
    pub fn last_live_id(&self) -> Option<StreamId> {
        if self.deleted == 0 {
            return (self.live > 0).then_some(self.last);
        }
        let mut walk = Walk::new(self);
        let mut found = None;
        while let Ok(Some(header)) = walk.header() {
            if !header.deleted {
                found = Some(header.id);
            }
            if walk.skip(&header).is_err() {
                break;
            }
        }
        found
    }

    /// A node read from an RDB file or a DUMP payload, checked whole: its master entry, every
    /// entry, the counters and the id order.
    pub fn from_listpack(master_id: StreamId, lp: Vec<u8>) -> Result<Node, ListpackError> {
        listpack::decode(&lp)?;
        let mut cursor = Cursor {
            lp: &lp,
            pos: listpack::FIRST,
        };
        let live = cursor.count()?;
        let deleted = cursor.count()?;
        let master_field_count = usize::try_from(cursor.count()?)
            .map_err(|_| ListpackError("stream node: bad master field count"))?;
        if master_field_count > lp.len() {
            return Err(ListpackError("stream node: bad master field count"));
        }
        for _ in 0..master_field_count {
            cursor.next()?;
        }
        if cursor.int()? != 0 {
            return Err(ListpackError("stream node: no master entry terminator"));
        }
        let entries_at = cursor.pos;
        let mut node = Node {
            master_id,
            live,
            deleted,
            lp,
            master_field_count,
            entries_at,
            last: master_id,
        };
        let mut entries = Vec::new();
        node.decode_entries(&mut entries)?;
        node.last = entries.last().map_or(master_id, |e| e.id);
        let tombstones = entries.iter().filter(|e| e.deleted).count() as u64;
        if tombstones != deleted || entries.len() as u64 - tombstones != live {
            return Err(ListpackError(
                "stream node: counts do not match its entries",
            ));
        }
        let ordered = entries.windows(2).all(|w| w[0].id < w[1].id);
        if !ordered || entries.first().is_some_and(|e| e.id < master_id) {
            return Err(ListpackError("stream node: ids out of order"));
        }
        Ok(node)
    }

    /// Gives back the listpack's spare capacity (the node takes no more entries).
    pub fn shrink_to_fit(&mut self) {
        self.lp.shrink_to_fit();
    }

    /// Bytes used, for MEMORY USAGE.
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<Node>() + self.lp.capacity()
    }
}
