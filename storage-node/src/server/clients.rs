//! The registry of connected clients, for CLIENT LIST / INFO / KILL and INFO clients.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

/// What other connections may see or change of a client. The connection task owns the rest.
#[derive(Debug)]
pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub local_addr: SocketAddr,
    /// The socket's file descriptor, for CLIENT LIST (-1 until the listener sets it).
    pub fd: AtomicI32,
    pub created: Instant,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<Vec<u8>>,
    pub lib_ver: Mutex<Vec<u8>>,
    pub last_command: Mutex<String>,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// Milliseconds since `created` of the last command.
    pub last_active_ms: AtomicU64,
    pub no_evict: AtomicBool,
    pub query_buffer: AtomicUsize,
    pub killed: AtomicBool,
    pub kill: Notify,
    /// Replies and pushes produced by other connections for this client (pub/sub messages,
    /// keyspace notifications): the connection writes them as they arrive.
    mailbox: mpsc::UnboundedSender<Bytes>,
    mailbox_rx: Mutex<Option<mpsc::UnboundedReceiver<Bytes>>>,
    /// Bytes sent to the mailbox and not yet written, for the pub/sub output buffer limit.
    pub mailbox_bytes: AtomicUsize,
}

impl ClientHandle {
    /// Queues bytes for this client's connection to write. Returns the bytes now waiting.
    pub fn deliver(&self, bytes: Bytes) -> usize {
        let len = bytes.len();
        let waiting = self.mailbox_bytes.fetch_add(len, Relaxed) + len;
        let _ = self.mailbox.send(bytes);
        waiting
    }

    /// The receiving side of the mailbox; the connection takes it once.
    pub fn take_mailbox(&self) -> Option<mpsc::UnboundedReceiver<Bytes>> {
        lock(&self.mailbox_rx).take()
    }

    pub fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr) -> ClientHandle {
        let (mailbox, mailbox_rx) = mpsc::unbounded_channel();
        ClientHandle {
            id,
            addr,
            local_addr,
            fd: AtomicI32::new(-1),
            created: Instant::now(),
            name: Mutex::default(),
            lib_name: Mutex::default(),
            lib_ver: Mutex::default(),
            last_command: Mutex::new("NULL".into()),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_active_ms: AtomicU64::new(0),
            no_evict: AtomicBool::new(false),
            query_buffer: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            mailbox,
            mailbox_rx: Mutex::new(Some(mailbox_rx)),
            mailbox_bytes: AtomicUsize::new(0),
        }
    }

    /// Asks the connection to close; it does so after its current batch.
    pub fn request_kill(&self) {
        self.killed.store(true, Relaxed);
        self.kill.notify_one();
    }

    pub fn age_seconds(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    pub fn idle_seconds(&self) -> u64 {
        let active = self.last_active_ms.load(Relaxed);
        (self.created.elapsed().as_millis() as u64).saturating_sub(active) / 1000
    }

    pub fn touch(&self) {
        self.last_active_ms
            .store(self.created.elapsed().as_millis() as u64, Relaxed);
    }
}

/// Locks a mutex, ignoring poisoning: a panic in one connection must not wedge the others.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// All connected clients by id.
#[derive(Default)]
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
}

impl ClientRegistry {
    pub fn register(&self, addr: SocketAddr, local_addr: SocketAddr) -> Arc<ClientHandle> {
        let id = self.next_id.fetch_add(1, Relaxed) + 1;
        let handle = Arc::new(ClientHandle::new(id, addr, local_addr));
        lock(&self.clients).insert(id, handle.clone());
        handle
    }

    pub fn unregister(&self, id: u64) {
        lock(&self.clients).remove(&id);
    }

    pub fn count(&self) -> usize {
        lock(&self.clients).len()
    }

    /// A snapshot of the connected clients, by id.
    pub fn snapshot(&self) -> Vec<Arc<ClientHandle>> {
        lock(&self.clients).values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        lock(&self.clients).get(&id).cloned()
    }
}

/// How a client wants replies (CLIENT REPLY).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command only.
    SkipNext,
    /// Set while the command after CLIENT REPLY SKIP runs.
    Skipping,
}

/// The state a connection keeps about its client.
pub struct Client {
    pub handle: Arc<ClientHandle>,
    pub db: usize,
    pub proto: slotproxy::resp::Proto,
    pub authenticated: bool,
    pub reply_mode: ReplyMode,
    /// Set by QUIT (and protocol errors): close once the pending replies are written.
    pub close_after_reply: bool,
    /// Set by a blocking command that found nothing (see `Ctx::block_on`).
    pub block: Option<crate::keyspace::blocking::BlockRequest>,
    /// False inside MULTI/EXEC and scripts: blocking commands then answer at once, as
    /// their non-blocking forms would.
    pub may_block: bool,
    /// Cluster mode: ASKING was the previous command (one-shot; see `cmd::execute`).
    pub asking: bool,
    /// Cluster mode: READONLY was sent (reads on replicas).
    pub readonly: bool,
}

impl Client {
    pub fn new(handle: Arc<ClientHandle>, needs_auth: bool) -> Client {
        Client {
            handle,
            db: 0,
            proto: slotproxy::resp::Proto::Resp2,
            authenticated: !needs_auth,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            block: None,
            may_block: true,
            asking: false,
            readonly: false,
        }
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }

    pub fn select(&mut self, db: usize) {
        self.db = db;
        self.handle.db.store(db, Relaxed);
    }
}
