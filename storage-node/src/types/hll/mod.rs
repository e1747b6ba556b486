//! HyperLogLog values in Redis 7.0's exact byte layout. An HLL is an ordinary string, so
//! GET, SET, DUMP and RESTORE carry it between the node and redis-server unchanged.
//!
//! ```text
//! +------+---+-----+----------+---------------------------------+
//! | HYLL | E | N/U | Cardin.  | registers (dense or sparse)     |
//! +------+---+-----+----------+---------------------------------+
//!  4 bytes 1   3    8 bytes LE
//! ```
//!
//! `E` is the encoding (0 dense, 1 sparse). The cardinality is the last PFCOUNT result,
//! little-endian; the top bit of its last byte marks it stale (set by every change to a
//! register, cleared when PFCOUNT stores a fresh count). There are 2^14 registers; each
//! holds the longest run of zero bits (plus one) seen in the 50 hash bits above the 14
//! that choose the register.
//!
//! - `dense.rs`: 16,384 six-bit registers (12,304 bytes with the header);
//! - `sparse.rs`: the run-length opcodes small HLLs start with;
//! - `murmur.rs`: the element hash; `estimate.rs`: the cardinality estimator;
//! - `selftest.rs`: PFSELFTEST's checks.

pub mod dense;
mod estimate;
mod murmur;
pub mod selftest;
pub mod sparse;

use sparse::SetOutcome;

/// Bits of the hash that choose the register.
pub const P: u32 = 14;
/// Bits of the hash whose leading-zero run is counted.
pub const Q: u32 = 64 - P;
pub const REGISTERS: usize = 1 << P;
pub const REGISTER_MAX: u8 = 63;
pub const HEADER_LEN: usize = 16;
/// The length of every dense HLL.
pub const DENSE_LEN: usize = HEADER_LEN + (REGISTERS * 6).div_ceil(8);

const MAGIC: &[u8; 4] = b"HYLL";
const ENCODING_AT: usize = 4;
const CARD_AT: usize = 8;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// The top bit of the cached cardinality's last byte: the cache is stale.
const STALE: u8 = 0x80;

/// How many registers hold each value (index 0 to 63).
pub type Histogram = [u64; 64];

/// The string is not an HLL at all (wrong magic, encoding byte or dense length).
#[derive(Debug, PartialEq, Eq)]
pub struct NotHll;

/// The string has a valid header but its registers are corrupt.
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

/// Checks the header as Redis's `isHLLObjectOrReply` does and returns the encoding.
pub fn encoding(hll: &[u8]) -> Result<Encoding, NotHll> {
    if hll.len() < HEADER_LEN || &hll[..4] != MAGIC {
        return Err(NotHll);
    }
    match hll[ENCODING_AT] {
        DENSE if hll.len() == DENSE_LEN => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(NotHll),
    }
}

/// A new, empty HLL: sparse, with a valid cached cardinality of 0.
pub fn new_sparse() -> Vec<u8> {
    let mut hll = vec![0u8; HEADER_LEN];
    hll[..4].copy_from_slice(MAGIC);
    hll[ENCODING_AT] = SPARSE;
    hll.extend_from_slice(&sparse::empty_payload());
    hll
}

/// The cached cardinality, unless it is stale.
pub fn cached_cardinality(hll: &[u8]) -> Option<u64> {
    let mut card = [0u8; 8];
    card.copy_from_slice(&hll[CARD_AT..HEADER_LEN]);
    (card[7] & STALE == 0).then(|| u64::from_le_bytes(card))
}

pub fn store_cardinality(hll: &mut [u8], card: u64) {
    hll[CARD_AT..HEADER_LEN].copy_from_slice(&card.to_le_bytes());
}

pub fn invalidate_cache(hll: &mut [u8]) {
    hll[HEADER_LEN - 1] |= STALE;
}

/// Raises register `index` of a checked HLL to `count` if lower, converting a sparse HLL
/// to dense when the sparse form cannot hold the result. Returns whether it changed.
pub fn set_register(
    hll: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, Corrupt> {
    if hll[ENCODING_AT] == DENSE {
        return Ok(dense::raise(&mut hll[HEADER_LEN..], index, count));
    }
    match sparse::set(hll, index, count, sparse_max_bytes)? {
        SetOutcome::Unchanged => Ok(false),
        SetOutcome::Raised => {
            invalidate_cache(hll);
            Ok(true)
        }
        SetOutcome::Promote => {
            to_dense(hll)?;
            Ok(dense::raise(&mut hll[HEADER_LEN..], index, count))
        }
    }
}

/// Adds `element` to a checked HLL; returns whether a register changed.
pub fn add(hll: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = murmur::register_and_run(element);
    set_register(hll, index, count, sparse_max_bytes)
}

/// Converts a checked HLL to dense in place; returns whether it was sparse.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if hll[ENCODING_AT] == DENSE {
        return Ok(false);
    }
    *hll = sparse::to_dense(hll)?;
    Ok(true)
}

