//! `SYNC` / `PSYNC`: a client becomes a replica. Partial when the history it follows is
//! ours and the backlog still holds its offset (`+CONTINUE`), else a full sync: the
//! replica waits for a snapshot ([`try_start`]), gets `+FULLRESYNC <replid> <offset>`,
//! the RDB, and the stream from that offset (Redis's `syncCommand`,
//! `masterTryPartialResynchronization`, `startBgsaveForReplication`).
//!
//! The RDB is exactly the data at the announced offset: the snapshot begins under the
//! same keyspace lock hold in which the offset is read (after publishing what the stream
//! held), and the replica's `sent` position is set there, so the backlog keeps every byte
//! from it until the feeder has sent it.

use std::fs::File;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::cron;
use super::transfer::{DiskSync, Piece, SocketSync};
use super::{Handshake, Phase, ReplicaInfo};
use crate::keyspace::Keyspace;
use crate::persistence::snapshot::{self, Target};
use crate::server::clients::{lock, ClientHandle};
use crate::server::Shared;

/// A full sync waiting for its snapshot.
pub struct Pending {
    info: Arc<ReplicaInfo>,
    diskless: bool,
    since: Instant,
    start: oneshot::Sender<SyncStart>,
}

/// The snapshot a full sync gets: `+FULLRESYNC <replid> <offset>` and this payload.
pub struct SyncStart {
    pub replid: String,
    pub offset: u64,
    pub payload: Payload,
}

pub enum Payload {
    /// The RDB file, opened once it was written.
    Disk(oneshot::Receiver<File>),
    /// The file's bytes as the snapshot encodes them.
    Socket(mpsc::Receiver<Piece>),
}

/// What the connection hands to the replica's feeder (`super::feeder::serve`).
pub enum Attach {
    /// `+CONTINUE` was answered; the stream goes on from the replica's `sent`.
    Partial(Arc<ReplicaInfo>),
    Full {
        info: Arc<ReplicaInfo>,
        start: oneshot::Receiver<SyncStart>,
        /// PSYNC (not SYNC): `+FULLRESYNC` precedes the RDB.
        psync: bool,
    },
}

impl Attach {
    pub fn info(&self) -> &Arc<ReplicaInfo> {
        match self {
            Attach::Partial(info) | Attach::Full { info, .. } => info,
        }
    }
}

/// What the replica asked: `PSYNC <replid> <offset>` or plain `SYNC`.
pub struct Request<'a> {
    pub psync: Option<(&'a str, i64)>,
}

/// Makes the client a replica. Writes `+CONTINUE` to `out` for a partial resync; a full
/// sync's first line comes from the feeder when its snapshot starts. Called under the
/// keyspace lock.
pub fn attach(
    shared: &Shared,
    keyspace: &mut Keyspace,
    handle: &Arc<ClientHandle>,
    handshake: Handshake,
    request: Request<'_>,
    out: &mut bytes::BytesMut,
) -> Attach {
    let replication = &shared.replication;
    let master = &replication.master;
    let info = Arc::new(ReplicaInfo::new(handle.clone(), handshake));
    handle.replica.store(true, Relaxed);
    // Replicas' buffers are not client memory `maxmemory-clients` limits.
    handle.leave_clients_memory();
    // What this batch propagated so far precedes anything the replica is sent.
    crate::propagation::publish(shared, keyspace);
    if let Some((replid, offset)) = request.psync {
        if let Some(from) = partial_from(shared, replid, offset) {
            info.sent.store(from, Relaxed);
            info.set_phase(Phase::Online);
            master.add(info.clone());
            master.sync_partial_ok.fetch_add(1, Relaxed);
            let continued = if info.handshake.capa_psync2 {
                format!("+CONTINUE {}\r\n", replication.state().replid)
            } else {
                "+CONTINUE\r\n".to_string()
            };
            out.extend_from_slice(continued.as_bytes());
            crate::log::notice!(
                "Partial resynchronization request from {} accepted. Sending {} bytes of \
                 backlog starting from offset {offset}.",
                handle.addr,
                replication.end().saturating_sub(from)
            );
            cron::start(shared);
            return Attach::Partial(info);
        }
        // "?" asks for a full sync on purpose: not a failed partial one.
        if replid != "?" {
            master.sync_partial_err.fetch_add(1, Relaxed);
        }
        crate::log::notice!(
            "Full resync requested by replica {} (replid {replid}, offset {offset})",
            handle.addr
        );
    } else {
        info.pre_psync.store(true, Relaxed);
    }
    master.sync_full.fetch_add(1, Relaxed);
    let (size, diskless) = {
        let config = shared.config();
        (config.repl.backlog_size, config.repl.diskless_sync)
    };
    // A replica's history is its master's: only a master starts a new one.
    let first = master.count() == 0 && !crate::replication::replica::is_replica(shared);
    if replication.ensure_backlog(size) && first {
        // A backlog made from scratch has no past history: a new id, no second one
        // (Redis's changeReplicationId + clearReplicationId2).
        let mut state = replication.state();
        state.replid = crate::server::random_hex_id();
        state.replid2 = "0".repeat(40);
        state.second_offset = -1;
        crate::log::notice!(
            "Replication backlog created, my new replication IDs are '{}' and '{}'",
            state.replid,
            state.replid2
        );
    }
    crate::propagation::refresh_consumers(shared, keyspace);
    master.add(info.clone());
    let (tx, rx) = oneshot::channel();
    lock(&master.pending).push(Pending {
        diskless: diskless && info.handshake.capa_eof,
        info: info.clone(),
        since: Instant::now(),
        start: tx,
    });
    cron::start(shared);
    if shared.persistence.background.busy() {
        // It is not for replicas (or they got theirs already): the next one is.
        crate::log::notice!(
            "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC"
        );
    }
    try_start(shared, keyspace);
    Attach::Full {
        info,
        start: rx,
        psync: request.psync.is_some(),
    }
}

