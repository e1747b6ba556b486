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
    flags_at: usize,
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
}

/// A listpack element as the bytes Redis replies with.
fn element_bytes(element: Element<'_>) -> CompactBytes {
    match element {
        Element::Int(v) => CompactBytes::new(v.to_string().as_bytes()),
        Element::Str(s) => CompactBytes::new(s),
    }
}

/// Reads the listpack element by element.
struct Cursor<'a> {
    lp: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn next(&mut self) -> Result<Element<'a>, ListpackError> {
        let (element, next) = listpack::read_element(self.lp, self.pos)?;
        self.pos = next;
        Ok(element)
    }

    fn int(&mut self) -> Result<i64, ListpackError> {
        match self.next()? {
            Element::Int(v) => Ok(v),
            Element::Str(s) => slotproxy::numbers::parse_i64(s)
                .ok_or(ListpackError("stream node: integer expected")),
        }
    }

    fn count(&mut self) -> Result<u64, ListpackError> {
        u64::try_from(self.int()?).map_err(|_| ListpackError("stream node: negative count"))
    }

    fn done(&self) -> bool {
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

    /// The master field names.
    fn master_fields(&self) -> Vec<Element<'_>> {
        let mut cursor = Cursor {
            lp: &self.lp,
            pos: listpack::FIRST,
        };
        let mut fields = Vec::with_capacity(self.master_field_count);
        let skipped = (0..3).try_for_each(|_| cursor.next().map(|_| ()));
        if skipped.is_ok() {
            for _ in 0..self.master_field_count {
                match cursor.next() {
                    Ok(field) => fields.push(field),
                    Err(_) => break,
                }
            }
        }
        fields
    }

    /// Appends an entry to a node that already has entries (the count goes up by one).
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]]) {
        self.set_counts(self.live + 1, self.deleted);
        let same = fields.len() / 2 == self.master_field_count
            && fields
                .iter()
                .step_by(2)
                .zip(self.master_fields())
                .all(|(f, m)| match m {
                    Element::Str(s) => *f == s,
                    Element::Int(v) => *f == v.to_string().as_bytes(),
                });
        self.push_entry(id, fields, same);
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
        let master = self.master_fields();
        let mut cursor = Cursor {
            lp: &self.lp,
            pos: self.entries_at,
        };
        while !cursor.done() {
            let flags_at = cursor.pos;
            let flags = cursor.int()?;
            let ms = self.master_id.ms.wrapping_add(cursor.int()? as u64);
            let seq = self.master_id.seq.wrapping_add(cursor.int()? as u64);
            let same_fields = flags & FLAG_SAMEFIELDS != 0;
            let pairs = if same_fields {
                master.len()
            } else {
                usize::try_from(cursor.count()?)
                    .map_err(|_| ListpackError("stream node: bad field count"))?
            };
            if pairs > self.lp.len() {
                return Err(ListpackError("stream node: bad field count"));
            }
            let mut fields = Vec::with_capacity(2 * pairs);
            for i in 0..pairs {
                let field = match master.get(i) {
                    Some(&name) if same_fields => name,
                    _ => cursor.next()?,
                };
                fields.push(element_bytes(field));
                fields.push(element_bytes(cursor.next()?));
            }
            let expected = if same_fields {
                pairs as i64 + 3
            } else {
                2 * pairs as i64 + 4
            };
            if cursor.int()? != expected {
                return Err(ListpackError("stream node: bad entry element count"));
            }
            entries.push(Entry {
                id: StreamId::new(ms, seq),
                deleted: flags & FLAG_DELETED != 0,
                same_fields,
                fields: fields.into_boxed_slice(),
                flags_at,
            });
        }
        Ok(())
    }

    /// The id of the last entry, tombstone or not (`lpGetEdgeStreamID`).
    pub fn last_id(&self) -> StreamId {
        self.entries().last().map_or(self.master_id, |e| e.id)
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
        let node = Node {
            master_id,
            live,
            deleted,
            lp,
            master_field_count,
            entries_at,
        };
        let mut entries = Vec::new();
        node.decode_entries(&mut entries)?;
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
