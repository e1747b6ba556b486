//! One key with its value and expiry time.

use crate::types::{CompactBytes, Value};

/// A key in the keyspace.
#[derive(Clone, Debug)]
pub struct Entry {
    pub key: CompactBytes,
    pub value: Value,
    /// Absolute expiry time in Unix milliseconds; 0 means no expiry.
    pub expire_at_ms: u64,
    /// Redis's LRU clock of the last access: Unix seconds, wrapping (OBJECT IDLETIME).
    pub lru: u32,
}

impl Entry {
    pub fn new(key: &[u8], value: Value) -> Entry {
        Entry {
            key: CompactBytes::new(key),
            value,
            expire_at_ms: 0,
            lru: 0,
        }
    }

    pub fn has_expiry(&self) -> bool {
        self.expire_at_ms != 0
    }

    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// Bytes this key costs: its bucket in the slot table (a control byte per bucket, at
    /// most 7/8 of the buckets filled), plus the heap the key and the value own. Redis's
    /// own numbers come from its allocator and cannot be reproduced.
    pub fn memory_usage(&self) -> usize {
        let bucket = std::mem::size_of::<Entry>() + 1;
        bucket * 8 / 7 + self.key.heap_size() + self.value.memory_usage()
    }
}