/// The stream position a `PSYNC <replid> <offset>` continues from, if it can.
fn partial_from(shared: &Shared, replid: &str, offset: i64) -> Option<u64> {
    let state = shared.replication.state();
    let ours = replid.eq_ignore_ascii_case(&state.replid)
        || (replid.eq_ignore_ascii_case(&state.replid2) && offset <= state.second_offset);
    if !ours {
        return None;
    }
    let backlog = state.backlog.as_ref()?;
    // Redis's offsets are 1-based: the replica asks for the byte after its last one.
    let from = u64::try_from(offset).ok()?.checked_sub(1)?;
    (from >= backlog.start() && from <= backlog.end()).then_some(from)
}

/// Starts the snapshot for the full syncs waiting, when it may: no other snapshot runs,
/// and for a diskless one `repl-diskless-sync-delay` passed since the first replica
/// came or `repl-diskless-sync-max-replicas` wait. All waiting replicas of the same kind
/// share it. Called under the keyspace lock, by a new replica and by the waiting
/// replicas' feeders.
pub fn try_start(shared: &Shared, keyspace: &mut Keyspace) {
    let master = &shared.replication.master;
    let mut pending = lock(&master.pending);
    pending.retain(|p| !p.start.is_closed());
    let Some(first) = pending.first() else {
        return;
    };
    if shared.persistence.background.busy() {
        return;
    }
    let diskless = first.diskless;
    if diskless {
        let (delay, max) = {
            let config = shared.config();
            (
                config.repl.diskless_sync_delay,
                config.repl.diskless_sync_max_replicas,
            )
        };
        let waiting = pending.iter().filter(|p| p.diskless);
        let count = waiting.clone().count() as u64;
        let oldest = waiting.map(|p| p.since).min().unwrap_or_else(Instant::now);
        if oldest.elapsed() < Duration::from_secs(delay) && !(max > 0 && count >= max) {
            return;
        }
    }
    let (chosen, rest): (Vec<Pending>, Vec<Pending>) =
        pending.drain(..).partition(|p| p.diskless == diskless);
    *pending = rest;
    drop(pending);
    crate::propagation::publish(shared, keyspace);
    // The replicas load the snapshot into database 0: the stream selects again.
    keyspace.propagation.restart_stream();
    let (replid, offset) = {
        let state = shared.replication.state();
        (state.replid.clone(), state.end())
    };
    for p in &chosen {
        p.info.sent.store(offset, Relaxed);
    }
    let (target, payloads): (Target, Vec<Payload>) = if diskless {
        let (sync, ins) = SocketSync::new(chosen.len());
        (
            Target::ReplicaSocket(Box::new(sync)),
            ins.into_iter().map(Payload::Socket).collect(),
        )
    } else {
        let (txs, rxs): (Vec<_>, Vec<_>) = chosen.iter().map(|_| oneshot::channel()).unzip();
        crate::log::notice!("Starting BGSAVE for SYNC with target: disk");
        (
            Target::ReplicaDisk(Box::new(DiskSync::new(txs))),
            rxs.into_iter().map(Payload::Disk).collect(),
        )
    };
    match snapshot::start_for(shared, keyspace, target) {
        Ok(()) => {
            for (p, payload) in chosen.into_iter().zip(payloads) {
                let _ = p.start.send(SyncStart {
                    replid: replid.clone(),
                    offset,
                    payload,
                });
            }
        }
        Err(e) => {
            crate::log::warning!("BGSAVE for replication failed: {e:?}");
            for p in chosen {
                p.info.handle.request_kill();
            }
        }
    }
}
