//! Redis's approximated LRU/LFU/TTL: a few keys are sampled from each database, scored,
//! and kept in a pool of the 16 best candidates seen so far; eviction takes the best one
//! that still exists. The pool outlives one eviction, so good candidates found while
//! freeing memory for one command are still there for the next.

use rand::Rng;
use slotproxy::cluster::SLOT_COUNT;

use super::super::access::{accessed_since_arrival, idle_seconds};
use super::super::entry::Entry;
use super::super::Db;
use crate::config::memory::Policy;
use crate::types::CompactBytes;

/// Redis's `EVPOOL_SIZE`.
pub const POOL_SIZE: usize = 16;

/// How many entries a sample may walk past per key wanted (Redis's `dictGetSomeKeys`
/// gives up after `count * 10` steps).
const STEPS_PER_SAMPLE: usize = 10;

/// A candidate for eviction: higher `score` goes first.
#[derive(Debug)]
struct Candidate {
    score: u64,
    db: usize,
    /// The key's slot-table tag (32 bits of its hash): keys with different tags differ.
    tag: u32,
    key: CompactBytes,
}

#[derive(Debug, Default)]
pub struct Pool {
    /// Sorted by ascending score: the best candidate is last.
    candidates: Vec<Candidate>,
}

/// How evictable an entry is under `policy` (Redis's `idle` in `evictionPoolPopulate`):
/// seconds idle for LRU, 255 minus the decayed frequency for LFU (among equals, under LRU a
/// key not touched since it arrived first, then either way the older arrival:
/// `super::super::access`), and an earlier expiry time scores higher for volatile-ttl.
/// `access` is the entry's access word.
pub fn score(policy: Policy, db: &Db, entry: &Entry, access: u32, now_ms: u64) -> u64 {
    match policy {
        Policy::VolatileTtl => u64::MAX - entry.expire_at_ms(),
        _ if policy.is_lfu() => {
            let frequency = db.lfu.map_or(0, |lfu| lfu.frequency(access, now_ms));
            let rarity = 255 - u64::from(frequency.min(255));
            rarity << 8 | db.arrivals.age(access)
        }
        _ => {
            let unread = !accessed_since_arrival(access) as u64;
            idle_seconds(access, now_ms) << 8 | unread << 7 | db.arrivals.age(access)
        }
    }
}

/// Up to `count` entries of `db` from a random place on (keys with a TTL only when
/// `volatile_only`), walking slot tables and their buckets in order as Redis's
/// `dictGetSomeKeys` walks its buckets. Walks past at most about `count * 10` entries,
/// scaled by how rare keys with a TTL are, and at most once round the slots. Each entry is
/// handed to `visit` with its access word and tag. (A callback, not a vector: a vector was
/// an allocation per database per evicted key.)
pub fn sample(
    db: &Db,
    count: usize,
    volatile_only: bool,
    rng: &mut impl Rng,
    mut visit: impl FnMut(&Entry, u32, u32),
) {
    let eligible = if volatile_only {
        db.volatile_len()
    } else {
        db.len()
    };
    if eligible == 0 || db.slots.is_empty() {
        return;
    }
    let rarity = (db.len() / eligible).max(1);
    let mut steps_left = count
        .saturating_mul(STEPS_PER_SAMPLE)
        .saturating_mul(rarity);
    let mut found = 0;
    let mut slot = rng.gen_range(0..SLOT_COUNT);
    for _ in 0..SLOT_COUNT {
        let table = &db.slots[slot];
        let buckets = table.bucket_count();
        if table.len() > 0 && buckets > 0 {
            let start = rng.gen_range(0..buckets);
            for offset in 0..buckets {
                let Some((entry, access, tag)) = table.sampled_at((start + offset) % buckets)
                else {
                    continue;
                };
                steps_left = steps_left.saturating_sub(1);
                if !volatile_only || entry.has_expiry() {
                    visit(entry, access, tag);
                    found += 1;
                }
                if found >= count || (steps_left == 0 && found > 0) {
                    return;
                }
            }
        }
        slot = (slot + 1) % SLOT_COUNT;
    }
}

impl Pool {
    /// Offers a sampled key (Redis's `evictionPoolPopulate` insertion): kept if the pool
    /// has room or the key scores above the pool's worst, which then drops out. `tag` is
    /// the key's slot-table tag; `key` is read only when the key enters the pool or a
    /// pooled key has the same tag (comparing every pooled key with each sample was 4% of
    /// the node's CPU under SETs that each evict a key).
    pub fn offer<'k>(&mut self, db: usize, tag: u32, score: u64, key: impl Fn() -> &'k [u8]) {
        if let Some(index) = self
            .candidates
            .iter()
            .position(|c| c.db == db && c.tag == tag && c.key.as_slice() == key())
        {
            // Sampled again: its score is fresher now.
            self.candidates.remove(index);
        }
        let at = self.candidates.partition_point(|c| c.score < score);
        let candidate = |key: &[u8]| Candidate {
            score,
            db,
            tag,
            key: CompactBytes::new(key),
        };
        if self.candidates.len() >= POOL_SIZE {
            if at == 0 {
                return;
            }
            self.candidates.remove(0);
            self.candidates.insert(at - 1, candidate(key()));
            return;
        }
        self.candidates.insert(at, candidate(key()));
    }

    /// Takes the best candidate (its database and key).
    pub fn take_best(&mut self) -> Option<(usize, CompactBytes)> {
        self.candidates.pop().map(|c| (c.db, c.key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_keeps_the_sixteen_best_and_gives_the_best_first() {
        let mut pool = Pool::default();
        for score in 0..40u64 {
            let key = format!("k{score}");
            pool.offer(0, score as u32, score, || key.as_bytes());
        }
        pool.offer(0, 99, 1, || b"low");
        let mut taken = Vec::new();
        while let Some((_, key)) = pool.take_best() {
            taken.push(String::from_utf8_lossy(key.as_slice()).into_owned());
        }
        assert_eq!(taken.len(), POOL_SIZE);
        assert_eq!(taken[0], "k39");
        assert_eq!(taken[15], "k24");
    }

    #[test]
    fn a_key_offered_twice_is_kept_once_with_its_new_score() {
        let mut pool = Pool::default();
        pool.offer(0, 1, 5, || b"a");
        pool.offer(0, 2, 3, || b"b");
        pool.offer(0, 1, 1, || b"a");
        // Another key with a's tag is another key.
        pool.offer(0, 1, 0, || b"c");
        assert_eq!(
            pool.take_best().map(|(_, k)| k.as_slice().to_vec()),
            Some(b"b".to_vec())
        );
        assert_eq!(
            pool.take_best().map(|(_, k)| k.as_slice().to_vec()),
            Some(b"a".to_vec())
        );
        assert_eq!(
            pool.take_best().map(|(_, k)| k.as_slice().to_vec()),
            Some(b"c".to_vec())
        );
        assert!(pool.take_best().is_none());
    }
}
