//! Counters the proxy keeps for INFO (and, later, Prometheus).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Proxy-wide counters, updated without locks.
#[derive(Default, Debug)]
pub struct Stats {
    pub connections_accepted: AtomicU64,
    pub connections_rejected: AtomicU64,
    pub commands: AtomicU64,
    pub errors: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub redirects_moved: AtomicU64,
    pub redirects_ask: AtomicU64,
    pub redirects_tryagain: AtomicU64,
    pub topology_refreshes: AtomicU64,
    pub topology_changes: AtomicU64,
    /// Shards whose slots a refresh found on a node that was their master's replica.
    pub failovers: AtomicU64,
    pub backend_timeouts: AtomicU64,
}

impl Stats {
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }

    /// Zeroes every counter (CONFIG RESETSTAT).
    pub fn reset(&self) {
        let Stats {
            connections_accepted,
            connections_rejected,
            commands,
            errors,
            bytes_in,
            bytes_out,
            redirects_moved,
            redirects_ask,
            redirects_tryagain,
            topology_refreshes,
            topology_changes,
            failovers,
            backend_timeouts,
        } = self;
        for counter in [
            connections_accepted,
            connections_rejected,
            commands,
            errors,
            bytes_in,
            bytes_out,
            redirects_moved,
            redirects_ask,
            redirects_tryagain,
            topology_refreshes,
            topology_changes,
            failovers,
            backend_timeouts,
        ] {
            counter.store(0, Relaxed);
        }
    }
}
