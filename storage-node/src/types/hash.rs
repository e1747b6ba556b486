//! The hash type, in two representations that mirror Redis's two encodings.
//!
//! - [`HashValue::Small`] (`listpack` in OBJECT ENCODING): the pairs packed one after the
//!   other in a single byte buffer, each string prefixed by its length as a LEB128 varint.
//!   Lookups are a linear walk, like Redis's listpack, and the memory cost is the bytes
//!   themselves plus about two bytes per pair. Pairs stay in insertion order, which is the
//!   order Redis replies in for listpack hashes.
//! - [`HashValue::Big`] (`hashtable`): the pairs in a vector, indexed by a hash table of
//!   positions (an "index map"). Removal moves the last pair into the hole.
//!
//! A hash starts small and turns big, never back, when it gets more pairs than
//! `hash-max-listpack-entries` or a field or value longer than `hash-max-listpack-value`,
//! exactly when Redis converts.
//!
//! # HSCAN cursors on big hashes
//! A cursor is the number of vector positions not visited yet; a scan walks positions
//! downwards from there, and cursor 0 starts at the end. Pairs are only ever appended, and a
//! removal moves the *last* pair down into the hole, so a pair present for the whole
//! iteration can only move to a lower position, still below the cursor: it is returned at
//! least once. Pairs moved from above the cursor to below it may be returned twice, which
//! SCAN's contract allows. Small hashes are returned whole in one call with cursor 0, as
//! Redis does for listpacks.

use std::hash::BuildHasher;

use hashbrown::hash_table::HashTable;
use hashbrown::DefaultHashBuilder;

use super::CompactBytes;

/// The thresholds that decide the encoding (from the config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashLimits {
    pub max_listpack_entries: usize,
    pub max_listpack_value: usize,
}

impl Default for HashLimits {
    fn default() -> Self {
        HashLimits {
            max_listpack_entries: 512,
            max_listpack_value: 64,
        }
    }
}

/// A field and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// A hash value. Never empty while stored in the keyspace.
#[derive(Clone, Debug)]
pub enum HashValue {
    Small(PackedPairs),
    Big(IndexedPairs),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Small(PackedPairs::default())
    }
}

impl HashValue {
    pub fn new() -> HashValue {
        HashValue::default()
    }

    pub fn len(&self) -> usize {
        match self {
            HashValue::Small(p) => p.len as usize,
            HashValue::Big(b) => b.entries.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_small(&self) -> bool {
        matches!(self, HashValue::Small(_))
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            HashValue::Small(_) => "listpack",
            HashValue::Big(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Small(p) => p.find(field).map(|at| &p.buf[at.value.0..at.value.1]),
            HashValue::Big(b) => b.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the big representation if any of `strings` is too long for a small one
    /// (Redis's `hashTypeTryConversion`, run before a write).
    pub fn convert_for(&mut self, strings: &[&[u8]], limits: &HashLimits) {
        if self.is_small() && strings.iter().any(|s| s.len() > limits.max_listpack_value) {
            self.convert_to_big();
        }
    }

    /// Sets a field. Returns true if the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &HashLimits) -> bool {
        self.convert_for(&[field, value], limits);
        let created = match self {
            HashValue::Small(p) => p.set(field, value),
            HashValue::Big(b) => b.set(field, value),
        };
        if self.is_small() && self.len() > limits.max_listpack_entries {
            self.convert_to_big();
        }
        created
    }

    /// Removes a field. Returns true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Small(p) => p.remove(field),
            HashValue::Big(b) => b.remove(field),
        }
    }

    pub fn convert_to_big(&mut self) {
        if let HashValue::Small(p) = self {
            let mut big = IndexedPairs::with_capacity(p.len as usize);
            for (field, value) in p.iter() {
                big.set(field, value);
            }
            *self = HashValue::Big(big);
        }
    }

    /// The pairs, in reply order.
    pub fn iter(&self) -> HashIter<'_> {
        match self {
            HashValue::Small(p) => HashIter::Small(p.iter()),
            HashValue::Big(b) => HashIter::Big(b.entries.iter()),
        }
    }

