//! Server-wide counters shown by INFO and reset by CONFIG RESETSTAT, the sampler behind the
//! `instantaneous_*` rates, and what the process itself reports about its memory and CPU.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::clients::lock;
use super::Shared;

/// How many samples the instantaneous rates average (Redis: `STATS_METRIC_SAMPLES`).
const SAMPLES: usize = 16;
/// How often the rates are sampled (Redis samples in `serverCron`, every 100 ms by default).
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// Counters updated from every connection without taking the keyspace lock.
        #[derive(Default, Debug)]
        pub struct Stats {
            $(pub $name: AtomicU64,)*
            /// The keyspace's own counters (hits, misses, expired keys) at the last
            /// RESETSTAT: INFO shows the difference.
            keyspace_base: Mutex<KeyspaceCounters>,
            rates: Mutex<Rates>,
        }

        impl Stats {
            /// Zeroes every counter (CONFIG RESETSTAT). The keyspace's counters live with
            /// the databases, so their current values become the new zero.
            pub fn reset(&self, keyspace_now: KeyspaceCounters) {
                $(self.$name.store(0, Relaxed);)*
                *lock(&self.keyspace_base) = keyspace_now;
                *lock(&self.rates) = Rates::default();
            }
        }
    };
}

counters! {
    total_connections_received,
    total_commands_processed,
    rejected_connections,
    total_net_input_bytes,
    total_net_output_bytes,
    total_error_replies,
    evicted_clients,
}

/// Counters kept by the keyspace itself.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct KeyspaceCounters {
    pub hits: u64,
    pub misses: u64,
    pub expired_keys: u64,
    pub evicted_keys: u64,
}

impl KeyspaceCounters {
    /// These counters minus the ones at the last RESETSTAT.
    fn since(self, base: KeyspaceCounters) -> KeyspaceCounters {
        KeyspaceCounters {
            hits: self.hits.saturating_sub(base.hits),
            misses: self.misses.saturating_sub(base.misses),
            expired_keys: self.expired_keys.saturating_sub(base.expired_keys),
            evicted_keys: self.evicted_keys.saturating_sub(base.evicted_keys),
        }
    }
}

/// One rate: the last raw value seen and a ring of per-second rates.
#[derive(Default, Debug)]
struct Rate {
    last: u64,
    ring: [f64; SAMPLES],
}

impl Rate {
    fn record(&mut self, slot: usize, value: u64, seconds: f64) {
        let delta = value.saturating_sub(self.last);
        self.last = value;
        self.ring[slot] = if seconds > 0.0 {
            delta as f64 / seconds
        } else {
            0.0
        };
    }

    fn mean(&self) -> f64 {
        self.ring.iter().sum::<f64>() / SAMPLES as f64
    }
}

#[derive(Default, Debug)]
struct Rates {
    last_sample: Option<Instant>,
    slot: usize,
    ops: Rate,
    input: Rate,
    output: Rate,
}

/// The instantaneous rates INFO shows.
#[derive(Clone, Copy, Debug, Default)]
pub struct InstantRates {
    pub ops_per_sec: u64,
    pub input_kbps: f64,
    pub output_kbps: f64,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    /// Adds to a counter that only commands change (and RESETSTAT, itself a command): they
    /// run one at a time under the keyspace lock, so a plain load and store is exact. It runs
    /// for every command, and `add`'s locked read-modify-write waits for all earlier stores
    /// to reach the cache, the costliest instruction on that path.
    pub fn add_under_keyspace_lock(counter: &AtomicU64, n: u64) {
        counter.store(counter.load(Relaxed) + n, Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }

    /// The keyspace's counters since the last RESETSTAT.
    pub fn keyspace_since_reset(&self, keyspace_now: KeyspaceCounters) -> KeyspaceCounters {
        keyspace_now.since(*lock(&self.keyspace_base))
    }

    /// Takes one sample of the command and network counters.
    pub fn sample(&self) {
        self.sample_at(Instant::now());
    }

    fn sample_at(&self, now: Instant) {
        let ops = Self::get(&self.total_commands_processed);
        let input = Self::get(&self.total_net_input_bytes);
        let output = Self::get(&self.total_net_output_bytes);
        let mut rates = lock(&self.rates);
        let Some(previous) = rates.last_sample.replace(now) else {
            // The first sample only sets the baseline.
            rates.ops.last = ops;
            rates.input.last = input;
            rates.output.last = output;
            return;
        };
        let seconds = now.duration_since(previous).as_secs_f64();
        let slot = rates.slot;
        rates.ops.record(slot, ops, seconds);
        rates.input.record(slot, input, seconds);
        rates.output.record(slot, output, seconds);
        rates.slot = (slot + 1) % SAMPLES;
    }

    pub fn instant_rates(&self) -> InstantRates {
        let rates = lock(&self.rates);
        InstantRates {
            ops_per_sec: rates.ops.mean().round() as u64,
            input_kbps: rates.input.mean() / 1024.0,
            output_kbps: rates.output.mean() / 1024.0,
        }
    }
}

/// Samples the rates every [`SAMPLE_PERIOD`] for as long as the node runs.
pub async fn sample_forever(shared: Arc<Shared>) {
    let mut ticker = tokio::time::interval(SAMPLE_PERIOD);
    loop {
        ticker.tick().await;
        shared.stats.sample();
    }
}

/// What the process's own `/proc` files say about its memory, in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessMemory {
    /// Resident set size now (`VmRSS`).
    pub rss: u64,
    /// Highest resident set size so far (`VmHWM`).
    pub peak_rss: u64,
}

