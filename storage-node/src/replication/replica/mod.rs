//! The replica side of replication: `REPLICAOF`, the link to the master (handshake,
//! full sync, applying the stream, acknowledgements), and what a replica refuses.
//!
//! # The link
//! `REPLICAOF host port` (or `replicaof` in the settings at start) starts one task
//! ([`link::run`]) that connects, shakes hands as Redis 7.0 does ([`handshake`]), asks
//! `PSYNC <replid> <offset+1>` with the history this node holds (a replica's replid and
//! offset are its master's, so that is Redis's "cached master"), loads the snapshot of a
//! full sync ([`transfer`]) and then applies the stream ([`apply`]). A dropped link is
//! connected again after a second, with PSYNC, so the master can `+CONTINUE`.
//!
//! Every REPLICAOF bumps the link's generation: a task of an older generation stops at
//! its next step, and checks the generation under the keyspace lock before it changes
//! any data, so no byte of a former master is applied after REPLICAOF answered.
//!
//! # A replica's data
//! Keys are never expired here: a read hides a key past its TTL, but only the master's
//! DEL removes it ([`crate::keyspace::Expiry`]); the active expiry cycle does not run.
//! Writes from clients are refused (`replica-read-only`), and with the link down and
//! `replica-serve-stale-data no` everything but the `stale`-flagged commands is
//! ([`check_command`]).

mod apply;
mod handshake;
mod link;
mod transfer;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};
use slotproxy::resp::ReplyBuf;

use crate::cmd::CmdError;
use crate::keyspace::Expiry;
use crate::server::clients::{lock, Client};
use crate::server::Shared;

/// Redis's reply to a write from a client on a read-only replica.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
/// Redis's reply while the link is down and `replica-serve-stale-data` is off.
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// The error blocked clients get when the node starts following a (new) master.
const UNBLOCKED: &str = "-UNBLOCKED force unblock from blocking operation, instance state \
                         changed (master -> replica?)\r\n";

/// Where the link is (ROLE's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting to connect (after a failure, the next try is a second later).
    Connect,
    Connecting,
    /// Handshake done, PSYNC asked.
    Handshake,
    /// Receiving the snapshot of a full sync.
    Sync,
    /// Applying the stream.
    Connected,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Connect => "connect",
            State::Connecting => "connecting",
            State::Handshake => "handshake",
            State::Sync => "sync",
            State::Connected => "connected",
        }
    }
}

/// The progress of a snapshot transfer (INFO's `master_sync_*`).
#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    /// Redis's `repl_transfer_size`: the bytes announced (`$<len>`), 0 for the EOF-mark
    /// form (no length), -1 until the master sends either.
    pub total: i64,
    pub read: u64,
    pub last_io: Instant,
}

/// What INFO and ROLE show of the link, under one lock.
struct Status {
    master: Option<(String, u16)>,
    state: State,
    /// Last bytes received from the master.
    last_io: Instant,
    /// When the link went down (none: it was never up since REPLICAOF).
    down_since: Option<Instant>,
    transfer: Option<Transfer>,
    /// Whether this node holds a history a master may continue (it synced from a master,
    /// or was a master itself); without one PSYNC asks `? -1`, as Redis at start.
    has_history: bool,
}

/// The state of this node's link to its master, when it is a replica.
pub struct Link {
    status: Mutex<Status>,
    /// Bumped by every REPLICAOF; a link task of an older generation stops.
    generation: AtomicU64,
    replica: AtomicBool,
    up: AtomicBool,
    /// `slave_read_repl_offset`: the stream position read from the master.
    read_offset: AtomicU64,
    /// Wakes the link task when its generation ends.
    changed: tokio::sync::Notify,
    /// Drops the current connection (CLIENT KILL TYPE master); the link reconnects.
    drop_connection: tokio::sync::Notify,
}