    /// The pair at a position of [`iter`](Self::iter)'s order.
    pub fn nth(&self, index: usize) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Small(p) => p.iter().nth(index),
            HashValue::Big(b) => b.entries.get(index).map(|(f, v)| (&f[..], &v[..])),
        }
    }

    /// One HSCAN step: the next cursor (0 when done) and the pairs visited.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Pair<'_>>) {
        match self {
            HashValue::Small(p) => (0, p.iter().collect()),
            HashValue::Big(b) => {
                let len = b.entries.len() as u64;
                let from = if cursor == 0 || cursor > len {
                    len
                } else {
                    cursor
                } as usize;
                let to = from.saturating_sub(count.max(1));
                let pairs = b.entries[to..from]
                    .iter()
                    .rev()
                    .map(|(f, v)| (&f[..], &v[..]))
                    .collect();
                (to as u64, pairs)
            }
        }
    }

    pub fn memory_usage(&self) -> usize {
        match self {
            HashValue::Small(p) => p.buf.capacity(),
            HashValue::Big(b) => {
                let pair = std::mem::size_of::<(CompactBytes, CompactBytes)>();
                b.entries.capacity() * pair
                    + b.index.capacity() * (std::mem::size_of::<u32>() + 1)
                    + b.entries
                        .iter()
                        .map(|(f, v)| f.heap_size() + v.heap_size())
                        .sum::<usize>()
            }
        }
    }
}

/// Iterator over a hash's pairs.
pub enum HashIter<'a> {
    Small(PackedIter<'a>),
    Big(std::slice::Iter<'a, (CompactBytes, CompactBytes)>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HashIter::Small(it) => it.next(),
            HashIter::Big(it) => it.next().map(|(f, v)| (f.as_slice(), v.as_slice())),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Small: packed pairs

/// Pairs packed in one buffer: `varint(len) bytes varint(len) bytes ...`.
#[derive(Clone, Debug, Default)]
pub struct PackedPairs {
    buf: Vec<u8>,
    len: u32,
}

/// Where one pair sits in the buffer: the whole pair and the value's bytes.
struct PairAt {
    start: usize,
    end: usize,
    value: (usize, usize),
}

fn push_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Reads the string at `pos`: its bytes' range and the position after it.
fn read_string(buf: &[u8], mut pos: usize) -> ((usize, usize), usize) {
    let mut len = 0usize;
    let mut shift = 0;
    loop {
        let byte = buf[pos];
        pos += 1;
        len |= ((byte & 0x7f) as usize) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    ((pos, pos + len), pos + len)
}

fn encode_pair(field: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        varint_len(field.len()) + field.len() + varint_len(value.len()) + value.len(),
    );
    push_varint(&mut out, field.len());
    out.extend_from_slice(field);
    push_varint(&mut out, value.len());
    out.extend_from_slice(value);
    out
}

impl PackedPairs {
    fn find(&self, field: &[u8]) -> Option<PairAt> {
        let mut pos = 0;
        while pos < self.buf.len() {
            let start = pos;
            let (f, next) = read_string(&self.buf, pos);
            let (v, next) = read_string(&self.buf, next);
            if &self.buf[f.0..f.1] == field {
                return Some(PairAt {
                    start,
                    end: next,
                    value: v,
                });
            }
            pos = next;
        }
        None
    }

    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        match self.find(field) {
            Some(at) => {
                if at.value.1 - at.value.0 == value.len() {
                    self.buf[at.value.0..at.value.1].copy_from_slice(value);
                } else {
                    let mut encoded = Vec::with_capacity(varint_len(value.len()) + value.len());
                    push_varint(&mut encoded, value.len());
                    encoded.extend_from_slice(value);
                    let value_start = at.value.0 - varint_len(at.value.1 - at.value.0);
                    self.buf.splice(value_start..at.value.1, encoded);
                }
                false
            }
            None => {
                let encoded = encode_pair(field, value);
                // Exact growth, as a listpack is reallocated to its exact size: small hashes
                // are many, and doubling would waste up to half of each.
                self.buf.reserve_exact(encoded.len());
                self.buf.extend_from_slice(&encoded);
                self.len += 1;
                true
            }
        }
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        match self.find(field) {
            Some(at) => {
                self.buf.drain(at.start..at.end);
                self.len -= 1;
                if self.buf.capacity() > 2 * self.buf.len() + 64 {
                    self.buf.shrink_to_fit();
                }
                true
            }
            None => false,
        }
    }

    fn iter(&self) -> PackedIter<'_> {
        PackedIter {
            buf: &self.buf,
            pos: 0,
        }
    }
}

/// Iterator over packed pairs.
pub struct PackedIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let (f, next) = read_string(self.buf, self.pos);
        let (v, next) = read_string(self.buf, next);
        self.pos = next;
        Some((&self.buf[f.0..f.1], &self.buf[v.0..v.1]))
    }
}

// ---------------------------------------------------------------------------------------
// Big: pairs in a vector, indexed by a hash table of positions

