//! The hash table of one hash slot: open addressing with linear probing, where each bucket
//! keeps 32 bits of the key's hash next to the boxed entry.
//!
//! # Why not hashbrown
//! A hashbrown lookup reads the control bytes, then the bucket's pointer (another cache
//! line, 1 KB away in a 128-bucket table), then the entry. Over a keyspace much bigger than
//! the caches each of those is a miss to memory, and they depend on each other. Here the
//! hash bits and the pointer share a bucket, so a lookup costs one miss for the bucket and
//! one for the entry, which is what Redis's dict costs. Over one million keys that took the
//! node's CPU per `INCR` at `-P 16` from 1.49 to 1.22 µs (redis-server: 1.30 µs).
//!
//! # Layout
//! - A bucket is 16 bytes: the low 32 bits of the key's hash (its *tag*), the key's LRU
//!   clock or LFU word (Redis's `robj.lru`), and the entry. The tag alone gives the bucket
//!   the key belongs at (`tag & mask`), so growing the table and shifting buckets on
//!   removal never rehash a key.
//! - The access word lives here rather than in the entry because the bucket had 4 bytes of
//!   padding: in the entry it would make the 48-byte entry 56, which jemalloc serves from
//!   its 64-byte class (see `super::entry`). Under `maxmemory` those 16 bytes a key are
//!   keys the node can keep. Eviction's sampling also reads the word from the bucket
//!   array, without a miss on each sampled entry.
//! - Most slots are small (a node with 60,000 keys has fewer than 4 a slot). A table of up
//!   to 8 entries is *dense*: exactly as many buckets as entries, the entries in any order,
//!   and a lookup compares the tags of all of them (at most two cache lines). An insert or a
//!   removal copies the buckets into a fresh array of the new size (a malloc and a free);
//!   jemalloc has a size class for every multiple of 16 bytes up to 128, so the array costs
//!   exactly its buckets: 16 bytes a key, where power-of-two tables filled up to 8 buckets
//!   cost 22.8 (computed over the Poisson spread of keys in slots; 28.5 at 3/4 full).
//! - A ninth entry makes the table *probed*: a power of two of at least 16 buckets, the key
//!   at `tag & mask` or the next empty bucket after it. It grows (doubling) before it is
//!   more than 3/4 full (7/8 up to 32 buckets), which keeps probe runs short: linear
//!   probing degrades quickly above that.
//! - Removal from a probed table shifts the following buckets of the run back (no
//!   tombstones), so a table that sees many inserts and removals does not fill up with dead
//!   buckets; from a dense one, the last entry fills the hole.
//! - The table halves when removals leave it sparse (`SlotTable::shrink_if_sparse`), and
//!   an emptied table frees its buckets. Eviction is what makes this matter: a node filled
//!   to twice `maxmemory` grows every slot's table for twice the keys it keeps, and buckets
//!   that outlive their keys are memory that eviction then takes from values (measured
//!   before shrinking existed: 45 bytes more per key kept than in tables sized for it).

use super::entry::Entry;

/// One bucket. Empty when `entry` is `None`.
#[derive(Default)]
struct Bucket {
    tag: u32,
    /// The entry's access word: LRU clock or LFU word and arrival generation (see
    /// `super::access`).
    access: u32,
    entry: Option<Box<Entry>>,
}

/// Bytes a bucket takes.
pub const BUCKET_BYTES: usize = std::mem::size_of::<Bucket>();

/// Tables of up to this many buckets are *dense*: their entries fill buckets `0..len` in
/// no order and a lookup compares them all (see the module documentation).
const DENSE_MAX: usize = 8;

/// Tables up to this many buckets shrink as soon as they fit in half (see
/// `SlotTable::shrink_if_sparse`).
const EAGER_SHRINK_BUCKETS: usize = 64;

/// The most entries a table of `size` buckets holds before it grows (see the module
/// documentation).
fn capacity(size: usize) -> usize {
    match size {
        0..=DENSE_MAX => size,
        9..=32 => size / 8 * 7,
        _ => size / 4 * 3,
    }
}

