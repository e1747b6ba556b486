//! The allocator's own statistics (jemalloc's `stats.*` through tikv-jemalloc-ctl's safe
//! wrappers), for MEMORY STATS / MALLOC-STATS / PURGE.
//!
//! Only meaningful when the running binary's global allocator is jemalloc
//! (`crate::mem_allocator`); code that links the library with another allocator gets
//! `None` and MEMORY answers as Redis does built without jemalloc.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use tikv_jemalloc_ctl::{arenas, epoch, stats, Access, AsName};

/// Bytes allocated once the node had started, before serving (MEMORY STATS
/// `startup.allocated`).
static STARTUP_ALLOCATED: OnceLock<u64> = OnceLock::new();
/// The highest `allocated` seen by any reading (MEMORY STATS `peak.allocated`).
static PEAK_ALLOCATED: AtomicU64 = AtomicU64::new(0);

/// One reading of jemalloc's counters, in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllocatorStats {
    /// Bytes the program holds (`stats.allocated`).
    pub allocated: u64,
    /// Bytes in pages the allocator handed out (`stats.active`).
    pub active: u64,
    /// Bytes of physically resident allocator pages (`stats.resident`).
    pub resident: u64,
    /// The highest `allocated` seen so far.
    pub peak: u64,
}

fn uses_jemalloc() -> bool {
    crate::mem_allocator().starts_with("jemalloc")
}

/// The allocator's counters now, or None when the allocator is not jemalloc.
pub fn read() -> Option<AllocatorStats> {
    if !uses_jemalloc() {
        return None;
    }
    // jemalloc's counters are a snapshot refreshed by advancing the epoch.
    epoch::advance().ok()?;
    let allocated = stats::allocated::read().ok()? as u64;
    let peak = PEAK_ALLOCATED.fetch_max(allocated, Relaxed).max(allocated);
    Some(AllocatorStats {
        allocated,
        active: stats::active::read().ok()? as u64,
        resident: stats::resident::read().ok()? as u64,
        peak,
    })
}

/// Records `startup.allocated`; the binary calls it once, before serving.
pub fn record_startup() {
    if let Some(now) = read() {
        let _ = STARTUP_ALLOCATED.set(now.allocated);
    }
}

pub fn startup_allocated() -> u64 {
    STARTUP_ALLOCATED.get().copied().unwrap_or(0)
}

/// jemalloc's full text report (`malloc_stats_print`), as MEMORY MALLOC-STATS shows it.
pub fn report() -> Option<String> {
    if !uses_jemalloc() {
        return None;
    }
    let mut text = Vec::new();
    tikv_jemalloc_ctl::stats_print::stats_print(&mut text, Default::default()).ok()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// Returns the dirty pages of every arena to the system (MEMORY PURGE). The purge mallctl
/// takes no value, which the safe wrappers cannot express, so each arena's dirty-page decay
/// time is set to 0 (jemalloc then purges that arena at once) and put back.
pub fn purge() -> bool {
    if !uses_jemalloc() {
        return false;
    }
    let Ok(count) = arenas::narenas::read() else {
        return false;
    };
    for arena in 0..count {
        let name = format!("arena.{arena}.dirty_decay_ms\0");
        let key = name.as_bytes().name();
        // Arenas never used are not initialised and refuse the setting: nothing to purge.
        if let Ok(previous) = Access::<isize>::update(key, 0) {
            let _ = Access::<isize>::write(key, previous);
        }
    }
    true
}
