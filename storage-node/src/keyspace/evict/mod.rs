//! `maxmemory`: before a command runs, keys are evicted until the memory the allocator
//! holds is back under the limit, as Redis 7.0's `performEvictions` does.
//!
//! - The figure compared with `maxmemory` is `used_memory` (`super::memory`, jemalloc's
//!   own count) minus what Redis does not count for eviction (`mem_not_counted_for_evict`:
//!   the AOF buffer and replicas' output buffers). Client buffers count, as in Redis; a
//!   client that announces a big bulk and never sends it holds only the bytes it sent
//!   (the decoder never allocates from an announced length), so it evicts nothing.
//! - The amount to free is taken once; keys are evicted, each one's size
//!   (`Entry::memory_usage`) added to what was freed, until that amount is reached, as Redis
//!   sums `zmalloc_used_memory` deltas.
//! - LRU, LFU and TTL policies take the best candidate of the pool (`pool`); random
//!   policies a random key, visiting the databases in turn.
//! - Every 16 keys the time is checked against `maxmemory-eviction-tenacity`'s budget;
//!   past it the command runs anyway and the rest is left to the cron ([`Outcome::Running`]).
//! - An evicted key is removed, propagated as DEL (UNLINK with `lazyfree-lazy-eviction`),
//!   announced as an `evicted` keyspace event and counted in `evicted_keys`.
//! - `Outcome::Fail` (nothing left to evict, or `noeviction`): the caller refuses
//!   `denyoom` commands with [`OOM`].

mod pool;

use std::time::Instant;

use super::memory::UsedMemory;
use super::Keyspace;
use crate::config::memory::{MemorySettings, Policy};
use crate::types::CompactBytes;

use pool::{sample, score};

/// Redis's `shared.oomerr`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// What an eviction pass achieved (Redis's `EVICT_OK`, `EVICT_RUNNING`, `EVICT_FAIL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit).
    Ok,
    /// Over the limit, but the time budget ran out while keys were still being evicted:
    /// the cron carries on, commands are not refused meanwhile.
    Running,
    /// Over the limit with nothing left that the policy may evict.
    Fail,
}

/// The eviction state the keyspace keeps.
#[derive(Debug, Default)]
pub struct Eviction {
    /// A copy of the settings (`Keyspace::apply_settings`).
    pub settings: Option<MemorySettings>,
    pool: pool::Pool,
    pub used: UsedMemory,
    /// Keys evicted since start (INFO `evicted_keys`).
    pub evicted_keys: u64,
    /// The database the random policies take a key from next.
    next_random_db: usize,
    /// The last pass ran out of time with memory still to free.
    pub running: bool,
    /// Whether the node was out of memory when the running EXEC or script started
    /// (Redis's `pre_command_oom_state`): its `denyoom` commands are then refused.
    pub pre_command_oom: bool,
}

/// Microseconds one pass may evict for (Redis's `evictionTimeLimitUs`): 50 µs per step of
/// tenacity up to 10, then growing 15% per step, unlimited at 100.
fn time_limit_us(tenacity: u64) -> u64 {
    match tenacity {
        0..=10 => 50 * tenacity,
        11..=99 => (500.0 * 1.15f64.powi((tenacity - 10) as i32)) as u64,
        _ => u64::MAX,
    }
}

