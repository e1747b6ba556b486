//! Resharding jobs: move slots between masters while clients keep working.
//!
//! A job is one of [`Operation`]: reshard (slots or a count from one node to another),
//! rebalance (by slots or weighted by keys), add a node (MEET, optionally rebalance onto it),
//! drain a node, forget a drained node. One job runs at a time per proxy; the registry keeps
//! the recent ones for `GET /v1/jobs`.
//!
//! How a slot moves ([`migrate`]): the cluster protocol only, the way `redis-cli --cluster
//! reshard` does it, so the same job runs against real Redis Cluster and storage nodes.
//!
//! Recovery ([`recover`]): the truth is on the nodes. Every job starts by finishing (or
//! rolling back) any slot some master still shows as MIGRATING or IMPORTING, whoever left it
//! so: an interrupted job, a killed proxy, a crashed `redis-cli`.
//!
//! Progress is kept in the job (shown by `GET /v1/jobs`) and handed to [`report_progress`]
//! at every change.

pub mod link;
pub mod migrate;
pub mod ops;
pub mod plan;
pub mod recover;
pub mod routes;
pub mod view;

use crate::metrics::reshard::ReshardMetrics;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Jobs kept for `GET /v1/jobs` (the oldest finished ones are dropped).
const KEPT_JOBS: usize = 100;
/// Dedicated connections jobs may hold (one per node is enough; these do not count against
/// the clients' `limits.dedicated_connections`).
const JOB_CONNECTIONS: usize = 256;

/// What a job does.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// Move `slots` (or `count` of them) from `from` to `to` (node ids).
    Reshard {
        from: String,
        to: String,
        slots: Option<Vec<u16>>,
        count: Option<usize>,
    },
    /// Even out the masters, by slot count or by keys; nothing moves when every master is
    /// within `threshold` percent of its share.
    Rebalance { by_keys: bool, threshold: f64 },
    /// CLUSTER MEET a new empty master, wait until all nodes know it, optionally rebalance.
    AddNode { addr: String, rebalance: bool },
    /// Move every slot of a master to the other masters.
    Drain { id: String },
    /// Forget a master that owns no slots, then reset it.
    Forget { id: String },
}

impl Operation {
    pub fn kind(&self) -> &'static str {
        match self {
            Operation::Reshard { .. } => "reshard",
            Operation::Rebalance { .. } => "rebalance",
            Operation::AddNode { .. } => "add_node",
            Operation::Drain { .. } => "drain",
            Operation::Forget { .. } => "forget",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
        }
    }
}

/// A job's progress, updated by the job as it goes.
#[derive(Debug, Clone)]
pub struct Progress {
    pub state: JobState,
    pub slots_total: u64,
    pub slots_done: u64,
    pub keys_moved: u64,
    pub current_slot: Option<u16>,
    /// Slots found open on the nodes at the start and finished (or rolled back) first.
    pub recovered: Vec<serde_json::Value>,
    pub started_at: Option<f64>,
    pub finished_at: Option<f64>,
    pub error: Option<String>,
    /// What the job decided, for the operator (e.g. "nothing to do: within threshold").
    pub note: Option<String>,
}

/// How a job moves keys, from the request (defaults from the config).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Options {
    /// Keys per MIGRATE (default `admin.migrate_batch`).
    pub batch: Option<usize>,
    /// Overwrite target keys whose value differs from the source's (BUSYKEY).
    pub replace: bool,
}

/// One job.
pub struct Job {
    pub id: String,
    pub operation: Operation,
    pub options: Options,
    pub created_at: f64,
    progress: Mutex<Progress>,
    metrics: ReshardMetrics,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The `state` label of `slotproxy_reshard_job_state` for a job state.
fn metric_state(state: JobState) -> &'static str {
    match state {
        JobState::Queued => "queued",
        JobState::Running => "running",
        JobState::Done => "completed",
        JobState::Failed => "failed",
    }
}

/// Where the job's progress meets the proxy's metrics (`slotproxy_reshard_*`: slots pending
/// and done, keys moved, job state). Called after every change of a job's progress, with
/// the progress before and after it.
fn report_progress(metrics: &ReshardMetrics, before: &Progress, after: &Progress) {
    if before.state != after.state {
        metrics.transition(Some(metric_state(before.state)), metric_state(after.state));
    }
    metrics
        .slots_done
        .inc_by(after.slots_done.saturating_sub(before.slots_done));
    metrics
        .keys_moved
        .inc_by(after.keys_moved.saturating_sub(before.keys_moved));
    let pending = match after.state {
        JobState::Running => after.slots_total.saturating_sub(after.slots_done),
        _ => 0,
    };
    metrics.slots_pending.set(pending as i64);
}

