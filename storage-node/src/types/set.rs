//! The set type, with the encodings Redis 7.0 reports: `intset` (sorted integers, while
//! every member reads as an integer and there are at most `set-max-intset-entries`) and
//! `hashtable` (anything else; a set never goes back to `intset`).
//!
//! The hashtable form keeps members in a vector with a hash index of positions, so a random
//! member (SPOP, SRANDMEMBER) is O(1) and removal is a swap with the last member.

use std::hash::BuildHasher;

use hashbrown::hash_table::HashTable;
use hashbrown::DefaultHashBuilder;
use rand::Rng;
use slotproxy::numbers::parse_i64;

use super::CompactBytes;

/// A set value.
#[derive(Clone, Debug)]
pub enum SetValue {
    /// Sorted, distinct integers.
    Ints(Vec<i64>),
    Table(MemberTable),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::Ints(Vec::new())
    }
}

/// Members in a vector, indexed by a hash table of positions.
#[derive(Clone, Debug, Default)]
pub struct MemberTable {
    members: Vec<CompactBytes>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl MemberTable {
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The hash a member has in this table (fixed while the table lives; SSCAN cursors).
    pub fn hash_of(&self, member: &[u8]) -> u64 {
        self.hasher.hash_one(member)
    }

    fn position(&self, member: &[u8]) -> Option<usize> {
        let members = &self.members;
        self.index
            .find(self.hash_of(member), |&i| {
                members[i as usize].as_slice() == member
            })
            .map(|&i| i as usize)
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.position(member).is_some()
    }

    /// Adds a member; false if it was already there.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        if self.contains(member) {
            return false;
        }
        let position = self.members.len() as u32;
        self.members.push(CompactBytes::new(member));
        let (members, hasher) = (&self.members, &self.hasher);
        self.index
            .insert_unique(hasher.hash_one(member), position, |&i| {
                hasher.hash_one(members[i as usize].as_slice())
            });
        true
    }

    /// Removes a member; false if it was not there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self.position(member) {
            Some(position) => {
                self.remove_at(position);
                true
            }
            None => false,
        }
    }

    /// Removes and returns the member at `position`; the last member takes its place.
    fn remove_at(&mut self, position: usize) -> CompactBytes {
        let last = self.members.len() - 1;
        let hash = self.hash_of(&self.members[position]);
        if let Ok(entry) = self.index.find_entry(hash, |&i| i as usize == position) {
            entry.remove();
        }
        if position != last {
            let moved_hash = self.hash_of(&self.members[last]);
            if let Some(slot) = self.index.find_mut(moved_hash, |&i| i as usize == last) {
                *slot = position as u32;
            }
        }
        self.members.swap_remove(position)
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter().map(CompactBytes::as_slice)
    }

    pub fn get(&self, position: usize) -> Option<&[u8]> {
        self.members.get(position).map(CompactBytes::as_slice)
    }
}

