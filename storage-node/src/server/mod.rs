//! The network side of the node: state shared by all connections, the listener, and the
//! per-connection loop.

pub mod busy_poll;
pub mod client_peaks;
pub mod clients;
mod connection;
mod listener;
pub mod protection;
mod signals;
mod sockets;
pub mod stats;

pub use listener::{run, Server};

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clients::ClientRegistry;
use stats::Stats;

use crate::cmd::Dispatch;
use crate::config::Config;
use crate::keyspace::Keyspace;

/// State shared by every connection.
///
/// Commands run one at a time under the keyspace lock: Redis semantics (MULTI/EXEC, Lua,
/// WATCH, blocking wake-ups) are defined by a serial order of commands. Connections read,
/// parse and write in parallel and take the lock once per pipelined batch.
pub struct Shared {
    pub keyspace: Mutex<Keyspace>,
    pub config: RwLock<Config>,
    /// Bumped by every [`config_mut`](Self::config_mut), so connections can keep copies of
    /// the settings they read on every loop and re-read them only after a change.
    pub config_version: AtomicU64,
    pub clients: ClientRegistry,
    pub stats: Stats,
    /// The largest client buffers of the last seconds (INFO clients).
    pub client_peaks: client_peaks::RecentPeaks,
    pub dispatch: Dispatch,
    /// Lua scripts and functions, and the script running now (for BUSY and SCRIPT KILL).
    pub scripting: crate::scripting::Scripting,
    pub started: Instant,
    pub started_unix: u64,
    pub run_id: String,
    pub tcp_port: u16,
    /// Cluster mode's state and bus, when `cluster-enabled yes`.
    pub cluster: Option<std::sync::Arc<crate::cluster::Cluster>>,
    /// Connections MIGRATE keeps open to its targets.
    pub migrate_sockets: crate::cluster::migrate::SocketCache,
    /// The RDB file's save figures (LASTSAVE, INFO persistence).
    pub persistence: crate::persistence::disk::SaveState,
    /// The append-only file.
    pub aof: std::sync::Arc<crate::persistence::aof::Aof>,
    /// Master and replica state, the backlog.
    pub replication: crate::replication::Replication,
}

impl Shared {
    pub fn new(config: Config, tcp_port: u16) -> Shared {
        let started_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let dispatch = Dispatch::with_renames(&config.renamed_commands);
        let mut keyspace = Keyspace::new(config.databases);
        keyspace.apply_settings(&config);
        let aof = crate::persistence::aof::Aof::new();
        aof.apply_settings(&config);
        Shared {
            keyspace: Mutex::new(keyspace),
            config: RwLock::new(config),
            config_version: AtomicU64::new(0),
            clients: ClientRegistry::default(),
            stats: Stats::default(),
            client_peaks: Default::default(),
            dispatch,
            scripting: crate::scripting::Scripting::default(),
            started: Instant::now(),
            started_unix,
            run_id: random_hex_id(),
            tcp_port,
            cluster: None,
            migrate_sockets: Default::default(),
            persistence: crate::persistence::disk::SaveState::new(started_unix),
            aof: std::sync::Arc::new(aof),
            replication: Default::default(),
        }
    }

    /// A copy of the settings (cheap; they change rarely).
    pub fn config(&self) -> std::sync::RwLockReadGuard<'_, Config> {
        self.config.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn config_mut(&self) -> std::sync::RwLockWriteGuard<'_, Config> {
        let guard = self.config.write().unwrap_or_else(|p| p.into_inner());
        // Bumped while the lock is held: a reader that sees the new version then waits on
        // the lock for the changed settings.
        self.config_version.fetch_add(1, Relaxed);
        guard
    }

    pub fn lock_keyspace(&self) -> std::sync::MutexGuard<'_, Keyspace> {
        clients::lock(&self.keyspace)
    }
}

pub use slotproxy::registry::random_hex_id;