#[derive(Clone, Default)]
pub struct IndexedPairs {
    entries: Vec<(CompactBytes, CompactBytes)>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl std::fmt::Debug for IndexedPairs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl IndexedPairs {
    fn with_capacity(n: usize) -> IndexedPairs {
        IndexedPairs {
            entries: Vec::with_capacity(n),
            index: HashTable::with_capacity(n),
            hasher: DefaultHashBuilder::default(),
        }
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        let hash = self.hasher.hash_one(field);
        self.index
            .find(hash, |&i| self.entries[i as usize].0.as_slice() == field)
            .map(|&i| i as usize)
    }

    fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.position(field).map(|i| self.entries[i].1.as_slice())
    }

    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(i) = self.position(field) {
            self.entries[i].1 = CompactBytes::new(value);
            return false;
        }
        let hash = self.hasher.hash_one(field);
        let position = self.entries.len() as u32;
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.insert_unique(hash, position, |&i| {
            hasher.hash_one(entries[i as usize].0.as_slice())
        });
        self.entries
            .push((CompactBytes::new(field), CompactBytes::new(value)));
        true
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let hash = self.hasher.hash_one(field);
        let entries = &self.entries;
        let Ok(found) = self
            .index
            .find_entry(hash, |&i| entries[i as usize].0.as_slice() == field)
        else {
            return false;
        };
        let (position, _) = found.remove();
        let position = position as usize;
        let last = self.entries.len() - 1;
        if position != last {
            // The last pair moves into the hole; its index entry follows.
            let moved_hash = self.hasher.hash_one(self.entries[last].0.as_slice());
            if let Some(slot) = self.index.find_mut(moved_hash, |&i| i as usize == last) {
                *slot = position as u32;
            }
        }
        self.entries.swap_remove(position);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(entries: usize, value: usize) -> HashLimits {
        HashLimits {
            max_listpack_entries: entries,
            max_listpack_value: value,
        }
    }

    #[test]
    fn small_hash_keeps_insertion_order_and_updates_in_place() {
        let l = HashLimits::default();
        let mut h = HashValue::new();
        assert!(h.set(b"a", b"1", &l));
        assert!(h.set(b"b", &[b'x'; 200][..60], &l));
        assert!(!h.set(b"a", b"longer value", &l));
        assert_eq!(h.get(b"a"), Some(&b"longer value"[..]));
        let fields: Vec<&[u8]> = h.iter().map(|(f, _)| f).collect();
        assert_eq!(fields, vec![&b"a"[..], b"b"]);
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        assert_eq!(h.len(), 1);
        assert_eq!(h.encoding_name(), "listpack");
    }

    #[test]
    fn converts_on_either_limit_and_never_back() {
        let mut h = HashValue::new();
        h.set(b"f", b"123", &limits(2, 3));
        h.set(b"g", b"1234", &limits(2, 3));
        assert_eq!(h.encoding_name(), "hashtable");
        let mut h = HashValue::new();
        for f in [b"a", b"b", b"c"] {
            h.set(f, b"v", &limits(2, 3));
        }
        assert_eq!(h.encoding_name(), "hashtable");
        h.remove(b"a");
        h.remove(b"b");
        assert_eq!(h.encoding_name(), "hashtable");
        assert_eq!(h.get(b"c"), Some(&b"v"[..]));
    }

    #[test]
    fn big_hash_removal_keeps_the_index_right() {
        let l = limits(0, 64);
        let mut h = HashValue::new();
        for i in 0..1000 {
            h.set(format!("f{i}").as_bytes(), format!("{i}").as_bytes(), &l);
        }
        for i in (0..1000).step_by(3) {
            assert!(h.remove(format!("f{i}").as_bytes()));
        }
        for i in 0..1000 {
            let expected = (i % 3 != 0).then(|| format!("{i}"));
            assert_eq!(
                h.get(format!("f{i}").as_bytes()),
                expected.as_deref().map(str::as_bytes)
            );
        }
    }

    #[test]
    fn scan_returns_every_stable_pair_despite_removals() {
        let l = limits(0, 64);
        let mut h = HashValue::new();
        for i in 0..100 {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut removed = 0;
        loop {
            let (next, pairs) = h.scan(cursor, 7);
            seen.extend(pairs.iter().map(|(f, _)| f.to_vec()));
            // Remove pairs already returned, which moves later pairs around.
            if removed < 30 {
                let victim = format!("f{removed}");
                if seen.contains(victim.as_bytes()) {
                    h.remove(victim.as_bytes());
                }
                removed += 1;
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        for i in 30..100 {
            assert!(seen.contains(format!("f{i}").as_bytes()), "f{i}");
        }
    }
}
