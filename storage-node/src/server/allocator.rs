//! The allocator's report and purge for MEMORY MALLOC-STATS / PURGE, and the startup figure
//! of MEMORY STATS. The counters themselves have one reader: `crate::keyspace::memory`.
//!
//! Only meaningful when the running binary's global allocator is jemalloc
//! (`crate::mem_allocator`); code that links the library with another allocator gets
//! `None` and MEMORY answers as Redis does built without jemalloc.

use std::sync::OnceLock;

use tikv_jemalloc_ctl::{arenas, Access, AsName};

/// Bytes allocated once the node had started, before serving (MEMORY STATS
/// `startup.allocated`).
static STARTUP_ALLOCATED: OnceLock<u64> = OnceLock::new();

fn uses_jemalloc() -> bool {
    crate::mem_allocator().starts_with("jemalloc")
}

/// Records `startup.allocated`; the binary calls it once, before serving.
pub fn record_startup() {
    if uses_jemalloc() {
        let _ = STARTUP_ALLOCATED.set(crate::keyspace::memory::read().allocated);
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
