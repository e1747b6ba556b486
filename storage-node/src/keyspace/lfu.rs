//! Access frequency under an LFU `maxmemory-policy` (OBJECT FREQ), as Redis keeps it.
//!
//! Under an LFU policy the key's access word (`super::access`) holds Redis's LFU word
//! instead of an LRU clock: the minute of the last decrement in bits 8..24 and an 8-bit
//! logarithmic counter in bits 0..8. New keys start at 5 (`LFU_INIT_VAL`) so they are not evicted before
//! they had a chance to be read; each access first decays the counter by one per
//! `lfu-decay-time` minutes passed, then raises it with probability
//! `1 / ((counter - 5) * lfu-log-factor + 1)`. Switching policies at run time leaves the
//! field to be read the other way, exactly as Redis warns in its OBJECT FREQ error.
//!
//! The word's top 8 bits hold the key's arrival generation (`super::access`), which every
//! change here keeps.

use rand::Rng;

use super::access::GENERATION_MASK;

const INIT_VAL: u32 = 5;
const COUNTER_MAX: u32 = 255;

/// The LFU settings, present only while an LFU policy is selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lfu {
    pub log_factor: u64,
    /// Minutes per one step of decay; 0 never decays.
    pub decay_time: u64,
}

/// Minutes since the epoch, in 16 bits (Redis's `LFUGetTimeInMinutes`).
fn minutes(now_ms: u64) -> u32 {
    ((now_ms / 1000 / 60) & 0xFFFF) as u32
}

/// Minutes since `then`, allowing for one wrap of the 16-bit clock.
fn minutes_since(then: u32, now_ms: u64) -> u64 {
    let now = minutes(now_ms);
    if now >= then {
        u64::from(now - then)
    } else {
        u64::from(0xFFFF - then + now)
    }
}

impl Lfu {
    /// The LFU word of a key created now, arriving in `generation`.
    pub fn new_word(now_ms: u64, generation: u8) -> u32 {
        (u32::from(generation) << 24) | (minutes(now_ms) << 8) | INIT_VAL
    }

    /// `word` with its counter set to `frequency` as of now (RESTORE ... FREQ).
    pub fn with_frequency(word: u32, frequency: u8, now_ms: u64) -> u32 {
        (word & GENERATION_MASK) | (minutes(now_ms) << 8) | u32::from(frequency)
    }

    /// The counter after decay (what OBJECT FREQ shows), without changing the word.
    pub fn frequency(self, word: u32, now_ms: u64) -> u32 {
        let counter = word & 0xFF;
        if self.decay_time == 0 {
            return counter;
        }
        let periods = minutes_since((word >> 8) & 0xFFFF, now_ms) / self.decay_time;
        counter.saturating_sub(periods.min(u64::from(COUNTER_MAX)) as u32)
    }

    /// The word after an access: decayed, then raised with the logarithmic probability.
    pub fn touched(self, word: u32, now_ms: u64) -> u32 {
        let mut counter = self.frequency(word, now_ms);
        if counter < COUNTER_MAX {
            let base = counter.saturating_sub(INIT_VAL) as f64;
            let chance = 1.0 / (base * self.log_factor as f64 + 1.0);
            if rand::thread_rng().gen::<f64>() < chance {
                counter += 1;
            }
        }
        (word & GENERATION_MASK) | (minutes(now_ms) << 8) | counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_log_factor_every_access_counts_up_to_255() {
        let lfu = Lfu {
            log_factor: 0,
            decay_time: 0,
        };
        let mut word = Lfu::new_word(0, 7);
        assert_eq!(lfu.frequency(word, 0), 5);
        for _ in 0..300 {
            word = lfu.touched(word, 0);
        }
        assert_eq!(lfu.frequency(word, 0), 255);
        assert_eq!(word >> 24, 7, "an access keeps the arrival generation");
    }

    #[test]
    fn the_counter_decays_one_step_per_period() {
        let lfu = Lfu {
            log_factor: 10,
            decay_time: 1,
        };
        let word = Lfu::new_word(0, 255);
        assert_eq!(lfu.frequency(word, 3 * 60 * 1000), 2);
        assert_eq!(lfu.frequency(word, 60 * 60 * 1000), 0);
    }
}
