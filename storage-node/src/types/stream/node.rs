//! One node of a stream: the entries Redis 7.0 would keep in one listpack of its radix tree.
//!
//! Redis packs entries into listpacks of at most `stream-node-max-entries` entries and
//! `stream-node-max-bytes` bytes, keyed by the id of the first entry (the "master" id). The
//! first entry's field names become the node's master fields; a later entry with the same
//! names is stored with the SAMEFIELDS flag and its values only. Deleting an entry only flags
//! it; the node is dropped when no live entry is left (XDEL) or when trimming removes it
//! whole. Approximate trimming drops whole nodes only, so replies and DUMP bytes depend on
//! this layout: the node tracks the exact byte size of the listpack Redis would hold.

use crate::persistence::listpack::{backlen_size, encoded_entry_len};
use crate::types::CompactBytes;

use super::id::StreamId;

/// The entry is deleted (a tombstone kept in its node).
pub const FLAG_DELETED: i64 = 1;
/// The entry has the node's master fields; only its values are stored.
pub const FLAG_SAMEFIELDS: i64 = 2;

/// Bytes of a listpack with no elements: header and terminator.
const LISTPACK_EMPTY_BYTES: usize = 7;

/// One entry: its id, flags and `field, value, field, value ...`.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: StreamId,
    pub deleted: bool,
    pub same_fields: bool,
    pub fields: Box<[CompactBytes]>,
}

impl Entry {
    pub fn flags(&self) -> i64 {
        let mut flags = 0;
        if self.deleted {
            flags |= FLAG_DELETED;
        }
        if self.same_fields {
            flags |= FLAG_SAMEFIELDS;
        }
        flags
    }

    /// Number of field/value pairs.
    pub fn pair_count(&self) -> usize {
        self.fields.len() / 2
    }

    /// The `lp-count` Redis stores after an entry: how many listpack elements it has.
    pub fn lp_count(&self) -> i64 {
        let pairs = self.pair_count() as i64;
        if self.same_fields {
            pairs + 3
        } else {
            2 * pairs + 4
        }
    }
}

/// A node of the stream.
#[derive(Clone, Debug)]
pub struct Node {
    pub master_id: StreamId,
    pub master_fields: Box<[CompactBytes]>,
    /// Entries not deleted.
    pub live: u64,
    /// Entries flagged deleted.
    pub deleted: u64,
    /// Every entry in id order, tombstones included.
    pub entries: Vec<Entry>,
    /// Bytes of the listpack Redis would hold for this node.
    pub lp_bytes: usize,
}

/// Listpack bytes of an integer element.
pub fn int_size(v: i64) -> usize {
    let data = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        _ if i32::try_from(v).is_ok() => 5,
        _ => 9,
    };
    data + 1
}

/// Listpack bytes of a string element (a canonical integer is stored as one).
pub fn str_size(s: &[u8]) -> usize {
    let len = encoded_entry_len(s);
    len + backlen_size(len)
}

impl Node {
    /// A node whose first entry is `id` with `fields` (pairs); the fields become the master.
    pub fn new(id: StreamId, fields: &[&[u8]]) -> Node {
        let master_fields: Box<[CompactBytes]> = fields
            .iter()
            .step_by(2)
            .map(|f| CompactBytes::new(f))
            .collect();
        let mut lp_bytes = LISTPACK_EMPTY_BYTES
            + int_size(1)
            + int_size(0)
            + int_size(master_fields.len() as i64)
            + int_size(0);
        lp_bytes += master_fields
            .iter()
            .map(|f| str_size(f.as_slice()))
            .sum::<usize>();
        let mut node = Node {
            master_id: id,
            master_fields,
            live: 0,
            deleted: 0,
            entries: Vec::new(),
            lp_bytes,
        };
        node.push_entry(id, fields, true);
        node.live = 1;
        node
    }

