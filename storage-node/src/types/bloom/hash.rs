//! The item hash: MurmurHash64A, twice, as RedisBloom's `bloom_calc_hash64` computes it
//! (filters created with `BLOOM_OPT_FORCE64`, which every RedisBloom 2.x filter is).
//!
//! The first hash uses the fixed seed below; the second is seeded with the first. Bit `i`
//! of an item is then `(a + i * b) mod bits`, in wrapping 64-bit arithmetic.

/// The seed of the first hash (the MurmurHash64A multiplier, as RedisBloom uses it).
const FIRST_SEED: u64 = 0xc6a4_a793_5bd1_e995;

use crate::types::murmur::murmur_hash64a;

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
