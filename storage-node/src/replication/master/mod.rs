//! The master side: the replicas attached to this node, what they acknowledged, and
//! the checks that depend on them (WAIT's count, `min-replicas-to-write`).
//!
//! A replica is a client connection that sent `SYNC` or `PSYNC` ([`sync`]): from then on
//! the connection is served by [`feeder`], which writes the snapshot and the stream and
//! reads the replica's `REPLCONF ACK`s. Every replica has a [`ReplicaInfo`] here, shared
//! by its feeder, INFO, ROLE, WAIT and the backlog's trimming.
//!
//! Locks: the replica list is a leaf (nothing else is taken while it is held); it may be
//! taken under the keyspace lock and under the replication state lock.

pub mod cron;
pub mod feeder;
pub mod sync;
pub mod transfer;

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::keyspace::unix_time_ms;
use crate::server::clients::{lock, ClientHandle};
use crate::server::Shared;

/// What a replica sent with REPLCONF before its SYNC/PSYNC (kept on its client).
#[derive(Clone, Debug, Default)]
pub struct Handshake {
    /// `listening-port`: the port the replica serves clients on.
    pub port: u16,
    /// `ip-address`: the address the replica announces (else its peer address is used).
    pub ip: Option<String>,
    /// `capa eof`: the replica reads the diskless `$EOF:` form.
    pub capa_eof: bool,
    /// `capa psync2`: `+CONTINUE` carries the replication id.
    pub capa_psync2: bool,
    /// `rdb-only 1`: the connection wants the snapshot only (`redis-cli --rdb`); it is
    /// closed once the RDB is sent.
    pub rdb_only: bool,
}

/// Where a replica is in its sync, as INFO's `state=` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for a snapshot to start or (disk) to be written.
    WaitBgsave = 0,
    /// The snapshot is being sent.
    SendBulk = 1,
    /// Receiving the stream.
    Online = 2,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::WaitBgsave => "wait_bgsave",
            Phase::SendBulk => "send_bulk",
            Phase::Online => "online",
        }
    }
}

/// One attached replica.
#[derive(Debug)]
pub struct ReplicaInfo {
    pub handle: Arc<ClientHandle>,
    pub handshake: Handshake,
    phase: AtomicU8,
    /// `REPLCONF ACK <offset>`: stream bytes the replica processed (Redis's `repl_ack_off`).
    pub ack_offset: AtomicU64,
    /// Unix ms of the last ACK (or of the attach), for `lag=` and `min-replicas-max-lag`.
    pub ack_time_ms: AtomicU64,
    /// The stream position the feeder sends next; `u64::MAX` while none is due yet (the
    /// snapshot has not started). The backlog keeps everything from the smallest.
    pub sent: AtomicU64,
    /// `SYNC` (not PSYNC): an old replica that sends no ACKs.
    pub pre_psync: AtomicBool,
    /// Signalled by every ACK (a diskless sync waits for the first one).
    pub acked: tokio::sync::Notify,
}

impl ReplicaInfo {
    pub fn new(handle: Arc<ClientHandle>, handshake: Handshake) -> ReplicaInfo {
        ReplicaInfo {
            handle,
            handshake,
            phase: AtomicU8::new(Phase::WaitBgsave as u8),
            ack_offset: AtomicU64::new(0),
            ack_time_ms: AtomicU64::new(unix_time_ms()),
            sent: AtomicU64::new(u64::MAX),
            pre_psync: AtomicBool::new(false),
            acked: tokio::sync::Notify::new(),
        }
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Relaxed) {
            0 => Phase::WaitBgsave,
            1 => Phase::SendBulk,
            _ => Phase::Online,
        }
    }

    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Relaxed);
    }

    /// The address INFO and ROLE show: the announced one, else the peer's.
    pub fn ip(&self) -> String {
        match &self.handshake.ip {
            Some(ip) => ip.clone(),
            None => match self.handle.addr.ip() {
                IpAddr::V6(v6) => v6
                    .to_ipv4_mapped()
                    .map_or_else(|| v6.to_string(), |v4| v4.to_string()),
                v4 => v4.to_string(),
            },
        }
    }

    /// Seconds since the last ACK.
    pub fn lag_seconds(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.ack_time_ms.load(Relaxed)) / 1000
    }

    /// Records `REPLCONF ACK <offset>`: the offset only grows.
    pub fn ack(&self, offset: u64) {
        self.ack_offset.fetch_max(offset, Relaxed);
        self.ack_time_ms.store(unix_time_ms(), Relaxed);
        self.acked.notify_one();
    }
}