impl Default for Link {
    fn default() -> Link {
        Link {
            status: Mutex::new(Status {
                master: None,
                state: State::Connect,
                last_io: Instant::now(),
                down_since: None,
                transfer: None,
                has_history: false,
            }),
            generation: AtomicU64::new(0),
            replica: AtomicBool::new(false),
            up: AtomicBool::new(false),
            read_offset: AtomicU64::new(0),
            changed: tokio::sync::Notify::new(),
            drop_connection: tokio::sync::Notify::new(),
        }
    }
}

impl Link {
    fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        lock(&self.status)
    }

    /// Whether generation `generation` is still the current one.
    fn current(&self, generation: u64) -> bool {
        self.generation.load(Relaxed) == generation
    }

    fn set_state(&self, state: State) {
        let mut status = self.status();
        status.state = state;
        let up = state == State::Connected;
        if !up && self.up.load(Relaxed) {
            status.down_since = Some(Instant::now());
        }
        if state != State::Sync {
            status.transfer = None;
        }
        self.up.store(up, Relaxed);
    }

    fn touch(&self) {
        self.status().last_io = Instant::now();
    }

    /// Closes the connection to the master (it is made again, with PSYNC). True if the
    /// link was up (Redis's master client exists only then).
    pub fn drop_master_connection(&self) -> bool {
        if !self.up.load(Relaxed) {
            return false;
        }
        // A permit, not a wake-up: the stream loop may be applying a batch just now.
        self.drop_connection.notify_one();
        true
    }
}

/// Whether this node replicates from a master.
pub fn is_replica(shared: &Shared) -> bool {
    shared.replication.link.replica.load(Relaxed)
}

/// Milliseconds since this replica last heard from its master: since the last byte while
/// the link is up, since the link went down otherwise (Redis's `data_age` for the cluster
/// failover checks; `u64::MAX` for a replica that never had a link).
pub fn data_age_ms(shared: &Shared) -> u64 {
    let link = &shared.replication.link;
    let status = link.status();
    let since = if link.up.load(Relaxed) {
        Some(status.last_io)
    } else {
        status.down_since
    };
    since.map_or(u64::MAX, |at| at.elapsed().as_millis() as u64)
}

/// Whether the link to the master is up (applying the stream).
pub fn link_up(shared: &Shared) -> bool {
    shared.replication.link.up.load(Relaxed)
}

/// Starts replicating from `replicaof` when the settings name a master (at start).
pub fn start_at_boot(shared: &Arc<Shared>) {
    let master = shared.config().replica.replicaof.clone();
    if let Some((host, port)) = master {
        // Nothing loaded at start says what history the data is: `PSYNC ? -1`.
        follow(shared, host, port, false);
    }
}

/// `REPLICAOF host port`: follow a new master. The data stays until a full sync replaces
/// it; the first PSYNC offers this node's history, so a former sibling that was promoted
/// can continue it. Called under the keyspace lock.
pub fn replicate_from(
    shared: &Arc<Shared>,
    keyspace: &mut crate::keyspace::Keyspace,
    host: String,
    port: u16,
) {
    // Blocked clients wait for writes this node will no longer take from them: they get
    // an error and their connections close once it is written (Redis's
    // `disconnectAllBlockedClients`). The flag alone, without the kill notification, lets
    // the connection write the reply first: it checks the flag after every write.
    for id in keyspace.blocking.ids() {
        if let Some(blocked) = keyspace.blocking.remove(id) {
            blocked.handle.killed.store(true, Relaxed);
            blocked.finish(Bytes::from_static(UNBLOCKED.as_bytes()));
        }
    }
    follow(shared, host, port, true);
}

/// Starts a new link generation towards `host:port`. `offer_own_history`: a master
/// turned replica offers its own history to the new master.
fn follow(shared: &Arc<Shared>, host: String, port: u16, offer_own_history: bool) {
    let link = &shared.replication.link;
    let generation = link.generation.fetch_add(1, Relaxed) + 1;
    let was_replica = link.replica.swap(true, Relaxed);
    crate::log::set_replica(true);
    {
        let mut status = link.status();
        // A master's own history is what it offers its new master, even an empty one
        // (`PSYNC <replid> 1`, Redis's `replicationCacheMasterUsingMyself`).
        if !was_replica {
            status.has_history = offer_own_history;
        }
        status.master = Some((host.clone(), port));
        status.down_since = None;
        status.transfer = None;
    }
    link.set_state(State::Connect);
    link.up.store(false, Relaxed);
    link.changed.notify_waiters();
    shared.config_mut().replica.replicaof = Some((host.clone(), port));
    crate::log::notice!("Connecting to MASTER {host}:{port}");
    tokio::spawn(link::run(shared.clone(), generation, host, port));
}

