//! MurmurHash2, 64-bit version A (`MurmurHash64A`): the hash Redis's HyperLogLog feeds
//! every element through, and the one RedisBloom hashes items with. One implementation
//! for both.
//!
//! The 8-byte blocks are read little-endian on every platform, as Redis does, so the hash
//! is the same on any machine. The seed is 64 bits wide; Redis's 32-bit seed is
//! zero-extended exactly as its C code widens it.

const M: u64 = 0xc6a4_a793_5bd1_e995;
const R: u32 = 47;

pub fn murmur_hash64a(key: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
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
    }

    #[test]
    fn the_empty_key_with_seed_zero_hashes_to_zero() {
        // The seed mixed three times: with seed 0 it stays 0.
        assert_eq!(murmur_hash64a(b"", 0), 0);
    }
}