/// The replicas of this node.
#[derive(Default)]
pub struct Replicas {
    list: Mutex<Vec<Arc<ReplicaInfo>>>,
    /// When the last replica left (for `repl-backlog-ttl`); `None` while there are some.
    pub(super) idle_since: Mutex<Option<Instant>>,
    /// Full syncs waiting for a snapshot (see [`sync::try_start`]).
    pub(super) pending: Mutex<Vec<sync::Pending>>,
    /// The heartbeat task runs (started with the first replica).
    pub(super) cron_started: AtomicBool,
    /// WAIT's blocked clients.
    pub waiters: super::wait::Waiters,
    /// `sync_full`, `sync_partial_ok`, `sync_partial_err`.
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// Replica connections now (INFO `connected_slaves`, subtracted from
    /// `connected_clients`), readable without the list's lock.
    count: AtomicU64,
}

impl Replicas {
    pub fn all(&self) -> Vec<Arc<ReplicaInfo>> {
        lock(&self.list).clone()
    }

    pub fn count(&self) -> usize {
        self.count.load(Relaxed) as usize
    }

    pub(super) fn add(&self, info: Arc<ReplicaInfo>) {
        let mut list = lock(&self.list);
        list.push(info);
        self.count.store(list.len() as u64, Relaxed);
        *lock(&self.idle_since) = None;
    }

    pub(super) fn remove(&self, id: u64) {
        let mut list = lock(&self.list);
        list.retain(|r| r.handle.id != id);
        self.count.store(list.len() as u64, Relaxed);
        if list.is_empty() {
            *lock(&self.idle_since) = Some(Instant::now());
        }
    }

    /// The smallest position a replica still has to be sent (`u64::MAX`: none).
    pub fn keep_from(&self) -> u64 {
        lock(&self.list)
            .iter()
            .map(|r| r.sent.load(Relaxed))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Online replicas that acknowledged `offset` (Redis's `replicationCountAcksByOffset`).
    pub fn count_acked(&self, offset: u64) -> usize {
        lock(&self.list)
            .iter()
            .filter(|r| r.phase() == Phase::Online && r.ack_offset.load(Relaxed) >= offset)
            .count()
    }

    /// Online replicas whose last ACK is at most `max_lag` seconds old (Redis's
    /// `repl_good_slaves_count`).
    pub fn good_count(&self, max_lag: u64) -> usize {
        let now = unix_time_ms();
        lock(&self.list)
            .iter()
            .filter(|r| r.phase() == Phase::Online && r.lag_seconds(now) <= max_lag)
            .count()
    }
}

/// Redis's error when `min-replicas-to-write` is not met.
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Whether a write may run: on a master with `min-replicas-to-write` and
/// `min-replicas-max-lag` set, enough replicas must have acknowledged within the lag
/// (Redis's `checkGoodReplicasStatus`). The common case costs one settings read.
pub fn check_good_replicas(shared: &Shared) -> Result<(), &'static str> {
    let (needed, max_lag) = {
        let config = shared.config();
        (
            config.repl.min_replicas_to_write,
            config.repl.min_replicas_max_lag,
        )
    };
    if needed == 0 || max_lag == 0 || super::replica::is_replica(shared) {
        return Ok(());
    }
    if shared.replication.master.good_count(max_lag) as u64 >= needed {
        Ok(())
    } else {
        Err(NOREPLICAS)
    }
}
