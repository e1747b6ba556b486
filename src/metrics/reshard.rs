//! The resharding metrics the jobs update (see the API notes in [`super`]).

use prometheus::{IntCounter, IntGauge, IntGaugeVec, Opts, Registry};

/// Job states pre-created so dashboards always find the series (value 0 until used).
pub const JOB_STATES: &[&str] = &["queued", "running", "completed", "failed"];

/// Handles to the resharding metrics; clone freely (handles are shared).
#[derive(Clone, Debug)]
pub struct ReshardMetrics {
    /// `slotproxy_reshard_slots_pending`: slots the running jobs still have to move.
    pub slots_pending: IntGauge,
    /// `slotproxy_reshard_slots_done_total`: slots moved (owner switched) since start.
    pub slots_done: IntCounter,
    /// `slotproxy_reshard_keys_moved_total`: keys moved with MIGRATE since start.
    pub keys_moved: IntCounter,
    /// `slotproxy_reshard_job_state{state}`: number of jobs currently in each state.
    job_state: IntGaugeVec,
}

impl ReshardMetrics {
    pub(super) fn register(registry: &Registry) -> prometheus::Result<ReshardMetrics> {
        let metrics = ReshardMetrics {
            slots_pending: IntGauge::with_opts(Opts::new(
                "slotproxy_reshard_slots_pending",
                "Slots the running resharding jobs still have to move.",
            ))?,
            slots_done: IntCounter::with_opts(Opts::new(
                "slotproxy_reshard_slots_done_total",
                "Slots whose move finished (owner switched on every master).",
            ))?,
            keys_moved: IntCounter::with_opts(Opts::new(
                "slotproxy_reshard_keys_moved_total",
                "Keys moved between nodes by resharding jobs (MIGRATE).",
            ))?,
            job_state: IntGaugeVec::new(
                Opts::new(
                    "slotproxy_reshard_job_state",
                    "Resharding jobs currently in each state.",
                ),
                &["state"],
            )?,
        };
        registry.register(Box::new(metrics.slots_pending.clone()))?;
        registry.register(Box::new(metrics.slots_done.clone()))?;
        registry.register(Box::new(metrics.keys_moved.clone()))?;
        registry.register(Box::new(metrics.job_state.clone()))?;
        for state in JOB_STATES {
            metrics.job_state.with_label_values(&[state]).set(0);
        }
        Ok(metrics)
    }

    /// The gauge counting jobs in `state` (created on first use for states beyond
    /// [`JOB_STATES`]).
    pub fn job_state(&self, state: &str) -> IntGauge {
        self.job_state.with_label_values(&[state])
    }

    /// A job moves from one state to another (`None`: a new job).
    pub fn transition(&self, from: Option<&str>, to: &str) {
        if let Some(from) = from {
            self.job_state(from).dec();
        }
        self.job_state(to).inc();
    }
}