/// The estimated cardinality of a checked HLL, computed from its registers.
pub fn count(hll: &[u8]) -> Result<u64, Corrupt> {
    let histogram = match hll[ENCODING_AT] {
        DENSE => dense::histogram(&hll[HEADER_LEN..]),
        _ => sparse::histogram(hll)?,
    };
    Ok(estimate::cardinality(&histogram))
}

/// Raises each of `max` (one byte per register) to the HLL's register where that is
/// higher: the union of HLLs is the register-wise maximum.
pub fn merge_into(max: &mut [u8], hll: &[u8]) -> Result<(), Corrupt> {
    if hll[ENCODING_AT] == DENSE {
        for (slots, group) in max
            .chunks_exact_mut(4)
            .zip(dense::groups(&hll[HEADER_LEN..]))
        {
            for (slot, value) in slots.iter_mut().zip(group) {
                *slot = (*slot).max(value);
            }
        }
        return Ok(());
    }
    sparse::for_each_register(hll, |index, value| {
        if let Some(slot) = max.get_mut(index) {
            *slot = (*slot).max(value);
        }
    })
}

/// The estimated cardinality of registers held one per byte (a union built by
/// [`merge_into`]).
pub fn count_registers(registers: &[u8]) -> u64 {
    let mut histogram = [0u64; 64];
    for &value in registers {
        histogram[usize::from(value & REGISTER_MAX)] += 1;
    }
    estimate::cardinality(&histogram)
}

/// The value of every register of a dense HLL.
pub fn dense_registers(hll: &[u8]) -> impl Iterator<Item = u8> + '_ {
    dense::values(&hll[HEADER_LEN..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_hll_is_sparse_empty_and_cached() {
        let hll = new_sparse();
        assert_eq!(hll.len(), HEADER_LEN + 2);
        assert_eq!(encoding(&hll), Ok(Encoding::Sparse));
        assert_eq!(cached_cardinality(&hll), Some(0));
        assert_eq!(count(&hll), Ok(0));
        assert_eq!(sparse::decode(&hll), "Z:16384");
    }

    #[test]
    fn sparse_and_dense_agree_and_promotion_happens_past_the_limit() {
        let mut sparse_hll = new_sparse();
        let mut dense_hll = new_sparse();
        to_dense(&mut dense_hll).unwrap();
        assert_eq!(dense_hll.len(), DENSE_LEN);
        for n in 0..2000u32 {
            let element = n.to_string();
            let a = add(&mut sparse_hll, element.as_bytes(), 3000).unwrap();
            let b = add(&mut dense_hll, element.as_bytes(), 3000).unwrap();
            assert_eq!(a, b, "element {n}");
        }
        assert_eq!(count(&sparse_hll), count(&dense_hll));
        assert_eq!(encoding(&sparse_hll), Ok(Encoding::Dense));
        let estimate = count(&dense_hll).unwrap();
        assert!((1900..2100).contains(&estimate), "{estimate}");
        invalidate_cache(&mut sparse_hll);
        assert_eq!(cached_cardinality(&sparse_hll), None);
        store_cardinality(&mut sparse_hll, estimate);
        assert_eq!(cached_cardinality(&sparse_hll), Some(estimate));
    }

    #[test]
    fn corrupt_sparse_opcodes_are_detected() {
        let mut hll = new_sparse();
        hll.truncate(HEADER_LEN + 1);
        hll.push(0x00);
        assert_eq!(count(&hll), Err(Corrupt));
        assert_eq!(to_dense(&mut hll), Err(Corrupt));
        let mut max = vec![0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &hll), Err(Corrupt));
        assert_eq!(encoding(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"), Err(NotHll));
        assert_eq!(encoding(b"HYLL\0\0\0\0\0\0\0\0\0\0\0\0"), Err(NotHll));
        assert_eq!(encoding(b"HYL"), Err(NotHll));
    }
}
