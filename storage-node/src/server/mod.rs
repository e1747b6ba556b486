//! The network side of the node: state shared by all connections, the listener, and the
//! per-connection loop.

pub mod allocator;
pub mod busy_poll;
pub mod client_memory;
pub mod client_peaks;
pub mod clients;
mod connection;
mod listener;
pub mod pause;
pub mod protection;
mod signals;
mod sockets;
pub mod stats;

pub use listener::{run, Server};

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
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
    /// Threads blocked in [`lock_keyspace`](Self::lock_keyspace): a long holder (the
    /// snapshot writer) ends its hold early when someone waits.
    keyspace_waiters: AtomicUsize,
    pub config: RwLock<Config>,
    /// Bumped by every [`config_mut`](Self::config_mut), so connections can keep copies of
    /// the settings they read on every loop and re-read them only after a change.
    pub config_version: AtomicU64,
    pub clients: ClientRegistry,
    pub stats: Stats,
    /// The largest client buffers of the last seconds (INFO clients).
    pub client_peaks: client_peaks::RecentPeaks,
    /// Normal clients' buffers against `maxmemory-clients`.
    pub client_memory: client_memory::ClientsMemory,
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
    /// CLIENT PAUSE and FAILOVER's pause of clients' commands.
    pub pause: pause::Pause,
    /// Users and their permissions, the ACL log.
    pub acl: crate::acl::Acl,
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
        let acl = crate::acl::Acl::new();
        acl.set_default_password(config.requirepass.as_deref());
        let client_memory = client_memory::ClientsMemory::default();
        client_memory.apply_settings(&config);
        Shared {
            keyspace: Mutex::new(keyspace),
            keyspace_waiters: AtomicUsize::new(0),
            config: RwLock::new(config),
            config_version: AtomicU64::new(0),
            clients: ClientRegistry::default(),
            stats: Stats::default(),
            client_peaks: Default::default(),
            client_memory,
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
            pause: Default::default(),
            acl,
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
        match self.keyspace.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                self.keyspace_waiters.fetch_add(1, Relaxed);
                let guard = clients::lock(&self.keyspace);
                self.keyspace_waiters.fetch_sub(1, Relaxed);
                guard
            }
        }
    }

    /// Some thread waits for the keyspace lock.
    pub fn keyspace_wanted(&self) -> bool {
        self.keyspace_waiters.load(Relaxed) > 0
    }
}

pub use slotproxy::registry::random_hex_id;

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Polls `condition` for up to ten seconds.
    fn eventually(condition: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if condition() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_thread_blocked_on_the_keyspace_is_seen_waiting_until_it_has_the_lock() {
        let shared = Shared::new(Config::default(), 0);
        let holder = shared.lock_keyspace();
        assert!(
            !shared.keyspace_wanted(),
            "the holder itself does not count"
        );
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let _keyspace = shared.lock_keyspace();
            });
            assert!(eventually(|| shared.keyspace_wanted()));
            drop(holder);
            waiter.join().unwrap();
        });
        assert!(!shared.keyspace_wanted());
    }
}
