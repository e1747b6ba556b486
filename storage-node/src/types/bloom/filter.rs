//! One fixed-size Bloom filter: a link of the scalable chain (RedisBloom's `struct bloom`
//! plus its `SBLink` item count).
//!
//! Sizing follows RedisBloom's `bloom_init` with `BLOOM_OPT_NOROUND`, the option every
//! filter it creates carries:
//! - bits per entry `bpe = -ln(error) / ln(2)^2`;
//! - bits `= floor(entries * bpe)` (at least 1), rounded up to whole 64-bit words, so
//!   bytes `= ceil(bits / 64) * 8` and the filter then uses all `bytes * 8` bits;
//! - hash functions `= ceil(ln(2) * bpe)`.
//!
//! Filters of older RedisBloom versions sized by a power of two (`n2 > 0`) take bit
//! positions modulo `2^n2`; loaded ones keep working that way.

use super::hash::HashPair;

/// ln(2)^2, as RedisBloom spells it.
const LN2_SQUARED: f64 = 0.480453013918201;
/// ln(2), as RedisBloom spells it: 15 digits, not `std::f64::consts::LN_2`, because the
/// hash count is a `ceil` of a product with it and must land where RedisBloom's does.
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;

/// The most bytes of bit arrays one key's filter holds, all its sub-filters together.
/// RedisBloom has no limit but its allocator's; a node must not abort on a typo'd capacity
/// or be made to allocate terabytes by a 73-byte `BF.LOADCHUNK` header, so a larger filter is
/// refused as one RedisBloom failed to allocate (`ERR could not create filter`; a header
/// asking for more is `ERR received bad data`).
pub const MAX_FILTER_BYTES: u64 = 1 << 32;

#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Items this filter is sized for.
    pub entries: u64,
    /// Its false-positive rate.
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    /// `log2(bits)` for power-of-two filters, else 0.
    pub n2: u8,
    /// Bits in use (`bytes * 8` for every filter this node creates).
    pub bits: u64,
    pub data: Vec<u8>,
    /// Items added to this filter.
    pub size: u64,
}

/// Why a filter could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    /// Capacity or error rate out of range.
    Invalid,
    /// More than [`MAX_FILTER_BYTES`], or the allocation failed.
    TooLarge,
}

pub fn bits_per_entry(error: f64) -> f64 {
    (error.ln() / LN2_SQUARED).abs()
}

pub fn hash_count(bpe: f64) -> u32 {
    (LN2 * bpe).ceil() as u32
}

/// The bytes a filter for `entries` items at `error` takes.
pub fn filter_bytes(entries: u64, error: f64) -> u64 {
    let bits = ((entries as f64 * bits_per_entry(error)) as u64).max(1);
    bits.div_ceil(64) * 8
}

impl Filter {
    pub fn new(entries: u64, error: f64) -> Result<Filter, SizeError> {
        if entries < 1 || error.is_nan() || error <= 0.0 || error >= 1.0 {
            return Err(SizeError::Invalid);
        }
        let bpe = bits_per_entry(error);
        let bytes = filter_bytes(entries, error);
        if bytes > MAX_FILTER_BYTES {
            return Err(SizeError::TooLarge);
        }
        let data = zeroed(bytes)?;
        Ok(Filter {
            entries,
            error,
            bpe,
            hashes: hash_count(bpe),
            n2: 0,
            bits: bytes * 8,
            data,
            size: 0,
        })
    }

    fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << self.n2
        } else {
            self.bits
        }
    }

    /// Whether every bit of the item is set.
    pub fn contains(&self, hash: &HashPair) -> bool {
        let modulus = self.modulus();
        (0..self.hashes as u64).all(|i| {
            let bit = hash.position(i, modulus);
            self.data[(bit >> 3) as usize] & (1 << (bit & 7)) != 0
        })
    }

    /// Sets the item's bits; true if at least one was clear (the item is new).
    pub fn insert(&mut self, hash: &HashPair) -> bool {
        let modulus = self.modulus();
        let mut found_clear = false;
        for i in 0..self.hashes as u64 {
            let bit = hash.position(i, modulus);
            let byte = &mut self.data[(bit >> 3) as usize];
            let mask = 1 << (bit & 7);
            if *byte & mask == 0 {
                *byte |= mask;
                found_clear = true;
            }
        }
        found_clear
    }

    /// Whether loaded parameters are consistent, as RedisBloom's `bloom_validate_integrity`
    /// checks them, and every bit position falls inside `data`.
    pub fn is_valid(&self) -> bool {
        !(self.error.is_nan()
            || self.error <= 0.0
            || self.error >= 1.0
            || self.n2 > 63
            || (self.n2 != 0 && self.bits < (1u64 << self.n2))
            || self.bits == 0
            || self.bits != self.data.len() as u64 * 8
            || self.hashes != hash_count(self.bpe))
    }
}

/// A zeroed byte array, or `TooLarge` when the allocator refuses it.
pub fn zeroed(bytes: u64) -> Result<Vec<u8>, SizeError> {
    if bytes > MAX_FILTER_BYTES {
        return Err(SizeError::TooLarge);
    }
    let mut data = Vec::new();
    data.try_reserve_exact(bytes as usize)
        .map_err(|_| SizeError::TooLarge)?;
    data.resize(bytes as usize, 0);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_redisbloom_formulas() {
        // capacity 100 at 0.5%: bpe 11.03, 1102 bits, 18 words, 8 hashes.
        let f = Filter::new(100, 0.005).unwrap();
        assert_eq!(f.data.len(), 144);
        assert_eq!(f.bits, 1152);
        assert_eq!(f.hashes, 8);
        // 1% needs 7 hashes (RedisBloom's documentation).
        assert_eq!(hash_count(bits_per_entry(0.01)), 7);
        assert_eq!(hash_count(bits_per_entry(0.001)), 10);
    }

    #[test]
    fn inserted_items_are_found() {
        let mut f = Filter::new(1000, 0.01).unwrap();
        for i in 0..1000u32 {
            f.insert(&HashPair::of(&i.to_le_bytes()));
        }
        assert!((0..1000u32).all(|i| f.contains(&HashPair::of(&i.to_le_bytes()))));
    }
}