/// `REPLICAOF NO ONE`: become a master, keeping the data. The history goes on under a new
/// replication id, the old one kept as the second id, so the former siblings continue
/// with `+CONTINUE`. Called under the keyspace lock. False if this was a master already.
pub fn promote(shared: &Shared, keyspace: &mut crate::keyspace::Keyspace) -> bool {
    let link = &shared.replication.link;
    if !link.replica.swap(false, Relaxed) {
        return false;
    }
    crate::log::set_replica(false);
    link.generation.fetch_add(1, Relaxed);
    link.changed.notify_waiters();
    {
        let mut status = link.status();
        status.master = None;
        status.transfer = None;
        status.down_since = None;
        status.has_history = true;
    }
    link.set_state(State::Connect);
    link.up.store(false, Relaxed);
    shared.config_mut().replica.replicaof = None;
    shared.replication.shift_replid();
    // Our own stream goes on where the master's stopped, in a database its replicas do
    // not know: it starts with SELECT (Redis's `slaveseldb = -1`). A replica's own
    // propagation may have been off (it fed only an AOF, if any); its writes now feed
    // the backlog its former siblings continue from.
    crate::propagation::refresh_consumers(shared, keyspace);
    keyspace.propagation.restart_stream();
    true
}

/// The master this node follows.
pub fn master(shared: &Shared) -> Option<(String, u16)> {
    shared.replication.link.status().master.clone()
}

/// Whether a command given an expiry time already past removes the key at once (Redis's
/// `checkAlreadyExpired`). Not on a replica: its master's DEL removes it, so a write that
/// arrives late in the stream never makes the replica differ.
pub fn removes_past_expiry(shared: &Shared) -> bool {
    !is_replica(shared)
}

/// How the running command treats expired keys (see [`Expiry`]).
pub fn expiry_for(shared: &Shared, client: &Client) -> Expiry {
    if !is_replica(shared) {
        Expiry::Remove
    } else if client.master {
        Expiry::Ignore
    } else {
        Expiry::Hide
    }
}

/// Redis's replica gates, in its order: `-READONLY` for a write (or an EXEC of writes)
/// on a read-only replica, then `-MASTERDOWN` for a command not flagged `stale` while the
/// link is down and `replica-serve-stale-data` is off. The master's own commands pass.
pub fn check_command(shared: &Shared, client: &Client, spec: &CommandSpec) -> Result<(), CmdError> {
    if client.master || !is_replica(shared) {
        return Ok(());
    }
    let (read_only, serve_stale) = {
        let config = shared.config();
        (config.replica.read_only, config.replica.serve_stale_data)
    };
    let queued_flags = || -> Vec<CommandFlags> {
        let table = CommandTable::get();
        client
            .multi
            .as_ref()
            .map(|multi| {
                multi
                    .queued()
                    .iter()
                    .filter_map(|q| table.lookup(q).ok().map(|spec| spec.flags))
                    .collect()
            })
            .unwrap_or_default()
    };
    let is_exec = spec.name == "exec" && !client.nested;
    if read_only {
        let writes = spec.flags.contains(CommandFlags::WRITE)
            || (is_exec
                && queued_flags()
                    .iter()
                    .any(|f| f.contains(CommandFlags::WRITE)));
        if writes {
            return Err(READONLY.into());
        }
    }
    if !serve_stale && !link_up(shared) {
        let denied = !spec.flags.contains(CommandFlags::STALE)
            || (is_exec
                && queued_flags()
                    .iter()
                    .any(|f| !f.contains(CommandFlags::STALE)));
        if denied {
            return Err(MASTERDOWN.into());
        }
    }
    Ok(())
}