/// Zeroes every counter INFO reports (CONFIG RESETSTAT, and after the AOF is replayed at
/// start: Redis's loading client counts nothing).
pub fn reset_all(shared: &Shared, keyspace: &mut crate::keyspace::Keyspace) {
    let (hits, misses) = keyspace.hits_and_misses();
    shared.stats.reset(KeyspaceCounters {
        hits,
        misses,
        expired_keys: keyspace.expired_keys(),
        evicted_keys: keyspace.eviction.evicted_keys,
    });
    keyspace.error_stats.reset();
    keyspace.command_stats.reset();
}

/// Reads `/proc/self/status`. Zeroes where the file is unavailable (not Linux).
pub fn process_memory() -> ProcessMemory {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |field: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .map_or(0, |n| n * 1024)
    };
    ProcessMemory {
        rss: kib("VmRSS:"),
        peak_rss: kib("VmHWM:"),
    }
}

/// Total memory of the machine (`MemTotal` in `/proc/meminfo`), in bytes.
pub fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// CPU time used, in seconds, as `getrusage` reports it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuTimes {
    pub user: f64,
    pub sys: f64,
    pub children_user: f64,
    pub children_sys: f64,
}

/// Linux reports `/proc/<pid>/stat` times in clock ticks, which are 100 per second on every
/// architecture Linux supports today (`USER_HZ`).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Reads utime, stime, cutime and cstime from a `/proc/.../stat` file.
fn cpu_times_from(path: &str) -> CpuTimes {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after_name = text.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<f64> = after_name
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    // After the name come field 3 (state) onwards, so field N is at index N - 3.
    let field = |n: usize| fields.get(n - 3).copied().unwrap_or(0.0) / CLOCK_TICKS_PER_SECOND;
    CpuTimes {
        user: field(14),
        sys: field(15),
        children_user: field(16),
        children_sys: field(17),
    }
}

/// CPU time of the whole process.
pub fn process_cpu() -> CpuTimes {
    cpu_times_from("/proc/self/stat")
}

/// CPU time of the process's main thread (its first task).
pub fn main_thread_cpu() -> CpuTimes {
    let pid = std::process::id();
    cpu_times_from(&format!("/proc/self/task/{pid}/stat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_average_the_samples() {
        let stats = Stats::default();
        let start = Instant::now();
        stats.sample_at(start);
        Stats::add(&stats.total_commands_processed, 1600);
        stats.sample_at(start + Duration::from_secs(1));
        // 1600 ops in one second, in one of 16 samples.
        assert_eq!(stats.instant_rates().ops_per_sec, 100);
        stats.reset(KeyspaceCounters::default());
        assert_eq!(stats.instant_rates().ops_per_sec, 0);
    }

    #[test]
    fn keyspace_counters_restart_from_reset() {
        let stats = Stats::default();
        let now = KeyspaceCounters {
            hits: 5,
            misses: 3,
            expired_keys: 2,
            evicted_keys: 0,
        };
        stats.reset(now);
        let later = KeyspaceCounters {
            hits: 7,
            misses: 3,
            expired_keys: 4,
            evicted_keys: 0,
        };
        assert_eq!(
            stats.keyspace_since_reset(later),
            KeyspaceCounters {
                hits: 2,
                misses: 0,
                expired_keys: 2,
                evicted_keys: 0,
            }
        );
    }

    #[test]
    fn proc_files_are_read() {
        assert!(process_memory().rss > 0);
        assert!(total_system_memory() > 0);
        let cpu = process_cpu();
        assert!(cpu.user >= 0.0 && cpu.sys >= 0.0);
    }
}