impl Keyspace {
    /// Evicts keys until the node is under `maxmemory` (see the module doc), before a
    /// command whose arguments will store about `incoming` bytes. `not_counted` gives
    /// `mem_not_counted_for_evict`, asked only when over the limit. Keyspace notifications
    /// of the evictions go to the subscribers; `me`'s own copy into `my_out`.
    pub fn perform_evictions(
        &mut self,
        incoming: u64,
        not_counted: impl FnOnce() -> u64,
        me: u64,
        my_out: &mut bytes::BytesMut,
    ) -> Outcome {
        let Some(settings) = self.eviction.settings.clone() else {
            return Outcome::Ok;
        };
        if settings.maxmemory == 0 {
            self.eviction.running = false;
            return Outcome::Ok;
        }
        let used = self.eviction.used.current(self.now_ms, incoming);
        if used <= settings.maxmemory {
            self.eviction.running = false;
            return Outcome::Ok;
        }
        let counted = used.saturating_sub(not_counted());
        if counted <= settings.maxmemory {
            self.eviction.running = false;
            return Outcome::Ok;
        }
        if settings.policy == Policy::NoEviction {
            return Outcome::Fail;
        }
        let to_free = counted - settings.maxmemory;
        let limit_us = time_limit_us(settings.tenacity);
        let started = Instant::now();
        let mut freed = 0u64;
        let mut keys = 0u64;
        let outcome = loop {
            if freed >= to_free {
                break Outcome::Ok;
            }
            let Some((db, key)) = self.pick_victim(&settings) else {
                break Outcome::Fail;
            };
            freed += self.evict(db, &key, settings.lazy_eviction, me, my_out);
            keys += 1;
            if keys.is_multiple_of(16) && started.elapsed().as_micros() as u64 > limit_us {
                break Outcome::Running;
            }
        };
        self.eviction.used.released(freed);
        self.eviction.running = outcome == Outcome::Running;
        let took_ms = started.elapsed().as_millis() as u64;
        self.latency_monitor
            .add_if_needed("eviction-cycle", took_ms);
        outcome
    }

    /// Removes one key chosen for eviction, with its propagation and notification.
    /// Returns the bytes it held.
    fn evict(
        &mut self,
        db: usize,
        key: &[u8],
        lazy: bool,
        me: u64,
        my_out: &mut bytes::BytesMut,
    ) -> u64 {
        let Some(removed) = self.db(db).remove_evicted(key) else {
            return 0;
        };
        self.eviction.evicted_keys += 1;
        self.propagation.evicted(db, key, lazy);
        self.notify(
            crate::pubsub::notify::EVICTED,
            "evicted",
            key,
            db,
            me,
            my_out,
        );
        removed.memory_usage() as u64
    }

    /// The key to evict next under the policy, or None if no key may be evicted.
    fn pick_victim(&mut self, settings: &MemorySettings) -> Option<(usize, CompactBytes)> {
        let volatile_only = settings.policy.volatile_only();
        if settings.policy.is_random() {
            return self.random_victim(volatile_only);
        }
        let samples = settings.samples.clamp(1, 64) as usize;
        let now = self.now_ms;
        let mut rng = rand::thread_rng();
        // Every pick first adds fresh samples of each database to the pool, as Redis's
        // `evictionPoolPopulate` does, so the pool keeps the best keys seen over many picks.
        let pool = &mut self.eviction.pool;
        for (index, db) in self.dbs.iter().enumerate() {
            sample(
                db,
                samples,
                volatile_only,
                &mut rng,
                |entry, access, tag| {
                    let score = score(settings.policy, db, entry, access, now);
                    pool.offer(index, tag, score, || entry.key().as_slice());
                },
            );
        }
        // The best pooled candidate that still exists and is still eligible (a key sampled
        // just now always is, so this finds one whenever any key may be evicted).
        while let Some((db, key)) = self.eviction.pool.take_best() {
            let eligible = self.dbs[db]
                .stored(key.as_slice())
                .is_some_and(|e| !volatile_only || e.has_expiry());
            if eligible {
                return Some((db, key));
            }
        }
        None
    }

    /// A random key (with a TTL when `volatile_only`), from the databases in turn.
    fn random_victim(&mut self, volatile_only: bool) -> Option<(usize, CompactBytes)> {
        let count = self.dbs.len();
        let mut rng = rand::thread_rng();
        for _ in 0..count {
            let index = self.eviction.next_random_db % count;
            self.eviction.next_random_db = (index + 1) % count;
            let mut picked = None;
            sample(
                &self.dbs[index],
                1,
                volatile_only,
                &mut rng,
                |entry, _, _| {
                    picked = Some(entry.key().clone());
                },
            );
            if let Some(key) = picked {
                return Some((index, key));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenacity_gives_redis_time_limits() {
        assert_eq!(time_limit_us(0), 0);
        assert_eq!(time_limit_us(10), 500);
        assert_eq!(time_limit_us(11), 575);
        assert_eq!(time_limit_us(100), u64::MAX);
    }
}