/// The keys of one hash slot.
#[derive(Default)]
pub struct SlotTable {
    buckets: Box<[Bucket]>,
    len: usize,
}

/// The part of a key's hash a bucket keeps.
pub(super) fn tag_of(hash: u64) -> u32 {
    hash as u32
}

/// An entry with what its bucket keeps beside it ([`SlotTable::iter_stored`]).
#[derive(Clone, Copy)]
pub struct Stored<'a> {
    pub tag: u32,
    pub access: u32,
    pub entry: &'a Entry,
}

impl SlotTable {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Buckets, full or empty: indexes `0..bucket_count()` are valid for [`at`](Self::at).
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    fn is_dense(&self) -> bool {
        self.buckets.len() <= DENSE_MAX
    }

    /// The bucket index holding `key` (whose hash is `hash`), if it is stored.
    pub fn find_index(&self, hash: u64, key: &[u8]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let tag = tag_of(hash);
        if self.is_dense() {
            return self.buckets[..self.len].iter().position(|bucket| {
                bucket.tag == tag
                    && bucket
                        .entry
                        .as_ref()
                        .is_some_and(|e| e.key().as_slice() == key)
            });
        }
        let mask = self.mask();
        let mut index = tag as usize & mask;
        // A probed table always keeps an empty bucket to end the run; the lap bound only
        // guards against that ever failing.
        for _ in 0..self.buckets.len() {
            let bucket = &self.buckets[index];
            let entry = bucket.entry.as_deref()?;
            if bucket.tag == tag && entry.key().as_slice() == key {
                return Some(index);
            }
            index = (index + 1) & mask;
        }
        None
    }

    pub fn find(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        self.at(self.find_index(hash, key)?)
    }

    /// The entry at an index returned by [`find_index`](Self::find_index) (None for an
    /// empty bucket or an index out of range).
    pub fn at(&self, index: usize) -> Option<&Entry> {
        self.buckets.get(index)?.entry.as_deref()
    }

    pub fn at_mut(&mut self, index: usize) -> Option<&mut Entry> {
        self.buckets.get_mut(index)?.entry.as_deref_mut()
    }

    /// The entry at an index with its access word (LRU clock or LFU word).
    pub fn with_access_at(&self, index: usize) -> Option<(&Entry, u32)> {
        self.sampled_at(index)
            .map(|(entry, access, _)| (entry, access))
    }

    /// The entry at an index with its access word and its tag (the part of the key's hash
    /// the bucket keeps), all read from the bucket: eviction's sampling scores a key and
    /// tells it from the pool's without reading the entry.
    pub fn sampled_at(&self, index: usize) -> Option<(&Entry, u32, u32)> {
        let bucket = self.buckets.get(index)?;
        Some((bucket.entry.as_deref()?, bucket.access, bucket.tag))
    }

    /// The access word of the entry at an index (0 for an empty bucket).
    pub fn access_at(&self, index: usize) -> u32 {
        self.buckets.get(index).map_or(0, |b| b.access)
    }

    /// Replaces the access word of the entry at an index.
    pub fn set_access_at(&mut self, index: usize, access: u32) {
        if let Some(bucket) = self.buckets.get_mut(index) {
            bucket.access = access;
        }
    }

    /// Stores an entry whose key is not in the table, with its access word.
    pub fn insert_new(&mut self, hash: u64, entry: Box<Entry>, access: u32) {
        let bucket = Bucket {
            tag: tag_of(hash),
            access,
            entry: Some(entry),
        };
        if self.is_dense() && self.len < DENSE_MAX {
            if self.len == self.buckets.len() {
                // One bucket more, exactly: jemalloc has a size class for every multiple of
                // 16 bytes up to 128, so the array costs what its entries need.
                let mut buckets = Vec::with_capacity(self.len + 1);
                buckets.extend(std::mem::take(&mut self.buckets).into_vec());
                buckets.push(bucket);
                self.buckets = buckets.into_boxed_slice();
            } else {
                self.buckets[self.len] = bucket;
            }
            self.len += 1;
            return;
        }
        if self.len + 1 > capacity(self.buckets.len()) {
            self.grow();
        }
        let slot = self.vacant_for(bucket.tag);
        self.buckets[slot] = bucket;
        self.len += 1;
    }

