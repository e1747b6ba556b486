//! A scalable Bloom filter, the value RedisBloom 2.6 keeps under its `MBbloom--` type.
//!
//! A chain of fixed-size filters ([`filter::Filter`]). An item is new if no filter holds
//! it; it is added to the newest filter. When that filter holds as many items as it was
//! sized for, a scaling chain adds one `growth` times larger with half the error rate
//! (RedisBloom's tightening ratio 0.5, which the first filter gets too, so the sum of the
//! rates stays under the requested one); a `NONSCALING` chain refuses the item instead.
//!
//! - `hash.rs`: the item hash; `filter.rs`: one filter and its sizing;
//! - `dump.rs`: the `BF.SCANDUMP` header and chunks, and their loading.

pub mod dump;
pub mod filter;
pub mod hash;

use filter::{Filter, SizeError};
use hash::HashPair;

/// `BLOOM_OPT_NOROUND`: filters sized exactly, not to a power of two.
pub const OPT_NOROUND: u32 = 1;
/// `BLOOM_OPT_ENTS_IS_BITS` (only ever read from old dumps).
pub const OPT_ENTS_IS_BITS: u32 = 2;
/// `BLOOM_OPT_FORCE64`: 64-bit hashes.
pub const OPT_FORCE64: u32 = 4;
/// `BLOOM_OPT_NO_SCALING`.
pub const OPT_NO_SCALING: u32 = 8;

/// Each new filter's error rate is the previous one's times this.
const TIGHTENING_RATIO: f64 = 0.5;

/// Defaults of `BF.ADD`/`BF.INSERT` for a filter they create.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;
pub const DEFAULT_CAPACITY: u64 = 100;
pub const DEFAULT_EXPANSION: u64 = 2;

/// RedisBloom's `sizeof(SBChain)` and `sizeof(SBLink)` on 64-bit machines: what its
/// `BF.INFO ... SIZE` (and MEMORY USAGE) counts besides the bit arrays.
const CHAIN_STRUCT_BYTES: usize = 32;
const LINK_STRUCT_BYTES: usize = 64;

/// More filters than this in one chain is refused on load (RedisBloom asserts < 1000).
pub const MAX_FILTERS: usize = 1000;

#[derive(Clone, Debug, PartialEq)]
pub struct BloomValue {
    /// Items added to the whole chain.
    pub size: u64,
    pub options: u32,
    /// The expansion: each new filter's capacity is the previous one's times this.
    pub growth: u32,
    pub filters: Vec<Filter>,
}

/// Why an item was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// A `NONSCALING` chain is full.
    Full,
    /// The next filter could not be built (the chain would pass
    /// [`filter::MAX_FILTER_BYTES`], its error rate underflowed, or the chain is at
    /// [`MAX_FILTERS`]).
    CannotGrow,
}

impl BloomValue {
    /// A chain with one empty filter (RedisBloom's `SB_NewChain`).
    pub fn new(
        capacity: u64,
        error_rate: f64,
        expansion: u32,
        nonscaling: bool,
    ) -> Result<BloomValue, SizeError> {
        let mut options = OPT_NOROUND | OPT_FORCE64;
        let mut first_error = error_rate * TIGHTENING_RATIO;
        if nonscaling {
            options |= OPT_NO_SCALING;
            first_error = error_rate;
        }
        Ok(BloomValue {
            size: 0,
            options,
            growth: expansion,
            filters: vec![Filter::new(capacity, first_error)?],
        })
    }

    pub fn is_scaling(&self) -> bool {
        self.options & OPT_NO_SCALING == 0
    }

