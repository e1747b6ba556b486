//! The stream type: entries with ids, kept in nodes laid out as Redis 7.0 lays out its
//! radix tree of listpacks (see [`node`]), plus the stream's metadata.
//!
//! Metadata, as Redis 7.0 keeps it: `length` (live entries), `last_id` (the largest id ever
//! added or set with XSETID), `first_id` (the first live entry, 0-0 when empty),
//! `max_deleted_id` (the largest id XDEL removed) and `entries_added` (every entry ever
//! added). An empty stream is still a key (unlike lists).
//!
//! Consumer groups ([`group`]) are kept as Redis 7.0 keeps them (by name: last-delivered id,
//! `entries_read`, a PEL of id → delivery time, count and owner, and consumers with their
//! seen time and own PEL), and cross DUMP and RDB with the stream; the commands that use
//! them are in `cmd/stream/`.

pub mod group;
pub mod id;
pub mod node;
mod rax;
mod walk;

use std::collections::BTreeMap;

pub use id::{IdSyntax, IdText, ParsedId, StreamId};
pub use node::{Entry, Node};

/// Node size limits (`stream-node-max-bytes`, `stream-node-max-entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamLimits {
    pub max_bytes: usize,
    pub max_entries: u64,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// The largest listpack Redis lets a node grow to (`STREAM_LISTPACK_MAX_SIZE`), also the
/// largest total of field and value bytes one XADD may carry.
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// How to trim (XADD's and XTRIM's MAXLEN / MINID options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimStrategy {
    MaxLen(u64),
    MinId(StreamId),
}

/// A trim request: strategy, `~`, and the most entries it may remove (0 = no limit).
#[derive(Clone, Copy, Debug)]
pub struct Trim {
    pub strategy: TrimStrategy,
    pub approx: bool,
    pub limit: u64,
}

/// A stream value.
#[derive(Clone, Debug, Default)]
pub struct StreamValue {
    /// Nodes by master id.
    pub nodes: BTreeMap<StreamId, Node>,
    pub length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<Vec<u8>, group::ConsumerGroup>,
}

impl StreamValue {
    pub fn new() -> StreamValue {
        StreamValue::default()
    }

