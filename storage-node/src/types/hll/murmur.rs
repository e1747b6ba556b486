//! MurmurHash64A, the hash Redis's HyperLogLog feeds every element through, and the
//! (register, run length) pair an element maps to.
//!
//! Redis reads the 8-byte blocks little-endian on every platform, so the hash (and with it
//! every register an element touches) is the same on any machine; this does the same.

use super::{P, Q, REGISTERS};

/// The seed Redis's `hllPatLen` hashes with.
const SEED: u32 = 0xadc8_3b19;

/// MurmurHash2, 64-bit version A, as Redis's `MurmurHash64A`.
pub fn murmur_hash64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for block in blocks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(block);
        let mut k = u64::from_le_bytes(word);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate() {
            h ^= u64::from(byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` belongs to (the hash's low 14 bits) and the length of the
/// `000...1` pattern in the remaining bits, counting the final 1: from 1 to `Q + 1`.
pub fn register_and_run(element: &[u8]) -> (usize, u8) {
    let hash = murmur_hash64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The bit above the 50 used ones stops the count at Q + 1 when they are all zero.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_bytes_and_blocks_both_feed_the_hash() {
        assert_ne!(murmur_hash64a(b"", 0), murmur_hash64a(b"\0", 0));
        assert_ne!(
            murmur_hash64a(b"12345678a", 1),
            murmur_hash64a(b"12345678b", 1)
        );
        let (index, run) = register_and_run(b"hello");
        assert!(index < REGISTERS);
        assert!((1..=Q as u8 + 1).contains(&run));
    }
}