    /// Adds an item: `Ok(true)` if it was new, `Ok(false)` if it (or a collision) was
    /// already there.
    pub fn add(&mut self, item: &[u8]) -> Result<bool, AddError> {
        let hash = HashPair::of(item);
        if self.filters.iter().rev().any(|f| f.contains(&hash)) {
            return Ok(false);
        }
        let Some(current) = self.filters.last() else {
            return Err(AddError::CannotGrow);
        };
        if current.size >= current.entries {
            if !self.is_scaling() {
                return Err(AddError::Full);
            }
            // A longer chain could not be loaded back (RDB, DUMP, LOADCHUNK refuse it).
            if self.filters.len() + 1 >= MAX_FILTERS {
                return Err(AddError::CannotGrow);
            }
            let entries = current
                .entries
                .checked_mul(self.growth as u64)
                .ok_or(AddError::CannotGrow)?;
            let error = current.error * TIGHTENING_RATIO;
            let held: u64 = self.filters.iter().map(|f| f.data.len() as u64).sum();
            if held + filter::filter_bytes(entries, error) > filter::MAX_FILTER_BYTES {
                return Err(AddError::CannotGrow);
            }
            let next = Filter::new(entries, error).map_err(|_| AddError::CannotGrow)?;
            self.filters.push(next);
        }
        let Some(current) = self.filters.last_mut() else {
            return Err(AddError::CannotGrow);
        };
        let added = current.insert(&hash);
        if added {
            current.size += 1;
            self.size += 1;
        }
        Ok(added)
    }

    /// Whether the item may have been added (false positives possible, no false negatives).
    pub fn contains(&self, item: &[u8]) -> bool {
        let hash = HashPair::of(item);
        self.filters.iter().rev().any(|f| f.contains(&hash))
    }

    /// `BF.INFO` `Capacity`: the sum of every filter's capacity.
    pub fn capacity(&self) -> u64 {
        self.filters.iter().map(|f| f.entries).sum()
    }

    /// `BF.INFO` `Size`, RedisBloom's memory usage figure: its structures and bit arrays.
    pub fn memory_usage(&self) -> usize {
        CHAIN_STRUCT_BYTES
            + self
                .filters
                .iter()
                .map(|f| LINK_STRUCT_BYTES + f.data.len())
                .sum::<usize>()
    }

    /// A chain read from an RDB file or a DUMP payload, if it is consistent (see
    /// [`BloomValue::is_valid`]): the one check both loaders apply.
    pub fn loaded(size: u64, options: u32, growth: u32, filters: Vec<Filter>) -> Option<Self> {
        let bloom = BloomValue {
            size,
            options,
            growth,
            filters,
        };
        bloom.is_valid().then_some(bloom)
    }

    /// Whether a loaded chain is consistent (RedisBloom's `SB_ValidateIntegrity`), and
    /// only uses the 64-bit hashing this node implements.
    pub fn is_valid(&self) -> bool {
        let known = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING;
        let total = self
            .filters
            .iter()
            .try_fold(0u64, |sum, f| sum.checked_add(f.size));
        self.options & !known == 0
            && self.options & OPT_FORCE64 != 0
            && !self.filters.is_empty()
            && self.filters.len() < MAX_FILTERS
            && total == Some(self.size)
            && self.filters.iter().all(Filter::is_valid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_adds_larger_tighter_filters() {
        let mut b = BloomValue::new(100, 0.01, 2, false).unwrap();
        assert_eq!(b.filters[0].error, 0.005);
        // RedisBloom's BF.INFO example: one filter of capacity 100 at 1% is 240 bytes.
        assert_eq!(b.memory_usage(), 240);
        let mut added = 0;
        let mut i = 0u64;
        while added < 101 {
            added += b.add(&i.to_le_bytes()).unwrap() as u64;
            i += 1;
        }
        assert_eq!(b.filters.len(), 2);
        assert_eq!(b.filters[1].entries, 200);
        assert_eq!(b.filters[1].error, 0.0025);
        assert_eq!(b.capacity(), 300);
    }

    #[test]
    fn a_chain_stops_growing_before_it_could_not_be_loaded() {
        let mut b = BloomValue::new(1, 0.5, 1, false).unwrap();
        let mut i = 0u64;
        let outcome = loop {
            match b.add(&i.to_le_bytes()) {
                Ok(_) => i += 1,
                Err(e) => break e,
            }
            assert!(i < 1_000_000);
        };
        assert_eq!(outcome, AddError::CannotGrow);
        assert!(b.filters.len() < MAX_FILTERS);
        assert!(b.is_valid());
    }

    #[test]
    fn nonscaling_fills_up() {
        let mut b = BloomValue::new(2, 0.01, 2, true).unwrap();
        assert_eq!(b.filters[0].error, 0.01);
        assert_eq!(b.add(b"a"), Ok(true));
        assert_eq!(b.add(b"b"), Ok(true));
        assert_eq!(b.add(b"c"), Err(AddError::Full));
        assert_eq!(b.add(b"a"), Ok(false));
    }
}