    /// Appends an entry with `id` (which must exceed `last_id`), as `streamAppendItem` does:
    /// into the last node unless that node is full by bytes or entries.
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]], limits: StreamLimits) {
        let field_bytes: usize = fields.iter().map(|f| f.len()).sum();
        let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        };
        match self.nodes.values_mut().next_back() {
            Some(node)
                if node.lp_bytes() + field_bytes < max_bytes
                    && (limits.max_entries == 0
                        || node.live + node.deleted < limits.max_entries) =>
            {
                node.append(id, fields)
            }
            tail => {
                // A full node takes no more entries: give back its spare capacity, as
                // Redis shrinks the listpack it closes.
                if let Some(node) = tail {
                    node.shrink_to_fit();
                }
                self.nodes.insert(id, Node::new(id, fields));
            }
        }
        self.length += 1;
        self.entries_added = self.entries_added.wrapping_add(1);
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// The id XADD gives an entry: `requested` as given (`seq_given`) or with the next free
    /// sequence for its milliseconds, or the next id after `last_id` for `now_ms`. None
    /// when it would not exceed `last_id` (Redis's EDOM).
    pub fn next_id(&self, requested: Option<ParsedId>, now_ms: u64) -> Option<StreamId> {
        let id = match requested {
            Some(ParsedId {
                id,
                seq_given: true,
            }) => id,
            Some(ParsedId { id, .. }) if id.ms == self.last_id.ms => {
                if self.last_id.seq == u64::MAX {
                    return None;
                }
                StreamId::new(id.ms, self.last_id.seq + 1)
            }
            Some(ParsedId { id, .. }) => id,
            None if now_ms > self.last_id.ms => StreamId::new(now_ms, 0),
            None => self.last_id.next()?,
        };
        (id > self.last_id).then_some(id)
    }

    /// Deletes the live entry `id` (`streamDeleteItem`); false if there is none. A node left
    /// without live entries is dropped. Does not update `first_id` / `max_deleted_id`.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&key, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let entries = node.entries();
        let Ok(index) = entries.binary_search_by(|e| e.id.cmp(&id)) else {
            return false;
        };
        let entry = &entries[index];
        if entry.deleted {
            return false;
        }
        if node.live == 1 {
            self.nodes.remove(&key);
        } else {
            node.flag_deleted(entry);
            node.set_counts(node.live - 1, node.deleted + 1);
        }
        self.length -= 1;
        true
    }

    /// Trims as `streamTrim` does; returns how many entries were removed. Whole nodes go
    /// first; with `~` nothing else does; otherwise entries of the first node that cannot
    /// go whole are flagged deleted.
    pub fn trim(&mut self, trim: Trim) -> u64 {
        let mut removed: u64 = 0;
        while let Some((&key, node)) = self.nodes.iter_mut().next() {
            if let TrimStrategy::MaxLen(max) = trim.strategy {
                if self.length <= max {
                    break;
                }
            }
            let entries = node.live;
            if trim.limit != 0 && removed + entries > trim.limit {
                break;
            }
            let remove_node = match trim.strategy {
                TrimStrategy::MaxLen(max) => self.length - entries >= max,
                TrimStrategy::MinId(min) => node.last_id() < min,
            };
            if remove_node {
                self.nodes.remove(&key);
                self.length -= entries;
                removed += entries;
                continue;
            }
            if trim.approx {
                break;
            }
            let mut from_node = 0;
            for entry in node.entries() {
                let stop = match trim.strategy {
                    TrimStrategy::MaxLen(max) => self.length <= max,
                    TrimStrategy::MinId(min) => entry.id >= min,
                };
                if stop {
                    break;
                }
                if !entry.deleted {
                    node.flag_deleted(&entry);
                    from_node += 1;
                    self.length -= 1;
                }
            }
            node.set_counts(entries - from_node, node.deleted + from_node);
            removed += from_node;
            break;
        }
        self.first_id = if self.length == 0 {
            StreamId::MIN
        } else {
            self.edge_id(true, true)
        };
        removed
    }

    /// The first or last id (`streamGetEdgeID`), skipping tombstones or not; the largest id
    /// for the first of an empty stream, the smallest for its last.
    pub fn edge_id(&self, first: bool, skip_tombstones: bool) -> StreamId {
        let found = if first && skip_tombstones {
            self.range(StreamId::MIN, StreamId::MAX)
                .next()
                .map(|e| e.id)
        } else if first {
            self.nodes.values().next().and_then(Node::first_id)
        } else if skip_tombstones {
            self.nodes.values().rev().find_map(Node::last_live_id)
        } else {
            self.nodes.values().next_back().map(Node::last_id)
        };
        match found {
            Some(id) => id,
            None if first => StreamId::MAX,
            None => StreamId::MIN,
        }
    }

    /// Live entries with `start <= id <= end`, in id order, decoded as they are taken.
    pub fn range(&self, start: StreamId, end: StreamId) -> walk::Range<'_> {
        let from = self
            .nodes
            .range(..=start)
            .next_back()
            .map_or(StreamId::MIN, |(k, _)| *k);
        walk::Range::new(self.nodes.range(from..), start, end)
    }

    /// Live entries with `start <= id <= end`, from the largest id down.
    pub fn range_rev(&self, start: StreamId, end: StreamId) -> impl Iterator<Item = Entry> + '_ {
        self.nodes
            .range(..=end)
            .rev()
            .flat_map(|(_, node)| node.entries().into_iter().rev())
            .filter(|e| !e.deleted)
            .skip_while(move |e| e.id > end)
            .take_while(move |e| e.id >= start)
    }

    /// Whether a tombstone may lie at or after `start` (`streamRangeHasTombstones` with no
    /// end).
    fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() || self.first_id > self.max_deleted_id
        {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// How many entries were added up to `id`, when that can be known
    /// (`streamEstimateDistanceFromFirstEverEntry`).
    fn entries_added_up_to(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            // Unsigned arithmetic as in Redis: a loaded stream may claim fewer entries added
            // than it holds.
            let before_first = self.entries_added.wrapping_sub(self.length);
            if id < self.first_id {
                return Some(before_first);
            }
            if id == self.first_id {
                return Some(before_first.wrapping_add(1));
            }
        }
        None
    }

    /// A group's lag: entries added that it has not read, when that can be known
    /// (`streamReplyWithCGLag`).
    pub fn group_lag(&self, group: &group::ConsumerGroup) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != group::ENTRIES_READ_UNKNOWN
            && !self.has_tombstones_from(group.last_id)
        {
            return Some((self.entries_added as i64).wrapping_sub(group.entries_read));
        }
        self.entries_added_up_to(group.last_id)
            .map(|read| (self.entries_added as i64).wrapping_sub(read as i64))
    }

    /// Number of nodes (XINFO `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of radix-tree nodes Redis's tree over the node keys has (XINFO
    /// `radix-tree-nodes`).
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|id| id.to_be_bytes()).collect();
        rax::node_count(&keys)
    }

    /// An estimate of the bytes used, for MEMORY USAGE.
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<StreamValue>()
            + self.nodes.values().map(Node::memory_usage).sum::<usize>()
    }
}
