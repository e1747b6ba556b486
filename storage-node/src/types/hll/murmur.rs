//! The (register, run length) pair an element maps to, from its MurmurHash64A
//! (`crate::types::murmur`).
//!
//! Redis reads the 8-byte blocks little-endian on every platform, so the hash (and with it
//! every register an element touches) is the same on any machine; this does the same.

use super::{P, Q, REGISTERS};
use crate::types::murmur::murmur_hash64a;

/// The seed Redis's `hllPatLen` hashes with.
const SEED: u32 = 0xadc8_3b19;

/// The register `element` belongs to (the hash's low 14 bits) and the length of the
/// `000...1` pattern in the remaining bits, counting the final 1: from 1 to `Q + 1`.
pub fn register_and_run(element: &[u8]) -> (usize, u8) {
    let hash = murmur_hash64a(element, u64::from(SEED));
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The bit above the 50 used ones stops the count at Q + 1 when they are all zero.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_maps_to_a_register_and_a_run_in_range() {
        let (index, run) = register_and_run(b"hello");
        assert!(index < REGISTERS);
        assert!((1..=Q as u8 + 1).contains(&run));
    }
}
