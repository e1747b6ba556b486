//! One key with its value and expiry time.

use crate::types::{CompactBytes, Value};

/// A key in the keyspace.
#[derive(Clone, Debug)]
pub struct Entry {
    pub key: CompactBytes,
    pub value: Value,
    /// Absolute expiry time in Unix milliseconds; 0 means no expiry.
    pub expire_at_ms: u64,
}

// The LRU clock lives in the slot table's bucket to keep this at 64 bytes (see
// `super::slot_table`): one byte more and jemalloc serves it from its 80-byte class.
const _: () = assert!(std::mem::size_of::<Entry>() <= 64);

impl Entry {
    pub fn new(key: &[u8], value: Value) -> Entry {
        Entry {
            key: CompactBytes::new(key),
            value,
            expire_at_ms: 0,
        }
    }

    pub fn has_expiry(&self) -> bool {
        self.expire_at_ms != 0
    }

    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// Bytes this key costs: its boxed entry, its bucket in the slot table (tables
    /// run between 3/8 and 3/4 full: about two buckets a key), plus the heap the key and
    /// the value own. Redis's own numbers come from its allocator and cannot be reproduced.
    pub fn memory_usage(&self) -> usize {
        const BUCKETS_PER_KEY: usize = 2;
        std::mem::size_of::<Entry>()
            + BUCKETS_PER_KEY * super::slot_table::BUCKET_BYTES
            + self.key.heap_size()
            + self.value.memory_usage()
    }
}