    /// The first empty bucket of the probe run for `tag`. The table must have one.
    fn vacant_for(&self, tag: u32) -> usize {
        let mask = self.mask();
        let mut index = tag as usize & mask;
        while self.buckets[index].entry.is_some() {
            index = (index + 1) & mask;
        }
        index
    }

    /// Doubles a probed table; a full dense one becomes a probed table of twice its size.
    fn grow(&mut self) {
        self.rebuild((self.buckets.len() * 2).max(2 * DENSE_MAX));
    }

    /// Whether a table of `size` buckets holding the entries should halve.
    fn sparse_at(&self, size: usize) -> bool {
        if size <= EAGER_SHRINK_BUCKETS {
            self.len < capacity(size / 2)
        } else {
            self.len * 4 < size
        }
    }

    /// Moves every entry into a new array of `size` buckets (a power of two holding them all),
    /// or into a dense array of exactly the entries when `size` is at most [`DENSE_MAX`].
    fn rebuild(&mut self, size: usize) {
        if size <= DENSE_MAX {
            // A fresh array of exactly the entries: a malloc and a free, where reallocating
            // in place went through jemalloc's slower `rallocx` (as growing did: 290 more
            // instructions a SET into small tables than this).
            let old = std::mem::take(&mut self.buckets).into_vec();
            let mut buckets = Vec::with_capacity(self.len);
            buckets.extend(old.into_iter().filter(|b| b.entry.is_some()));
            self.buckets = buckets.into_boxed_slice();
            return;
        }
        let old = std::mem::replace(
            &mut self.buckets,
            std::iter::repeat_with(Bucket::default).take(size).collect(),
        );
        for bucket in old.into_vec() {
            if bucket.entry.is_some() {
                let index = self.vacant_for(bucket.tag);
                self.buckets[index] = bucket;
            }
        }
    }

    /// Removes and returns the entry at an index returned by [`find_index`](Self::find_index).
    /// The table may shrink: indexes found before are no longer valid.
    pub fn remove_at(&mut self, index: usize) -> Option<Box<Entry>> {
        let removed = self.take_at(index)?;
        self.shrink_if_sparse();
        Some(removed)
    }

    /// [`remove_at`](Self::remove_at) without the shrinking, for walks that go on by index.
    fn take_at(&mut self, index: usize) -> Option<Box<Entry>> {
        let removed = self.buckets.get_mut(index)?.entry.take()?;
        self.len -= 1;
        if self.is_dense() {
            // The last entry fills the hole: the entries stay a prefix.
            self.buckets.swap(index, self.len);
        } else {
            self.close_gap(index);
        }
        Some(removed)
    }

    /// Halves a probed table while it is sparse, down to a dense one of exactly its entries;
    /// a dense table drops the buckets its removals emptied; an empty table lets its buckets
    /// go. A table of up to [`EAGER_SHRINK_BUCKETS`] halves as soon as its
    /// entries fit the half with a bucket to spare, a bigger one only under 1/4 full:
    /// rebuilding a small table costs less than one lookup miss, while a big one would be
    /// rebuilt over and over by a key added and removed around a size boundary. With about
    /// 3 keys per slot, halving only under 1/4 full left 38 bytes of buckets per key after
    /// eviction churn (simulated) where tables sized for what they hold take 28.
    fn shrink_if_sparse(&mut self) {
        if self.len == 0 {
            self.buckets = Box::default();
            return;
        }
        let mut size = self.buckets.len();
        while size > DENSE_MAX && self.sparse_at(size) {
            size /= 2;
        }
        if size <= DENSE_MAX {
            size = self.len;
        }
        if size < self.buckets.len() {
            self.rebuild(size);
        }
    }

