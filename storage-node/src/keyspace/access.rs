//! The access word every key keeps beside it in its slot-table bucket (Redis's 24-bit
//! `robj.lru` field, plus 8 bits Redis does not have).
//!
//! - Bits 0..24: under an LRU (or no) `maxmemory-policy`, Redis's LRU clock of the last
//!   access (Unix seconds, 24 bits, wrapping: OBJECT IDLETIME); under an LFU policy,
//!   Redis's LFU word (`super::lfu`: minutes of the last decay and a logarithmic counter).
//! - Bits 24..31: the key's *arrival generation* ([`Arrivals`]).
//! - Bit 31, under an LRU policy: the key was read or written again since it arrived.
//!
//! # Ties: keys on probation first, the oldest arrival first
//! Both clocks are coarse, so the candidates eviction compares mostly tie: under LFU every
//! key nobody read since it was written sits at counter 5, under LRU every key touched in
//! the same second has the same idle time. Among equals the node evicts
//! - under LRU, a key nobody touched since it arrived before one that was (the LFU counter
//!   already says this under LFU);
//! - then the oldest arrival.
//!
//! A key written once and never wanted again (the bulk of what a skewed cache load's misses
//! bring in) thus leaves in the order it came, and a key that was read again outlives its
//! peers of the same second. Redis breaks these ties by an accident of its hash table (a
//! bucket's chain lists the newest key first, and sampling takes whole chains).
//!
//! Measured with `tests/bench/eviction.sh` (Zipf 0.99 over twice `maxmemory`, preloaded in
//! random order), node against redis-server: LFU 0.870 with the newest arrival first,
//! 0.878 with ties left to the pool's order, 0.882 with the oldest first (redis-server
//! 0.878); LRU 0.877-0.881 with the newest first, 0.881 with these rules (redis-server
//! 0.881-0.883, holding 1.4% more keys in the same memory). An earlier preload written
//! hottest key first had made the newest-first rule look far better than it is: it kept
//! the preload's hot end.

/// Redis's LRU clock keeps the low 24 bits of Unix seconds; idle times wrap at this value.
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

use super::lfu::Lfu;

/// The bits of the access word holding the arrival generation.
pub const GENERATION_MASK: u32 = 0x7F00_0000;

/// Under an LRU policy: the key was read or written again since it arrived.
const ACCESSED: u32 = 0x8000_0000;

/// Generations the word tells apart.
const GENERATIONS: u8 = 128;

/// The LRU clock (Redis's `LRU_CLOCK`): Unix seconds, low 24 bits.
pub fn lru_clock(now_ms: u64) -> u32 {
    (now_ms / 1000) as u32 & LRU_CLOCK_MAX
}

/// The access word of a key arriving now in `generation`, under an LFU policy (`lfu`)
/// or not.
pub fn arrival_word(lfu: Option<Lfu>, now_ms: u64, generation: u8) -> u32 {
    match lfu {
        Some(_) => Lfu::new_word(now_ms, generation),
        None => new_lru_word(now_ms, generation),
    }
}

/// `word` after an access now, under an LFU policy (`lfu`) or not.
pub fn touched(lfu: Option<Lfu>, word: u32, now_ms: u64) -> u32 {
    match lfu {
        Some(lfu) => lfu.touched(word, now_ms),
        None => touched_lru(word, now_ms),
    }
}

/// The access word of a key arriving now in `generation` under an LRU policy.
fn new_lru_word(now_ms: u64, generation: u8) -> u32 {
    (u32::from(generation) << 24) | lru_clock(now_ms)
}

/// `word` after an access now under an LRU policy: the clock refreshed, the generation kept.
fn touched_lru(word: u32, now_ms: u64) -> u32 {
    (word & GENERATION_MASK) | ACCESSED | lru_clock(now_ms)
}

/// Under an LRU policy, whether the key of `word` was read or written again since it
/// arrived.
pub fn accessed_since_arrival(word: u32) -> bool {
    word & ACCESSED != 0
}

/// Seconds a key with access word `word` has been idle (Redis's `estimateObjectIdleTime`).
/// Only the 24 clock bits count, so idle times match Redis's, wrap included.
pub fn idle_seconds(word: u32, now_ms: u64) -> u64 {
    let clock = lru_clock(now_ms);
    let lru = word & LRU_CLOCK_MAX;
    if clock >= lru {
        u64::from(clock - lru)
    } else {
        u64::from(clock + (LRU_CLOCK_MAX - lru))
    }
}