impl Job {
    /// A copy of the progress.
    pub fn progress(&self) -> Progress {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes the progress and reports it.
    pub fn update(&self, change: impl FnOnce(&mut Progress)) {
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        let before = progress.clone();
        change(&mut progress);
        report_progress(&self.metrics, &before, &progress);
    }

    pub fn is_active(&self) -> bool {
        matches!(self.progress().state, JobState::Queued | JobState::Running)
    }

    /// The job as `GET /v1/jobs/{id}` shows it.
    pub fn to_json(&self) -> serde_json::Value {
        let p = self.progress();
        let params = match &self.operation {
            Operation::Reshard {
                from,
                to,
                slots,
                count,
            } => {
                serde_json::json!({ "from": from, "to": to, "slots": slots.as_ref().map(Vec::len), "count": count })
            }
            Operation::Rebalance { by_keys, threshold } => serde_json::json!({
                "by": if *by_keys { "keys" } else { "slots" }, "threshold": threshold }),
            Operation::AddNode { addr, rebalance } => {
                serde_json::json!({ "addr": addr, "rebalance": rebalance })
            }
            Operation::Drain { id } | Operation::Forget { id } => serde_json::json!({ "id": id }),
        };
        serde_json::json!({
            "id": self.id,
            "kind": self.operation.kind(),
            "params": params,
            "state": p.state.as_str(),
            "slots_total": p.slots_total,
            "slots_done": p.slots_done,
            "slots_pending": p.slots_total.saturating_sub(p.slots_done),
            "keys_moved": p.keys_moved,
            "current_slot": p.current_slot,
            "recovered": p.recovered,
            "created_at": self.created_at,
            "started_at": p.started_at,
            "finished_at": p.finished_at,
            "error": p.error,
            "note": p.note,
        })
    }
}

/// The proxy's jobs.
pub struct Jobs {
    jobs: Mutex<Vec<Arc<Job>>>,
    next: AtomicU64,
    /// Job ids start with the proxy's start time, so ids stay unique across restarts.
    prefix: u64,
    pub permits: Arc<crate::backend::dedicated::DedicatedLimit>,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs {
            jobs: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
            prefix: now() as u64,
            permits: crate::backend::dedicated::DedicatedLimit::new(JOB_CONNECTIONS),
        }
    }
}

impl Jobs {
    /// The job still queued or running, if any.
    pub fn active(&self) -> Option<Arc<Job>> {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.iter().find(|j| j.is_active()).cloned()
    }

    /// Registers a new queued job, unless one is active (then that one is returned as the
    /// error: one job at a time).
    pub fn create(
        &self,
        operation: Operation,
        options: Options,
        metrics: ReshardMetrics,
    ) -> Result<Arc<Job>, Arc<Job>> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(active) = jobs.iter().find(|j| j.is_active()) {
            return Err(active.clone());
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let job = Arc::new(Job {
            id: format!("{}-{n}", self.prefix),
            operation,
            options,
            created_at: now(),
            progress: Mutex::new(Progress {
                state: JobState::Queued,
                slots_total: 0,
                slots_done: 0,
                keys_moved: 0,
                current_slot: None,
                recovered: Vec::new(),
                started_at: None,
                finished_at: None,
                error: None,
                note: None,
            }),
            metrics,
        });
        job.metrics.transition(None, metric_state(JobState::Queued));
        jobs.push(job.clone());
        if jobs.len() > KEPT_JOBS {
            if let Some(oldest) = jobs.iter().position(|j| !j.is_active()) {
                jobs.remove(oldest);
            }
        }
        Ok(job)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.iter().find(|j| j.id == id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Job>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Marks a job running, runs it on the current (control) runtime, and records the outcome.
pub fn spawn(admin: Arc<crate::admin::Admin>, job: Arc<Job>) {
    tokio::spawn(async move {
        job.update(|p| {
            p.state = JobState::Running;
            p.started_at = Some(now());
        });
        let result = ops::run(&admin.proxy, &admin.jobs, &job).await;
        if let Err(e) = &result {
            tracing::warn!("job {} ({}) failed: {e}", job.id, job.operation.kind());
        }
        job.update(|p| {
            p.state = if result.is_ok() {
                JobState::Done
            } else {
                JobState::Failed
            };
            p.error = result.err();
            p.current_slot = None;
            p.finished_at = Some(now());
        });
        admin.proxy.request_refresh();
    });
}
