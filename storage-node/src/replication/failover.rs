//! Coordinated failover of a master to one of its replicas (Redis 7.0's `FAILOVER`).
//!
//! 1. `waiting-for-sync`: writes are paused (`server::pause`, purpose failover) and the
//!    master waits until the target (or, without `TO`, any online replica) has
//!    acknowledged the whole stream. Replicas ack every second on their own; the master
//!    sends no PING or GETACK while clients are paused (as Redis), so the offset holds still.
//!    With `TIMEOUT` the wait ends: with `FORCE` the failover goes on anyway, else it is
//!    aborted ("Replica never caught up before timeout").
//! 2. `failover-in-progress`: the master becomes a replica of the target and its PSYNC
//!    carries `FAILOVER`, so the target promotes itself first (if its replication id is
//!    the master's) and answers `+CONTINUE`. Then the pause ends: the held writes meet a
//!    replica. A refused PSYNC aborts the failover and the node is a master again.
//!
//! `FAILOVER ABORT` ends either phase the same way.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::server::clients::lock;
use crate::server::pause::{PauseMode, PausePurpose};
use crate::server::Shared;

/// How often the wait for the target's acknowledgement looks (Redis checks in its cron).
const CHECK_EVERY: Duration = Duration::from_millis(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Phase {
    #[default]
    None,
    WaitForSync,
    InProgress,
}

impl Phase {
    /// INFO's `master_failover_state`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::None => "no-failover",
            Phase::WaitForSync => "waiting-for-sync",
            Phase::InProgress => "failover-in-progress",
        }
    }
}

#[derive(Default)]
struct Status {
    phase: Phase,
    target: Option<(String, u16)>,
    force: bool,
    end: Option<Instant>,
    /// Bumped by every FAILOVER, so a watcher of an older one stops.
    generation: u64,
}

/// The failover state of the node (in `Replication`).
#[derive(Default)]
pub struct Failover {
    status: Mutex<Status>,
}

/// What FAILOVER asks for.
pub struct Request {
    pub target: Option<(String, u16)>,
    pub force: bool,
    pub timeout: Option<Duration>,
}

impl Failover {
    pub fn phase(&self) -> Phase {
        lock(&self.status).phase
    }

    /// The failover is making this node a replica: its PSYNC carries `FAILOVER`.
    pub fn in_progress(&self) -> bool {
        self.phase() == Phase::InProgress
    }
}

/// Starts a failover (the checks are FAILOVER's): pauses writes and watches the replicas.
pub fn start(shared: &Arc<Shared>, request: Request) {
    let generation = {
        let mut status = lock(&shared.replication.failover.status);
        status.generation += 1;
        status.phase = Phase::WaitForSync;
        status.target = request.target;
        status.force = request.force;
        status.end = request.timeout.map(|t| Instant::now() + t);
        status.generation
    };
    let far = crate::server::pause::end_after(u64::MAX);
    shared
        .pause
        .pause(PausePurpose::Failover, PauseMode::Write, far);
    tokio::spawn(watch(shared.clone(), generation));
}

/// Ends the failover without failing over; a node that had become a replica for it is a
/// master again (Redis's `abortFailover`).
pub fn abort(shared: &Shared, keyspace: &mut crate::keyspace::Keyspace, reason: &str) {
    let phase = {
        let mut status = lock(&shared.replication.failover.status);
        let phase = status.phase;
        *status = Status {
            generation: status.generation + 1,
            ..Status::default()
        };
        phase
    };
    if phase == Phase::None {
        return;
    }
    if phase == Phase::InProgress {
        crate::replication::replica::promote(shared, keyspace);
    }
    crate::log::notice!("FAILOVER aborted: {reason}");
    shared.pause.unpause(PausePurpose::Failover);
}

/// The target accepted the PSYNC: the failover is done (Redis's `clearFailoverState`).
pub fn finish(shared: &Shared) {
    {
        let mut status = lock(&shared.replication.failover.status);
        if status.phase != Phase::InProgress {
            return;
        }
        *status = Status {
            generation: status.generation + 1,
            ..Status::default()
        };
    }
    shared.pause.unpause(PausePurpose::Failover);
}

/// Waits for a replica to catch up (or the timeout), then points this node at it.
async fn watch(shared: Arc<Shared>, generation: u64) {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        let (target, force, end) = {
            let status = lock(&shared.replication.failover.status);
            if status.generation != generation || status.phase != Phase::WaitForSync {
                return;
            }
            (status.target.clone(), status.force, status.end)
        };
        let timed_out = end.is_some_and(|end| Instant::now() >= end);
        let synced = synced_replica(&shared, target.as_ref());
        let next = match (synced, timed_out) {
            (Some(replica), _) => {
                crate::log::notice!(
                    "Failover target {}:{} is synced, failing over.",
                    replica.0,
                    replica.1
                );
                replica
            }
            (None, true) if force => match target {
                Some(target) => {
                    crate::log::notice!(
                        "FAILOVER to {}:{} time out exceeded, failing over.",
                        target.0,
                        target.1
                    );
                    target
                }
                None => return,
            },
            (None, true) => {
                let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
                abort(
                    &shared,
                    &mut keyspace,
                    "Replica never caught up before timeout",
                );
                return;
            }
            (None, false) => continue,
        };
        let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
        {
            let mut status = lock(&shared.replication.failover.status);
            if status.generation != generation || status.phase != Phase::WaitForSync {
                return;
            }
            status.phase = Phase::InProgress;
            status.target = Some(next.clone());
        }
        crate::replication::replica::replicate_from(&shared, &mut keyspace, next.0, next.1);
        return;
    }
}

/// An online replica (the target, if named) that acknowledged the whole stream.
fn synced_replica(shared: &Shared, target: Option<&(String, u16)>) -> Option<(String, u16)> {
    let offset = shared.replication.end();
    shared
        .replication
        .master
        .all()
        .into_iter()
        .filter(|r| r.phase() == crate::replication::master::Phase::Online)
        .map(|r| {
            let acked = r.ack_offset.load(std::sync::atomic::Ordering::Relaxed);
            ((r.ip(), r.handshake.port), acked)
        })
        .find(|(addr, acked)| {
            *acked >= offset
                && target.is_none_or(|(host, port)| {
                    host.eq_ignore_ascii_case(&addr.0) && *port == addr.1
                })
        })
        .map(|(addr, _)| addr)
}