/// ROLE on a replica: `slave`, the master's host and port, the link's state, and the
/// offset applied (-1 while no stream is applied).
pub fn role_reply(shared: &Shared, out: &mut ReplyBuf<'_>) {
    let link = &shared.replication.link;
    let (host, port, state) = {
        let status = link.status();
        let (host, port) = status.master.clone().unwrap_or_default();
        (host, port, status.state)
    };
    let offset = if state == State::Connected {
        shared.replication.state().end() as i64
    } else {
        -1
    };
    out.array(5);
    out.bulk(b"slave");
    out.bulk(host.as_bytes());
    out.integer(i64::from(port));
    out.bulk(state.name().as_bytes());
    out.integer(offset);
}

/// INFO replication's replica lines, from `master_host` to `replica_announced`, as Redis
/// 7.0 writes them (`role:slave` and the master part are the caller's).
pub fn info_fields(shared: &Shared, out: &mut String) {
    use std::fmt::Write;
    let link = &shared.replication.link;
    let status = link.status();
    let (host, port) = status.master.clone().unwrap_or_default();
    let up = status.state == State::Connected;
    // Without a link and without a history (started with `replicaof`, never synced)
    // Redis shows offsets of 1.
    let applied = if up || status.has_history {
        shared.replication.state().end()
    } else {
        1
    };
    let read = if up {
        link.read_offset.load(Relaxed).max(applied)
    } else {
        applied
    };
    let last_io = if up {
        status.last_io.elapsed().as_secs() as i64
    } else {
        -1
    };
    let _ = write!(
        out,
        "master_host:{host}\r\nmaster_port:{port}\r\nmaster_link_status:{}\r\n\
         master_last_io_seconds_ago:{last_io}\r\nmaster_sync_in_progress:{}\r\n\
         slave_read_repl_offset:{read}\r\nslave_repl_offset:{applied}\r\n",
        if up { "up" } else { "down" },
        u8::from(status.state == State::Sync),
    );
    if let (State::Sync, Some(transfer)) = (status.state, status.transfer) {
        // Without a length (EOF-mark form, or none yet) the bytes left go negative, and
        // before any is announced the percentage is -0.00, as Redis computes them.
        let total = transfer.total;
        let left = total - transfer.read as i64;
        let perc = if total != 0 {
            transfer.read as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let _ = write!(
            out,
            "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{}\r\n\
             master_sync_left_bytes:{left}\r\nmaster_sync_perc:{perc:.2}\r\n\
             master_sync_last_io_seconds_ago:{}\r\n",
            transfer.read,
            transfer.last_io.elapsed().as_secs()
        );
    }
    if !up {
        let down = status
            .down_since
            .map_or(-1, |since| since.elapsed().as_secs() as i64);
        let _ = write!(out, "master_link_down_since_seconds:{down}\r\n");
    }
    drop(status);
    let config = shared.config();
    let _ = write!(
        out,
        "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
        config.replica.priority,
        u8::from(config.replica.read_only),
        u8::from(config.replica.announced)
    );
}

/// A client that runs the master's stream: no replies leave, no gate refuses it, and its
/// lookups see keys past their TTL (see [`expiry_for`]).
fn master_client() -> Client {
    let nowhere: std::net::SocketAddr = ([0, 0, 0, 0], 0).into();
    let handle = Arc::new(crate::server::clients::ClientHandle::new(
        0, nowhere, nowhere,
    ));
    let mut client = Client::new(handle, false);
    client.may_block = false;
    client.master = true;
    client
}

/// `REPLCONF ACK <offset>`, as the link sends it.
fn ack_command(offset: u64) -> Bytes {
    let mut out = bytes::BytesMut::new();
    let offset = offset.to_string();
    slotproxy::resp::encode_request(&mut out, &[&b"REPLCONF"[..], b"ACK", offset.as_bytes()]);
    out.freeze()
}
