//! Walking many entries (SAVE, a snapshot's chunk) while reading ahead.
//!
//! Every entry is its own allocation, and so is a collection's box: a walk that touches
//! each for the first time when it encodes it stalls on a cache miss or two per key (about
//! a third of a SAVE). [`read_ahead`] reads the entry [`2 * DISTANCE`](DISTANCE) places
//! ahead and the value box of the one `DISTANCE` ahead, so that their misses overlap the
//! encoding of the entries before them.

use super::slot_table::Stored;
use super::Entry;
use crate::types::Value;

/// How many entries ahead of the one being used the walk reads the value's box.
const DISTANCE: usize = 4;

/// What a walk yields: an entry, or an entry with what its bucket keeps.
pub trait EntryItem<'a> {
    fn entry(&self) -> &'a Entry;
}

impl<'a> EntryItem<'a> for &'a Entry {
    fn entry(&self) -> &'a Entry {
        self
    }
}

impl<'a> EntryItem<'a> for Stored<'a> {
    fn entry(&self) -> &'a Entry {
        self.entry
    }
}

/// The items `walk` yields (each call must start the same walk), reading ahead.
pub fn read_ahead<'a, T, I>(walk: impl Fn() -> I) -> impl Iterator<Item = T>
where
    T: EntryItem<'a>,
    I: Iterator<Item = T>,
{
    let mut far = walk().skip(2 * DISTANCE);
    let mut near = walk().skip(DISTANCE);
    walk().inspect(move |_| {
        if let Some(item) = far.next() {
            std::hint::black_box(item.entry().expire_at_ms());
        }
        if let Some(item) = near.next() {
            std::hint::black_box(box_field(&item.entry().value));
        }
    })
}

/// A field of the value's own allocation (a collection's box).
fn box_field(value: &Value) -> usize {
    match value {
        Value::Str(_) => 0,
        Value::Set(set) => set.len(),
        Value::ZSet(zset) => zset.len(),
        Value::List(list) => list.items.len(),
        Value::Hash(hash) => hash.len(),
        Value::Bloom(bloom) => bloom.capacity() as usize,
        Value::Stream(stream) => stream.length as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StringValue;

    #[test]
    fn yields_every_item_once_in_order() {
        let entries: Vec<Entry> = (0..20)
            .map(|n| {
                let value = Value::Str(StringValue::new(format!("{n}").as_bytes()));
                Entry::new(format!("k{n}").as_bytes(), value)
            })
            .collect();
        for len in [0, 1, 4, 8, 9, 20] {
            let walked: Vec<&[u8]> = read_ahead(|| entries[..len].iter())
                .map(|e| e.key().as_slice())
                .collect();
            let expected: Vec<&[u8]> = entries[..len].iter().map(|e| e.key().as_slice()).collect();
            assert_eq!(walked, expected);
        }
    }
}