    /// Moves buckets after the emptied one back, so that every key stays reachable from its
    /// home bucket without crossing an empty one.
    fn close_gap(&mut self, mut gap: usize) {
        let mask = self.mask();
        let mut next = gap;
        loop {
            next = (next + 1) & mask;
            if self.buckets[next].entry.is_none() {
                return;
            }
            let home = self.buckets[next].tag as usize & mask;
            // The bucket at `next` may fill the gap unless its home lies after the gap
            // (cyclically, in `gap+1 ..= next`): it would then sit before its home.
            let home_after_gap = if gap <= next {
                gap < home && home <= next
            } else {
                gap < home || home <= next
            };
            if !home_after_gap {
                self.buckets.swap(gap, next);
                gap = next;
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.buckets.iter().filter_map(|b| b.entry.as_deref())
    }

    /// The entries with what their buckets keep beside them: the tag (the part of the hash
    /// a snapshot cuts a big slot into pieces by, without hashing any key) and the access
    /// word (which a save writes as the key's idle time or frequency).
    pub fn iter_stored(&self) -> impl Iterator<Item = Stored<'_>> {
        self.buckets.iter().filter_map(|b| {
            b.entry.as_deref().map(|entry| Stored {
                tag: b.tag,
                access: b.access,
                entry,
            })
        })
    }

    /// Keeps only the entries for which `keep` returns true.
    ///
    /// `keep` may be called more than once for an entry it keeps (a removal near the end of
    /// the array can shift an already visited bucket back into the unvisited part), never
    /// for one it removed.
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) {
        let mut index = 0;
        while index < self.buckets.len() {
            match self.buckets[index].entry.as_deref() {
                Some(entry) if !keep(entry) => {
                    // The gap may be refilled from later in the run: look at it again.
                    drop(self.take_at(index));
                }
                _ => index += 1,
            }
        }
        self.shrink_if_sparse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Value;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn entry(key: &[u8]) -> Box<Entry> {
        Box::new(Entry::new(
            key,
            Value::Str(crate::types::StringValue::plain(b"v")),
        ))
    }

    /// Hashes that collide a lot in a small table, to exercise long runs and wrapping.
    fn clustered_hash(n: u64) -> u64 {
        (n % 7) * 3 + (n << 40)
    }

    #[test]
    fn inserts_finds_and_removes_through_runs_that_wrap() {
        let mut table = SlotTable::default();
        let mut model = HashMap::new();
        for n in 0..200u64 {
            let key = format!("k{n}").into_bytes();
            table.insert_new(clustered_hash(n), entry(&key), 0);
            model.insert(key, n);
        }
        // Remove in an order that leaves gaps everywhere, then check every key.
        for n in (0..200u64).filter(|n| n % 3 != 1) {
            let key = format!("k{n}").into_bytes();
            let index = table
                .find_index(clustered_hash(n), &key)
                .expect("stored key");
            let removed = table.remove_at(index).expect("an occupied bucket");
            assert_eq!(removed.key().as_slice(), key.as_slice());
            model.remove(&key);
        }
        assert_eq!(table.len(), model.len());
        for (key, n) in &model {
            assert!(table.find(clustered_hash(*n), key).is_some());
        }
        for n in (0..200u64).filter(|n| n % 3 != 1) {
            let key = format!("k{n}").into_bytes();
            assert!(table.find(clustered_hash(n), &key).is_none());
        }
    }

    #[test]
    fn retain_removes_exactly_the_rejected_entries() {
        let mut table = SlotTable::default();
        for n in 0..100u64 {
            table.insert_new(clustered_hash(n), entry(format!("k{n}").as_bytes()), 0);
        }
        let mut rejected = 0;
        table.retain(|e| {
            let keep = !e.key().as_slice().ends_with(b"5");
            rejected += !keep as usize;
            keep
        });
        assert_eq!(rejected, 10);
        assert_eq!(table.len(), 90);
        assert_eq!(table.iter().count(), 90);
        for n in 0..100u64 {
            let key = format!("k{n}");
            let found = table.find(clustered_hash(n), key.as_bytes()).is_some();
            assert_eq!(found, !key.ends_with('5'), "{key}");
        }
    }

    #[test]
    fn shrinks_when_keys_leave_and_frees_an_emptied_table() {
        let mut table = SlotTable::default();
        let hash = |n: u64| n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for n in 0..1000u64 {
            table.insert_new(hash(n), entry(&n.to_be_bytes()), n as u32);
        }
        assert_eq!(table.bucket_count(), 2048);
        for n in 10..1000u64 {
            let key = n.to_be_bytes();
            let index = table.find_index(hash(n), &key).expect("stored key");
            assert!(table.remove_at(index).is_some());
            let buckets = table.bucket_count();
            assert!(if buckets <= DENSE_MAX {
                buckets == table.len()
            } else {
                !table.sparse_at(buckets)
            });
        }
        // 10 keys need 16 buckets (8 hold 8), and the table is that small.
        assert_eq!(table.bucket_count(), 16);
        for n in 0..10u64 {
            let index = table
                .find_index(hash(n), &n.to_be_bytes())
                .expect("kept key");
            assert_eq!(table.access_at(index), n as u32);
        }
        table.retain(|_| false);
        assert_eq!((table.len(), table.bucket_count()), (0, 0));
        table.insert_new(hash(1), entry(b"again"), 0);
        assert!(table.find(hash(1), b"again").is_some());
    }

    #[test]
    fn fills_small_tables_and_big_ones_to_three_quarters() {
        let mut table = SlotTable::default();
        let hash = |n: u64| n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for n in 0..1000u64 {
            table.insert_new(hash(n), entry(&n.to_be_bytes()), 0);
            let size = table.buckets.len();
            assert!(table.len() <= capacity(size));
            if size > 32 {
                assert!(table.len() * 4 <= size * 3);
            }
            if n == 3 || n == 7 {
                // Full: every key is found, and a missing one ends after one lap.
                assert_eq!(table.len(), size);
                for m in 0..=n {
                    assert!(table.find(hash(m), &m.to_be_bytes()).is_some());
                }
                assert!(table.find(hash(5000), b"missing").is_none());
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8),
        Remove(u8),
        /// Keep only the keys whose number is not a multiple of this (1 and 0 clear none).
        RetainNotMultipleOf(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u8>().prop_map(Op::Insert),
            3 => any::<u8>().prop_map(Op::Remove),
            1 => (2u8..6).prop_map(Op::RetainNotMultipleOf),
        ]
    }

    /// Few distinct tags, so that runs are long, wrap around the end and share tags.
    fn colliding_hash(n: u8) -> u64 {
        u64::from(n % 13) * 5 + (u64::from(n) << 32)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn behaves_like_a_map(ops in proptest::collection::vec(op(), 0..300)) {
            let mut table = SlotTable::default();
            let mut model: HashMap<Vec<u8>, ()> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(n) => {
                        let key = vec![b'k', n];
                        if table.find_index(colliding_hash(n), &key).is_none() {
                            table.insert_new(colliding_hash(n), entry(&key), u32::from(n));
                        }
                        model.insert(key, ());
                    }
                    Op::Remove(n) => {
                        let key = vec![b'k', n];
                        let removed = table
                            .find_index(colliding_hash(n), &key)
                            .and_then(|index| table.remove_at(index));
                        prop_assert_eq!(removed.is_some(), model.remove(&key).is_some());
                    }
                    Op::RetainNotMultipleOf(m) => {
                        table.retain(|e| e.key().as_slice()[1] % m != 0);
                        model.retain(|k, _| k[1] % m != 0);
                    }
                }
                prop_assert_eq!(table.len(), model.len());
                prop_assert_eq!(table.iter().count(), model.len());
                // Up to 8 entries, the table holds exactly its entries.
                if table.bucket_count() <= DENSE_MAX {
                    prop_assert_eq!(table.bucket_count(), table.len());
                }
                for n in 0..=255u8 {
                    let key = [b'k', n];
                    let found = table.find(colliding_hash(n), &key).map(|e| e.key().to_vec());
                    // The access word moves with its entry through shifts and resizes.
                    if let Some(index) = table.find_index(colliding_hash(n), &key) {
                        prop_assert_eq!(table.access_at(index), u32::from(n));
                    }
                    prop_assert_eq!(found, model.contains_key(&key[..]).then(|| key.to_vec()));
                }
            }
        }
    }
}