impl SetValue {
    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(v) => v.len(),
            SetValue::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Table(_) => "hashtable",
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(v) => parse_i64(member).is_some_and(|n| v.binary_search(&n).is_ok()),
            SetValue::Table(t) => t.contains(member),
        }
    }

    fn convert_to_table(&mut self) {
        if let SetValue::Ints(v) = self {
            let mut table = MemberTable::default();
            for n in v.iter() {
                table.insert(n.to_string().as_bytes());
            }
            *self = SetValue::Table(table);
        }
    }

    /// Adds a member, converting to `hashtable` as Redis does: when a member is not an
    /// integer, or the intset would exceed `max_intset_entries`. False if already there.
    pub fn insert(&mut self, member: &[u8], max_intset_entries: usize) -> bool {
        if let SetValue::Ints(v) = self {
            match parse_i64(member) {
                Some(n) => {
                    let Err(at) = v.binary_search(&n) else {
                        return false;
                    };
                    v.insert(at, n);
                    if v.len() > max_intset_entries {
                        self.convert_to_table();
                    }
                    return true;
                }
                None => self.convert_to_table(),
            }
        }
        match self {
            SetValue::Table(t) => t.insert(member),
            SetValue::Ints(_) => false,
        }
    }

    /// Removes a member; false if it was not there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(v) => match parse_i64(member).map(|n| v.binary_search(&n)) {
                Some(Ok(at)) => {
                    v.remove(at);
                    true
                }
                _ => false,
            },
            SetValue::Table(t) => t.remove(member),
        }
    }

    /// The members, in Redis's order for an intset (ascending) and table order otherwise.
    pub fn members(&self) -> Vec<Vec<u8>> {
        match self {
            SetValue::Ints(v) => v.iter().map(|n| n.to_string().into_bytes()).collect(),
            SetValue::Table(t) => t.iter().map(<[u8]>::to_vec).collect(),
        }
    }

    /// Calls `f` with each member, without allocating for table members.
    pub fn for_each(&self, mut f: impl FnMut(&[u8])) {
        match self {
            SetValue::Ints(v) => {
                for n in v {
                    f(n.to_string().as_bytes());
                }
            }
            SetValue::Table(t) => t.iter().for_each(f),
        }
    }

    /// A uniformly random member.
    pub fn random_member(&self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let at = rng.gen_range(0..self.len());
        Some(self.member_at(at))
    }

    /// The member at a position (ascending for an intset, table order otherwise).
    pub fn member_at(&self, at: usize) -> Vec<u8> {
        match self {
            SetValue::Ints(v) => v[at].to_string().into_bytes(),
            SetValue::Table(t) => t.get(at).unwrap_or_default().to_vec(),
        }
    }

    /// Removes and returns a uniformly random member.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let at = rng.gen_range(0..self.len());
        Some(match self {
            SetValue::Ints(v) => v.remove(at).to_string().into_bytes(),
            SetValue::Table(t) => t.remove_at(at).as_slice().to_vec(),
        })
    }

    /// Re-chooses the encoding for `max_intset_entries`, as loading a value does: an intset
    /// when every member is an integer and there are few enough.
    pub fn refit(&mut self, max_intset_entries: usize) {
        match self {
            SetValue::Ints(v) if v.len() > max_intset_entries => self.convert_to_table(),
            SetValue::Table(t) if t.len() <= max_intset_entries => {
                let ints: Option<Vec<i64>> = t.iter().map(parse_i64).collect();
                if let Some(mut ints) = ints {
                    ints.sort_unstable();
                    *self = SetValue::Ints(ints);
                }
            }
            _ => {}
        }
    }

    /// Bytes used on the heap, for MEMORY USAGE.
    pub fn heap_size(&self) -> usize {
        match self {
            SetValue::Ints(v) => v.capacity() * 8,
            SetValue::Table(t) => {
                t.members.capacity() * std::mem::size_of::<CompactBytes>()
                    + t.members.iter().map(CompactBytes::heap_size).sum::<usize>()
                    + t.index.capacity() * 5
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn converts_like_redis() {
        let mut set = SetValue::default();
        assert!(set.insert(b"3", 512));
        assert!(set.insert(b"1", 512));
        assert!(!set.insert(b"1", 512));
        assert_eq!(set.encoding_name(), "intset");
        assert_eq!(set.members(), vec![b"1".to_vec(), b"3".to_vec()]);
        assert!(set.insert(b"01", 512));
        assert_eq!(set.encoding_name(), "hashtable");
        let mut small = SetValue::default();
        small.insert(b"1", 1);
        small.insert(b"2", 1);
        assert_eq!(small.encoding_name(), "hashtable");
    }

    #[test]
    fn table_removal_keeps_the_index_right() {
        let mut set = SetValue::default();
        let mut model = BTreeSet::new();
        let mut rng = rand::thread_rng();
        for i in 0..500 {
            let m = format!("m{}", i % 97);
            assert_eq!(set.insert(m.as_bytes(), 512), model.insert(m.clone()));
            if i % 3 == 0 {
                let r = format!("m{}", (i * 7) % 97);
                assert_eq!(set.remove(r.as_bytes()), model.remove(&r));
            }
            if i % 11 == 0 {
                if let Some(p) = set.pop_random(&mut rng) {
                    assert!(model.remove(&String::from_utf8(p).unwrap()));
                }
            }
            assert_eq!(set.len(), model.len());
            for m in &model {
                assert!(set.contains(m.as_bytes()));
            }
        }
    }
}