    /// Appends an entry to a node that already has entries (the count goes up by one).
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]]) {
        self.set_counts(self.live + 1, self.deleted);
        let same = fields.len() / 2 == self.master_fields.len()
            && fields
                .iter()
                .step_by(2)
                .zip(self.master_fields.iter())
                .all(|(f, m)| *f == m.as_slice());
        self.push_entry(id, fields, same);
    }

    fn push_entry(&mut self, id: StreamId, fields: &[&[u8]], same_fields: bool) {
        let entry = Entry {
            id,
            deleted: false,
            same_fields,
            fields: fields.iter().map(|f| CompactBytes::new(f)).collect(),
        };
        self.lp_bytes += self.entry_size(&entry);
        self.entries.push(entry);
    }

    /// Listpack bytes of one entry in this node.
    fn entry_size(&self, entry: &Entry) -> usize {
        let (ms_diff, seq_diff) = self.id_diffs(entry.id);
        let mut size = int_size(entry.flags()) + int_size(ms_diff) + int_size(seq_diff);
        if !entry.same_fields {
            size += int_size(entry.pair_count() as i64);
        }
        for (i, element) in entry.fields.iter().enumerate() {
            if i % 2 == 1 || !entry.same_fields {
                size += str_size(element.as_slice());
            }
        }
        size + int_size(entry.lp_count())
    }

    /// An entry's id as Redis stores it: differences from the master id, in wrapping
    /// unsigned arithmetic read back as signed integers.
    pub fn id_diffs(&self, id: StreamId) -> (i64, i64) {
        (
            id.ms.wrapping_sub(self.master_id.ms) as i64,
            id.seq.wrapping_sub(self.master_id.seq) as i64,
        )
    }

    /// Sets the live/deleted counters of the master entry, keeping the byte size exact.
    pub fn set_counts(&mut self, live: u64, deleted: u64) {
        self.lp_bytes = self.lp_bytes + int_size(live as i64) + int_size(deleted as i64)
            - int_size(self.live as i64)
            - int_size(self.deleted as i64);
        self.live = live;
        self.deleted = deleted;
    }

    /// Flags the entry at `index` deleted (same byte size: flags stay below 128). Does not
    /// touch the counters.
    pub fn flag_deleted(&mut self, index: usize) {
        if let Some(entry) = self.entries.get_mut(index) {
            entry.deleted = true;
        }
    }

    /// Position of the entry with `id`, tombstones included.
    pub fn find(&self, id: StreamId) -> Option<usize> {
        self.entries.binary_search_by(|e| e.id.cmp(&id)).ok()
    }

    /// The id of the last entry, tombstone or not (`lpGetEdgeStreamID`).
    pub fn last_id(&self) -> StreamId {
        self.entries.last().map_or(self.master_id, |e| e.id)
    }

    /// Rebuilds a node read from a listpack; `lp_bytes` is the listpack's size.
    pub fn from_parts(
        master_id: StreamId,
        master_fields: Box<[CompactBytes]>,
        counts: (u64, u64),
        entries: Vec<Entry>,
    ) -> Node {
        let mut node = Node {
            master_id,
            master_fields,
            live: counts.0,
            deleted: counts.1,
            entries: Vec::new(),
            lp_bytes: 0,
        };
        let mut lp_bytes = LISTPACK_EMPTY_BYTES
            + int_size(counts.0 as i64)
            + int_size(counts.1 as i64)
            + int_size(node.master_fields.len() as i64)
            + int_size(0)
            + node
                .master_fields
                .iter()
                .map(|f| str_size(f.as_slice()))
                .sum::<usize>();
        for entry in &entries {
            lp_bytes += node.entry_size(entry);
        }
        node.entries = entries;
        node.lp_bytes = lp_bytes;
        node
    }

    /// The listpack elements Redis stores for this node, integers as decimal text.
    pub fn listpack_elements(&self) -> Vec<Vec<u8>> {
        let int = |v: i64| v.to_string().into_bytes();
        let mut out = Vec::with_capacity(4 + self.master_fields.len() + self.entries.len() * 8);
        out.push(int(self.live as i64));
        out.push(int(self.deleted as i64));
        out.push(int(self.master_fields.len() as i64));
        out.extend(self.master_fields.iter().map(|f| f.as_slice().to_vec()));
        out.push(int(0));
        for entry in &self.entries {
            let (ms_diff, seq_diff) = self.id_diffs(entry.id);
            out.push(int(entry.flags()));
            out.push(int(ms_diff));
            out.push(int(seq_diff));
            if !entry.same_fields {
                out.push(int(entry.pair_count() as i64));
            }
            for (i, element) in entry.fields.iter().enumerate() {
                if i % 2 == 1 || !entry.same_fields {
                    out.push(element.as_slice().to_vec());
                }
            }
            out.push(int(entry.lp_count()));
        }
        out
    }

    /// Heap bytes, roughly, for MEMORY USAGE.
    pub fn memory_usage(&self) -> usize {
        let strings = |s: &[CompactBytes]| {
            s.iter()
                .map(|b| std::mem::size_of::<CompactBytes>() + b.heap_size())
                .sum::<usize>()
        };
        std::mem::size_of::<Node>()
            + strings(&self.master_fields)
            + self
                .entries
                .iter()
                .map(|e| std::mem::size_of::<Entry>() + strings(&e.fields))
                .sum::<usize>()
    }
}
