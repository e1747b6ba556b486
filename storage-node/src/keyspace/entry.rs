//! One key with its value and expiry time.

use crate::types::{CompactBytes, Value};

/// A key in the keyspace.
///
/// # Size
/// An entry is 48 bytes, jemalloc's size class below 64: the key (24, up to 22 bytes
/// inline) and the value (24, see `types::StringValue`). Under `maxmemory` the 16 bytes a
/// key saved against the former 64-byte entry are keys the node keeps: about 1.5% more
/// keys of 1 KB, 8% more of 100 bytes.
///
/// The expiry time has no room of its own: a key with one keeps it in a box beside its
/// bytes ([`EntryKey::Timed`], 32 bytes). That is what Redis's separate `expires` dict
/// does too (a 32-byte `dictEntry` a volatile key): keys without a TTL pay nothing for
/// TTLs, and a key with one still costs less than in Redis.
#[derive(Clone, Debug)]
pub struct Entry {
    key: EntryKey,
    pub value: Value,
}

/// A key's bytes, with its expiry time when it has one.
#[derive(Clone, Debug)]
enum EntryKey {
    Persistent(CompactBytes),
    Timed(Box<TimedKey>),
}

#[derive(Clone, Debug)]
struct TimedKey {
    key: CompactBytes,
    /// Absolute expiry time in Unix milliseconds; never 0.
    expire_at_ms: u64,
}

// One byte more and jemalloc serves entries from its 64-byte class.
const _: () = assert!(std::mem::size_of::<Entry>() <= 48);

impl EntryKey {
    fn new(key: CompactBytes, expire_at_ms: u64) -> EntryKey {
        match expire_at_ms {
            0 => EntryKey::Persistent(key),
            at => EntryKey::Timed(Box::new(TimedKey {
                key,
                expire_at_ms: at,
            })),
        }
    }
}

impl Entry {
    pub fn new(key: &[u8], value: Value) -> Entry {
        Entry::with_expiry(key, value, 0)
    }

    /// An entry expiring at `expire_at_ms` (Unix milliseconds; 0 for none).
    pub fn with_expiry(key: &[u8], value: Value, expire_at_ms: u64) -> Entry {
        Entry {
            key: EntryKey::new(CompactBytes::new(key), expire_at_ms),
            value,
        }
    }

    pub fn key(&self) -> &CompactBytes {
        match &self.key {
            EntryKey::Persistent(key) => key,
            EntryKey::Timed(timed) => &timed.key,
        }
    }

    /// Gives the entry another key (RENAME), keeping its value and expiry.
    pub fn rename(&mut self, key: &[u8]) {
        match &mut self.key {
            EntryKey::Persistent(old) => *old = CompactBytes::new(key),
            EntryKey::Timed(timed) => timed.key = CompactBytes::new(key),
        }
    }

    /// Absolute expiry time in Unix milliseconds; 0 means no expiry.
    pub fn expire_at_ms(&self) -> u64 {
        match &self.key {
            EntryKey::Persistent(_) => 0,
            EntryKey::Timed(timed) => timed.expire_at_ms,
        }
    }

    /// Sets the expiry time (Unix milliseconds; 0 removes it).
    pub fn set_expire_at_ms(&mut self, expire_at_ms: u64) {
        if let (EntryKey::Timed(timed), 1..) = (&mut self.key, expire_at_ms) {
            timed.expire_at_ms = expire_at_ms;
            return;
        }
        let placeholder = EntryKey::Persistent(CompactBytes::new(b""));
        let key = match std::mem::replace(&mut self.key, placeholder) {
            EntryKey::Persistent(key) => key,
            EntryKey::Timed(timed) => timed.key,
        };
        self.key = EntryKey::new(key, expire_at_ms);
    }

    pub fn has_expiry(&self) -> bool {
        matches!(self.key, EntryKey::Timed(_))
    }

    pub fn is_expired(&self, now_ms: u64) -> bool {
        let at = self.expire_at_ms();
        at != 0 && at <= now_ms
    }

    /// Bytes this key costs: its boxed entry, its bucket in the slot table (tables
    /// run between 3/8 and 3/4 full: about two buckets a key), plus the heap the key and
    /// the value own. Redis's own numbers come from its allocator and cannot be reproduced.
    pub fn memory_usage(&self) -> usize {
        const BUCKETS_PER_KEY: usize = 2;
        let timed = match &self.key {
            EntryKey::Persistent(_) => 0,
            EntryKey::Timed(_) => std::mem::size_of::<TimedKey>(),
        };
        std::mem::size_of::<Entry>()
            + BUCKETS_PER_KEY * super::slot_table::BUCKET_BYTES
            + timed
            + self.key().heap_size()
            + self.value.memory_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StringValue;

    #[test]
    fn expiry_comes_and_goes_with_the_key_intact() {
        let long_key = [b'k'; 40];
        for key in [&b"short"[..], &long_key[..]] {
            let mut entry = Entry::new(key, Value::Str(StringValue::new(b"v")));
            assert_eq!((entry.expire_at_ms(), entry.has_expiry()), (0, false));
            entry.set_expire_at_ms(1_000);
            assert_eq!((entry.expire_at_ms(), entry.has_expiry()), (1_000, true));
            assert!(entry.is_expired(1_000) && !entry.is_expired(999));
            entry.set_expire_at_ms(2_000);
            assert_eq!(entry.expire_at_ms(), 2_000);
            entry.set_expire_at_ms(0);
            assert_eq!((entry.expire_at_ms(), entry.has_expiry()), (0, false));
            assert!(!entry.is_expired(u64::MAX));
            assert_eq!(entry.key().as_slice(), key);
        }
        let timed = Entry::with_expiry(b"k", Value::Str(StringValue::new(b"v")), 5);
        assert_eq!(
            (timed.key().as_slice(), timed.expire_at_ms()),
            (&b"k"[..], 5)
        );
    }
}