/// `word` set `idle` seconds in the past (RESTORE ... IDLETIME, Redis's
/// `objectSetLRUOrLFU`), including how Redis wraps (and, for absurd values, overflows)
/// the arithmetic.
pub fn with_idle(word: u32, idle: i64, now_ms: u64) -> u32 {
    let clock = i64::from(lru_clock(now_ms));
    // Redis scales by its clock resolution (1000 ms): `idle * 1000 / 1000`, in 64 bits.
    let idle = idle.wrapping_mul(1000) / 1000;
    let mut stamp = clock.wrapping_sub(idle);
    if stamp < 0 {
        stamp = stamp.wrapping_add(i64::from(LRU_CLOCK_MAX));
    }
    (word & !LRU_CLOCK_MAX) | (stamp as u32 & LRU_CLOCK_MAX)
}

/// Generations a keyspace's worth of arrivals spans: with the database holding `len` keys,
/// the generation turns every `len / 16` new keys, so the 128 generations the word can tell
/// apart cover 8 times the keyspace. A key older than that wraps round to look young and
/// loses its place among its equals until it ages again; it is only a tie-break, between
/// keys the policy's own measure cannot tell apart.
const GENERATIONS_PER_KEYSPACE: usize = 16;

/// The arrival generation of a database (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct Arrivals {
    current: u8,
    since_turn: usize,
}

impl Arrivals {
    /// Counts a new key in a database holding `len` keys; returns its generation.
    pub fn arrive(&mut self, len: usize) -> u8 {
        self.since_turn += 1;
        if self.since_turn >= (len / GENERATIONS_PER_KEYSPACE).max(1) {
            self.since_turn = 0;
            self.current = (self.current + 1) % GENERATIONS;
        }
        self.current
    }

    /// How long ago the key of `word` arrived, in generations (0 for the current one).
    pub fn age(&self, word: u32) -> u64 {
        let generation = ((word & GENERATION_MASK) >> 24) as u8;
        u64::from(self.current.wrapping_sub(generation) % GENERATIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_turn_every_sixteenth_of_the_keyspace_and_older_ranks_higher() {
        let mut arrivals = Arrivals::default();
        let first = arrivals.arrive(160);
        let word = |generation| Lfu::new_word(0, generation);
        assert_eq!(arrivals.age(word(first)), 0);
        for _ in 0..9 {
            arrivals.arrive(160);
        }
        let later = arrivals.arrive(160);
        assert_eq!(later, first + 1);
        assert_eq!(arrivals.age(word(first)), 1);
        assert_eq!(arrivals.age(word(later)), 0);
        // An empty database turns the generation on every arrival; after the 128 the word
        // tells apart, ages wrap round.
        assert_eq!(arrivals.arrive(0), later + 1);
        for _ in 0..GENERATIONS {
            arrivals.arrive(0);
        }
        assert_eq!(arrivals.age(word(later)), 1);
    }

    #[test]
    fn an_lru_access_marks_the_key_and_keeps_its_generation() {
        let now_ms = 1_700_000_000_000;
        let word = new_lru_word(now_ms - 5000, 100);
        assert!(!accessed_since_arrival(word));
        let touched = touched_lru(word, now_ms);
        assert!(accessed_since_arrival(touched));
        assert_eq!(touched & GENERATION_MASK, word & GENERATION_MASK);
        assert_eq!(idle_seconds(touched, now_ms), 0);
        assert!(accessed_since_arrival(with_idle(touched, 7, now_ms)));
    }

    #[test]
    fn idle_time_uses_redis_24_bit_clock() {
        let now_ms = 1_700_000_000_000;
        let clock = lru_clock(now_ms);
        assert_eq!(idle_seconds(clock, now_ms), 0);
        assert_eq!(idle_seconds(clock - 90, now_ms), 90);
        assert_eq!(idle_seconds(with_idle(0, 1000, now_ms), now_ms), 1000);
        assert_eq!(idle_seconds(with_idle(0, 0, now_ms), now_ms), 0);
        let word = new_lru_word(now_ms - 5000, 9);
        assert_eq!(idle_seconds(word, now_ms), 5);
        assert_eq!(
            touched_lru(word, now_ms),
            new_lru_word(now_ms, 9) | ACCESSED
        );
        assert_eq!(with_idle(word, 7, now_ms) >> 24, 9, "the generation stays");
    }

    #[test]
    fn huge_idle_times_wrap_like_redis() {
        // Observed on redis-server 7.0 with its 24-bit clock at 90358 (resp. 90359).
        let at = |clock24: u64| (0x6500_0000u64 + clock24) * 1000;
        assert_eq!(
            idle_seconds(with_idle(0, 99_999_999_999_999, at(90358)), at(90358)),
            8_011_775
        );
        assert_eq!(
            idle_seconds(with_idle(0, 16_000_000, at(90359)), at(90359)),
            16_000_000
        );
        assert_eq!(
            idle_seconds(with_idle(0, i64::MAX, at(90359)), at(90359)),
            16_777_214
        );
    }
}
