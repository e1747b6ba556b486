//! The proxy's connected clients, for CLIENT LIST / INFO / KILL and INFO clients.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::Notify;

use crate::cluster::{CommandSpec, CommandTable};

/// What other sessions may see or change of a client.
#[derive(Debug)]
pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub local_addr: SocketAddr,
    pub created: Instant,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<Vec<u8>>,
    pub lib_ver: Mutex<Vec<u8>>,
    /// The command table id of the last command, plus one (0: none yet). An atomic, not a
    /// lock: it is written on every request.
    pub last_command: AtomicUsize,
    pub last_active_ms: AtomicU64,
    pub killed: AtomicBool,
    pub kill: Notify,
}

pub use crate::registry::{lock, random_hex_id};

impl ClientHandle {
    pub fn request_kill(&self) {
        self.killed.store(true, Relaxed);
        self.kill.notify_one();
    }

    pub fn touch(&self) {
        self.last_active_ms
            .store(self.created.elapsed().as_millis() as u64, Relaxed);
    }

    pub fn idle_seconds(&self) -> u64 {
        (self.created.elapsed().as_millis() as u64)
            .saturating_sub(self.last_active_ms.load(Relaxed))
            / 1000
    }

    /// Records the command a request runs (for `CLIENT LIST`'s `cmd=`).
    pub fn set_last_command(&self, spec: &CommandSpec) {
        self.last_command.store(spec.id + 1, Relaxed);
    }

    fn last_command_name(&self) -> String {
        match self.last_command.load(Relaxed).checked_sub(1) {
            Some(id) => CommandTable::get()
                .all_specs()
                .find(|spec| spec.id == id)
                .map_or_else(|| "NULL".to_string(), |spec| spec.name.clone()),
            None => "NULL".to_string(),
        }
    }

    /// One `CLIENT LIST` line, with Redis's field names (fields the proxy does not track
    /// are 0 or empty).
    pub fn info_line(&self, resp: u8) -> String {
        format!(
            "id={} addr={} laddr={} fd=0 name={} age={} idle={} flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.local_addr,
            String::from_utf8_lossy(&lock(&self.name)),
            self.created.elapsed().as_secs(),
            self.idle_seconds(),
            self.last_command_name(),
            resp,
            String::from_utf8_lossy(&lock(&self.lib_name)),
            String::from_utf8_lossy(&lock(&self.lib_ver)),
        )
    }
}

/// All connected clients by id.
pub type ClientRegistry = crate::registry::Registry<ClientHandle>;

impl ClientHandle {
    pub fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr) -> ClientHandle {
        ClientHandle {
            id,
            addr,
            local_addr,
            created: Instant::now(),
            name: Mutex::default(),
            lib_name: Mutex::default(),
            lib_ver: Mutex::default(),
            last_command: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }
}
