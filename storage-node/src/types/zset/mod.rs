//! The sorted set type: an order-statistic tree ([`ScoreTree`]) that also indexes members,
//! so score lookups are O(1) and rank queries O(log n) at every size.
//!
//! Redis 7.0 reports `listpack` while a sorted set has at most `zset-max-listpack-entries`
//! members none longer than `zset-max-listpack-value` bytes, and `skiplist` after it
//! outgrows that (never going back, except when a new value is built whole: the STORE
//! commands and RESTORE). [`ZSetValue`] tracks that name; the storage is the same tree.

pub mod tree;

pub use tree::{compare, Iter, ScoreTree};

/// The `zset-max-listpack-*` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZSetLimits {
    pub max_entries: usize,
    pub max_value: usize,
}

impl Default for ZSetLimits {
    fn default() -> Self {
        ZSetLimits {
            max_entries: 128,
            max_value: 64,
        }
    }
}

/// A sorted set value.
#[derive(Clone, Debug, Default)]
pub struct ZSetValue {
    pub tree: ScoreTree,
    /// Whether Redis would hold this set as a listpack.
    listpack: bool,
}

impl ZSetValue {
    /// An empty sorted set created for its first member, as ZADD creates one: a listpack
    /// unless the settings or the member's length rule it out.
    pub fn for_first_member(member_len: usize, limits: ZSetLimits) -> ZSetValue {
        ZSetValue {
            tree: ScoreTree::new(),
            listpack: limits.max_entries != 0 && member_len <= limits.max_value,
        }
    }

    /// A sorted set built whole (STORE commands, RESTORE): a listpack if it fits.
    pub fn from_tree(mut tree: ScoreTree, limits: ZSetLimits) -> ZSetValue {
        let fits = tree.len() <= limits.max_entries
            && tree.iter().all(|(m, _)| m.len() <= limits.max_value);
        if fits {
            // A listpack keeps scores as text, where Redis writes -0 as "0".
            let negative_zeros: Vec<Vec<u8>> = tree
                .iter()
                .filter(|(_, s)| *s == 0.0 && s.is_sign_negative())
                .map(|(m, _)| m.to_vec())
                .collect();
            for member in negative_zeros {
                tree.set_score(&member, 0.0);
            }
        }
        ZSetValue {
            tree,
            listpack: fits,
        }
    }

    /// Re-chooses the encoding for the given settings, as loading a value does.
    pub fn refit(&mut self, limits: ZSetLimits) {
        let tree = std::mem::take(&mut self.tree);
        *self = ZSetValue::from_tree(tree, limits);
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    pub fn is_listpack(&self) -> bool {
        self.listpack
    }

    /// Converts to the skiplist encoding for good (Redis's SORT does this to any listpack
    /// sorted set it sorts).
    pub fn convert_to_skiplist(&mut self) {
        self.listpack = false;
    }

    pub fn encoding_name(&self) -> &'static str {
        if self.listpack {
            "listpack"
        } else {
            "skiplist"
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.tree.score(member)
    }

    /// Sets a member's score (adding it if new), converting away from listpack when Redis
    /// would. Returns the previous score.
    pub fn set_score(&mut self, member: &[u8], score: f64, limits: ZSetLimits) -> Option<f64> {
        // A listpack keeps scores as text, where Redis writes -0 as "0".
        let score = if self.listpack && score == 0.0 {
            0.0
        } else {
            score
        };
        let old = self.tree.set_score(member, score);
        if old.is_none()
            && self.listpack
            && (self.tree.len() > limits.max_entries || member.len() > limits.max_value)
        {
            self.listpack = false;
        }
        old
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        self.tree.remove(member)
    }

    /// Bytes used on the heap, for MEMORY USAGE (an estimate).
    pub fn heap_size(&self) -> usize {
        self.tree.len() * 56
    }
}
