//! The proxy's metrics registry: what the request path records, and what the admin
//! endpoint renders (`admin::metrics`). It sits below both, so the data path never imports
//! the admin side.
//!
//! # Where the figures come from
//! - **The request path** writes per-worker arrays ([`workers`]): calls, errors and a latency
//!   histogram per command (indexed by the command table's dense `CommandSpec::id`, one
//!   entry per command and subcommand, named like Redis: `config|get`), operations per slot,
//!   fan-out sizes. Backend connections keep their own counters (in flight, failures,
//!   latency; `backend::connection::ConnStats`). Nothing on the request path looks a label
//!   up or allocates; scrapes sum the workers and connections.
//! - **Existing counters** (`proxy::stats::Stats`, the client registry, the pools) are read
//!   at scrape time ([`collect`]).
//! - **The cluster** is polled in the background ([`poll`]); scrapes read the last poll.
//! - **The [`prometheus::Registry`]** holds the metrics other parts of the proxy update with
//!   ordinary `prometheus` handles: the resharding metrics below.
//!
//! # Resharding API (for the jobs)
//! `proxy.metrics.reshard()` returns a [`ReshardMetrics`] whose handles a job updates:
//! ```ignore
//! let m = proxy.metrics.reshard();
//! m.transition(None, "queued");                 // a new job
//! m.transition(Some("queued"), "running");
//! m.slots_pending.add(slots.len() as i64);      // IntGauge: slots still to move
//! m.keys_moved.inc_by(batch.len() as u64);      // IntCounter, after each MIGRATE batch
//! m.slots_done.inc();                           // IntCounter, after SETSLOT NODE
//! m.slots_pending.dec();
//! m.transition(Some("running"), "completed");   // or "failed"
//! ```
//! `slotproxy_reshard_job_state{state}` counts jobs per state; `queued`, `running`,
//! `completed` and `failed` always exist (0 until used), other state names are created on
//! first use. The alert "stuck migration" fires when `slotproxy_reshard_slots_pending` stays
//! above 0 without decreasing, so set it when a job starts and lower it per slot.
//!
//! # Names
//! `slotproxy_*`, base units (`_seconds`, `_bytes`), counters end in `_total`. The README's
//! "Metrics" section lists them all; `dashboards/` uses them and a test checks that every
//! dashboard and alert expression returns data from a real Prometheus.

pub mod histogram;
pub mod reshard;
pub mod snapshot;
pub mod workers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use prometheus::Registry;

pub use reshard::ReshardMetrics;
pub use snapshot::{ClusterSnapshot, NodeSample};
pub use workers::{Timing, WorkerStats};

/// All metrics of one proxy.
pub struct Metrics {
    registry: Registry,
    reshard: ReshardMetrics,
    /// One per worker thread, plus the control thread's (same indexes as the pools).
    workers: Box<[WorkerStats]>,
    snapshot: ArcSwap<ClusterSnapshot>,
    /// Operation timeouts per node (`unknown` when the request was following redirects).
    timeouts: Mutex<HashMap<String, u64>>,
    /// Each command's `(calls, failed calls, nanoseconds)` at the last CONFIG RESETSTAT:
    /// INFO counts from there, while the Prometheus counters never go back.
    info_baseline: Mutex<Vec<CommandCount>>,
}

/// A command's calls, failed calls and total time, as INFO reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandCount {
    pub calls: u64,
    pub errors: u64,
    pub nanos: u64,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics for `lanes` threads (workers + control).
    pub fn new(lanes: usize) -> Metrics {
        let registry = Registry::new();
        // Registering fixed, distinct names into a fresh registry cannot fail.
        let reshard = ReshardMetrics::register(&registry)
            .unwrap_or_else(|e| panic!("resharding metrics: {e}"));
        Metrics {
            registry,
            reshard,
            workers: (0..lanes.max(1)).map(|_| WorkerStats::default()).collect(),
            snapshot: ArcSwap::from_pointee(ClusterSnapshot::default()),
            timeouts: Mutex::new(HashMap::new()),
            info_baseline: Mutex::new(Vec::new()),
        }
    }

    /// The resharding metrics (see the module notes).
    pub fn reshard(&self) -> &ReshardMetrics {
        &self.reshard
    }

    /// The registry, for metrics kept with `prometheus` handles.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The counters of worker thread `index` (only that thread may record into them).
    #[inline]
    pub fn worker(&self, index: usize) -> &WorkerStats {
        &self.workers[index.min(self.workers.len() - 1)]
    }

    /// Counts an operation timeout on `node` (error path only: takes a lock).
    pub fn timeout(&self, node: Option<&str>) {
        let mut timeouts = self.timeouts.lock().unwrap_or_else(|p| p.into_inner());
        *timeouts
            .entry(node.unwrap_or("unknown").to_string())
            .or_default() += 1;
    }

    pub fn timeouts(&self) -> HashMap<String, u64> {
        self.timeouts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The last cluster poll.
    pub fn snapshot(&self) -> Arc<ClusterSnapshot> {
        self.snapshot.load_full()
    }

    pub(crate) fn store_snapshot(&self, snapshot: ClusterSnapshot) {
        self.snapshot.store(Arc::new(snapshot));
    }

    /// Each command's counts since start (index as `CommandSpec::id`), all workers together.
    fn command_counts(&self) -> Vec<CommandCount> {
        workers::command_totals(self.workers())
            .iter()
            .map(|t| CommandCount {
                calls: t.calls,
                errors: t.errors,
                nanos: t.latency.sum_nanos,
            })
            .collect()
    }

    /// Each command's counts since the last CONFIG RESETSTAT (INFO commandstats and
    /// `total_commands_processed`).
    pub fn info_command_counts(&self) -> Vec<CommandCount> {
        let baseline = self
            .info_baseline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut counts = self.command_counts();
        for (count, base) in counts.iter_mut().zip(&baseline) {
            count.calls = count.calls.saturating_sub(base.calls);
            count.errors = count.errors.saturating_sub(base.errors);
            count.nanos = count.nanos.saturating_sub(base.nanos);
        }
        counts
    }

    /// CONFIG RESETSTAT: INFO's command counts start again from zero.
    pub fn reset_info_counts(&self) {
        let now = self.command_counts();
        *self.info_baseline.lock().unwrap_or_else(|p| p.into_inner()) = now;
    }

    pub(crate) fn workers(&self) -> &[WorkerStats] {
        &self.workers
    }
}
