//! Which part of a split Bloom filter an item belongs to, the part keys, and how large
//! each part is reserved.
//!
//! **The item hash is fixed forever**: the filters it fills outlive any proxy version, and
//! an item routed to another part after an upgrade would read as absent. It is FNV-1a 64
//! (offset basis XOR [`SEED`]) over the item's bytes, finished with the SplitMix64 mixer so
//! every bit depends on every input bit, and reduced to `0..parts` by the high half of a
//! 128-bit product (Lemire's multiply-shift), not by a modulo of the weaker low bits. It
//! shares nothing with the MurmurHash64A the part filters hash items with, so an item's
//! part says nothing about its bits inside the part. `DefaultHasher` is not used: Rust
//! promises it stable neither across releases nor across processes.
//!
//! **Sizing**: `BF.RESERVE name ε n` on `k` parts gives each part the capacity
//! `m + ⌈4·√m⌉` with `m = ⌈n/k⌉` and the same error rate ε. Items fall into parts as
//! a binomial (n, 1/k) draw: mean n/k, standard deviation below √(n/k); four standard
//! deviations of headroom keep every part under its capacity unless n items land very
//! unevenly. A lookup touches exactly one part, so the filter's false-positive rate is
//! that one part's: at most ε while the part holds at most its capacity.

/// Mixed into FNV-1a's offset basis: "SplitBlm" in ASCII. Never change it.
const SEED: u64 = 0x5370_6c69_7442_6c6d;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The stable 64-bit hash of an item (see the module doc).
pub fn item_hash(item: &[u8]) -> u64 {
    let mut hash = FNV_OFFSET_BASIS ^ SEED;
    for &byte in item {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    // SplitMix64's finaliser.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// The part (0..parts) an item goes to.
pub fn part_of(item: &[u8], parts: u32) -> u32 {
    ((u128::from(item_hash(item)) * u128::from(parts)) >> 64) as u32
}

/// The key of part `n`: the name with the part number as its hash tag, so the parts
/// spread over the slots.
pub fn part_key(name: &[u8], n: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + 8);
    key.extend_from_slice(name);
    key.push(b'{');
    key.extend_from_slice(n.to_string().as_bytes());
    key.push(b'}');
    key
}

/// The capacity each of `parts` parts is reserved with for `capacity` items in all.
pub fn part_capacity(capacity: u64, parts: u32) -> u64 {
    let mean = capacity.div_ceil(u64::from(parts.max(1)));
    let headroom = (4.0 * (mean as f64).sqrt()).ceil() as u64;
    mean.saturating_add(headroom).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_never_changes() {
        // Pinned values (computed independently, in Python, from the definition above): a
        // change here re-routes every stored item.
        assert_eq!(item_hash(b""), 0x5092_4861_e113_82bc_u64);
        assert_eq!(part_of(b"alice", 1024), part_of(b"alice", 1024));
        let pinned: Vec<u32> = ["alice", "bob", "item:1", ""]
            .iter()
            .map(|s| part_of(s.as_bytes(), 1024))
            .collect();
        assert_eq!(pinned, vec![171, 587, 708, 322]);
    }

    #[test]
    fn items_spread_evenly() {
        let parts = 64;
        let mut counts = vec![0u32; parts as usize];
        for i in 0..64_000 {
            counts[part_of(format!("item:{i}").as_bytes(), parts) as usize] += 1;
        }
        // Mean 1000, standard deviation about 31: six of them either way.
        assert!(
            counts.iter().all(|&c| (810..=1190).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn parts_are_sized_with_headroom() {
        assert_eq!(part_capacity(1_000_000, 1024), 977 + 126);
        assert_eq!(part_capacity(100, 1024), 1 + 4);
        assert_eq!(part_capacity(1, 1), 1 + 4);
        assert_eq!(part_key(b"bf:users", 17), b"bf:users{17}");
    }
}
