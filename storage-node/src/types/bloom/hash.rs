//! The item hash: MurmurHash64A, twice, as RedisBloom's `bloom_calc_hash64` computes it
//! (filters created with `BLOOM_OPT_FORCE64`, which every RedisBloom 2.x filter is).
//!
//! The first hash uses the fixed seed below; the second is seeded with the first. Bit `i`
//! of an item is then `(a + i * b) mod bits`, in wrapping 64-bit arithmetic.

/// The seed of the first hash (the MurmurHash64A multiplier, as RedisBloom uses it).
const FIRST_SEED: u64 = 0xc6a4_a793_5bd1_e995;
const M: u64 = 0xc6a4_a793_5bd1_e995;
const R: u32 = 47;

/// An item's two hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashPair {
    pub a: u64,
    pub b: u64,
}

impl HashPair {
    pub fn of(item: &[u8]) -> HashPair {
        let a = murmur_hash64a(item, FIRST_SEED);
        HashPair {
            a,
            b: murmur_hash64a(item, a),
        }
    }

    /// The `i`-th bit position for a filter of `modulus` bits.
    pub fn position(&self, i: u64, modulus: u64) -> u64 {
        self.a.wrapping_add(i.wrapping_mul(self.b)) % modulus
    }
}

/// MurmurHash2, 64-bit version A, with a 64-bit seed; words are read little-endian, as on
/// the x86-64 and ARM machines RedisBloom runs on.
pub fn murmur_hash64a(key: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for word in &mut words {
        let mut k = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate() {
            h ^= (byte as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_bytes_change_the_hash() {
        assert_ne!(murmur_hash64a(b"", 0), murmur_hash64a(b"\0", 0));
        assert_ne!(
            murmur_hash64a(b"12345678a", 1),
            murmur_hash64a(b"12345678b", 1)
        );
    }

    #[test]
    fn known_value() {
        // MurmurHash64A of the empty key is the seed mixed three times: with seed 0 it is 0.
        assert_eq!(murmur_hash64a(b"", 0), 0);
    }
}
