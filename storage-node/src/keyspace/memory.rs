//! What the allocator holds: the one reader of jemalloc's statistics, for INFO memory,
//! `maxmemory` (`super::evict`) and the MEMORY command.
//!
//! `used_memory` is jemalloc's `stats.allocated` less what its thread caches keep
//! (`tcache_bytes`): the bytes of every live allocation of the process (data, client
//! buffers, scripts), counted by the allocator itself, so it cannot drift from the truth
//! the way a sum of per-value estimates does. A block freed into a thread's cache still
//! counts as allocated for jemalloc, though nobody holds it; Redis's `used_memory`
//! (zmalloc's own count of live allocations) does not count it, so neither does the node's.
//! jemalloc refreshes its statistics only when asked (advancing its `epoch`), which costs a
//! few microseconds, so the check before every command reuses a recent reading
//! ([`UsedMemory`]).
//! Outside the node's binary (unit tests) jemalloc is not the global allocator and the
//! figures are jemalloc's own small ones; reading them never fails the caller.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use tikv_jemalloc_ctl::{epoch, epoch_mib, stats, Access, AsName, Mib};

/// The allocator's figures, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Live allocations (`stats.allocated` less the thread caches' blocks): INFO
    /// `used_memory`.
    pub allocated: u64,
    /// Pages holding live allocations (`stats.active`).
    pub active: u64,
    /// Pages mapped and resident (`stats.resident`).
    pub resident: u64,
}

struct Reader {
    epoch: epoch_mib,
    allocated: stats::allocated_mib,
    active: stats::active_mib,
    resident: stats::resident_mib,
    /// `stats.arenas.<all>.tcache_bytes`; None if this jemalloc does not have it.
    cached: Option<Mib<[usize; 4]>>,
}

/// The freed blocks all thread caches keep, over all arenas (4096 is jemalloc's
/// `MALLCTL_ARENAS_ALL`).
const CACHED: &[u8] = b"stats.arenas.4096.tcache_bytes\0";

fn reader() -> Option<&'static Reader> {
    static READER: OnceLock<Option<Reader>> = OnceLock::new();
    READER
        .get_or_init(|| {
            Some(Reader {
                epoch: epoch::mib().ok()?,
                allocated: stats::allocated::mib().ok()?,
                active: stats::active::mib().ok()?,
                resident: stats::resident::mib().ok()?,
                cached: CACHED.name().mib().ok(),
            })
        })
        .as_ref()
}

/// The highest `allocated` seen (INFO `used_memory_peak`).
static PEAK: AtomicU64 = AtomicU64::new(0);

/// Fresh figures (the allocator's statistics are refreshed first). Zeroes if jemalloc
/// cannot be asked.
pub fn read() -> AllocatorStats {
    let Some(reader) = reader() else {
        return AllocatorStats::default();
    };
    if reader.epoch.advance().is_err() {
        return AllocatorStats::default();
    }
    let figure = |value: tikv_jemalloc_ctl::Result<usize>| value.map_or(0, |v| v as u64);
    let cached = reader.cached.as_ref().map_or(0, |mib| figure(mib.read()));
    let stats = AllocatorStats {
        allocated: figure(reader.allocated.read()).saturating_sub(cached),
        active: figure(reader.active.read()),
        resident: figure(reader.resident.read()),
    };
    PEAK.fetch_max(stats.allocated, Relaxed);
    stats
}

/// The highest `used_memory` seen so far.
pub fn peak() -> u64 {
    PEAK.load(Relaxed)
}

/// `used_memory` for the eviction check before every command.
///
/// Asking jemalloc means refreshing its statistics (its `epoch`), which merges every
/// arena's counters: about 30 µs, and 8% of the node's CPU under the eviction benchmark
/// when it was done every millisecond. So a reading is kept for up to
/// [`READING_MS`] and [`CHECKS_PER_READING`] checks, and meanwhile the writes that came
/// in are added to it (their arguments' bytes: what a write stores is about what it was
/// sent), so pipelined writes cannot run past `maxmemory` on an old figure; past
/// [`GROWTH_PER_READING`] of them the allocator is asked again.
/// Lives in the keyspace, so it is only used under its lock.
#[derive(Debug, Default)]
pub struct UsedMemory {
    bytes: u64,
    read_ms: u64,
    checks: u32,
    grown: u64,
}

/// How long a reading of the allocator is used.
pub const READING_MS: u64 = 10;
/// Checks answered from one reading.
pub const CHECKS_PER_READING: u32 = 256;
/// Bytes of writes added to a reading before the allocator is asked again.
pub const GROWTH_PER_READING: u64 = 1 << 20;

impl UsedMemory {
    /// The allocated bytes at `now_ms`, from the allocator or from a recent reading plus
    /// the writes since; `incoming` is what the command about to run will store (its
    /// arguments' bytes; 0 for a command that stores nothing).
    pub fn current(&mut self, now_ms: u64, incoming: u64) -> u64 {
        self.checks += 1;
        if now_ms.abs_diff(self.read_ms) >= READING_MS
            || self.checks >= CHECKS_PER_READING
            || self.grown >= GROWTH_PER_READING
        {
            self.bytes = read().allocated;
            self.read_ms = now_ms;
            self.checks = 0;
            self.grown = 0;
        }
        let used = self.bytes + self.grown;
        // Stored by the command about to run: the next check sees it (as Redis's does).
        self.grown += incoming;
        used
    }

    /// Eviction released about `bytes`: the reading stands lowered by as much until the
    /// next one, so the next command does not evict for memory already given back.
    pub fn released(&mut self, bytes: u64) {
        self.bytes = self.bytes.saturating_sub(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_reused_with_the_writes_since_added_then_renewed() {
        let mut used = UsedMemory::default();
        let at = 1_000_000;
        let first = used.current(at, 100);
        // The command that announced 100 bytes counts from the next check on.
        assert_eq!(used.current(at + 1, 0), first + 100);
        used.released(40);
        assert_eq!(used.current(at + 9, 7), first + 60);
        assert_eq!(used.current(at + 9, 0), first + 67);
        // Ten milliseconds on, the allocator is asked again and the estimate starts over.
        assert_eq!(used.current(at + 10, 0), read().allocated);
        // So it is once the writes since the reading reach GROWTH_PER_READING.
        used.current(at + 10, GROWTH_PER_READING - 1);
        assert_eq!(
            used.current(at + 10, 1),
            read().allocated + GROWTH_PER_READING - 1
        );
        assert_eq!(used.current(at + 10, 0), read().allocated);
    }
}
