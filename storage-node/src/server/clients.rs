//! The registry of connected clients, for CLIENT LIST / INFO / KILL and INFO clients.

use std::net::SocketAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
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
    /// The ACL user the client is logged in as (`default` until AUTH or HELLO says).
    pub user: Mutex<Bytes>,
    pub lib_name: Mutex<Vec<u8>>,
    pub lib_ver: Mutex<Vec<u8>>,
    pub last_command: Mutex<&'static str>,
    /// The address of `last_command`'s text (compared, never dereferenced): a client that
    /// repeats its command skips the lock (see [`ClientHandle::set_last_command`]).
    last_command_addr: AtomicUsize,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// Milliseconds since `created` of the last command.
    pub last_active_ms: AtomicU64,
    pub no_evict: AtomicBool,
    /// In MONITOR mode (CLIENT LIST flag `O`); see `keyspace::monitors`.
    pub monitor: AtomicBool,
    /// Bytes received and not yet run (CLIENT LIST `qbuf`); set through
    /// [`ClientHandle::set_query_buffer`], which keeps the running total right.
    pub query_buffer: AtomicUsize,
    pub killed: AtomicBool,
    pub kill: Notify,
    /// Replies and pushes produced by other connections for this client (pub/sub messages,
    /// keyspace notifications): the connection writes them as they arrive.
    mailbox: mpsc::UnboundedSender<Bytes>,
    mailbox_rx: Mutex<Option<mpsc::UnboundedReceiver<Bytes>>>,
    /// Bytes sent to the mailbox and not yet written, for the pub/sub output buffer limit.
    pub mailbox_bytes: AtomicUsize,
    /// The part of the connection's last reply the socket has not taken yet: set only
    /// while a write waits for the client to read (CLIENT LIST `omem`); set through
    /// [`ClientHandle::set_reply_unwritten`].
    pub reply_unwritten: AtomicUsize,
    /// This client's share of the normal clients' memory total (`maxmemory-clients`).
    memory: super::client_memory::Share,
    /// Set when a key this client WATCHes changes (Redis's `CLIENT_DIRTY_CAS`, flag `d`).
    pub watch_dirty: AtomicBool,
    /// Commands queued since MULTI, -1 outside MULTI (CLIENT LIST `multi=`, flag `x`).
    pub multi_queued: AtomicI64,
    /// Subscription counts (CLIENT LIST `sub`, `psub`, `ssub`, flag `P`).
    pub pubsub: crate::pubsub::HandleState,
    /// The connection is a replica of this node (after SYNC/PSYNC; flag `S`).
    pub replica: AtomicBool,
    /// CLIENT TRACKING's state (flags `t`, `R`, `B`, `redir=`).
    pub tracking: crate::keyspace::tracking::HandleTracking,
}

impl ClientHandle {
    /// Queues bytes for this client's connection to write. Returns the bytes now waiting.
    pub fn deliver(&self, bytes: Bytes) -> usize {
        let len = bytes.len();
        let waiting = self.mailbox_bytes.fetch_add(len, Relaxed) + len;
        let _ = self.mailbox.send(bytes);
        self.memory.recount(self);
        waiting
    }

    /// The connection wrote `len` bytes taken from the mailbox.
    pub fn mailbox_written(&self, len: usize) {
        self.mailbox_bytes.fetch_sub(len, Relaxed);
        self.memory.recount(self);
    }

    /// The query buffer now holds `bytes`.
    pub fn set_query_buffer(&self, bytes: usize) {
        if self.query_buffer.swap(bytes, Relaxed) != bytes {
            self.memory.recount(self);
        }
    }

    /// `bytes` of the last reply wait for the socket.
    pub fn set_reply_unwritten(&self, bytes: usize) {
        if self.reply_unwritten.swap(bytes, Relaxed) != bytes {
            self.memory.recount(self);
        }
    }

    /// The client stops counting among normal clients (it became a replica, or is gone).
    pub fn leave_clients_memory(&self) {
        self.memory.leave(self);
    }

    /// The receiving side of the mailbox; the connection takes it once.
    pub fn take_mailbox(&self) -> Option<mpsc::UnboundedReceiver<Bytes>> {
        lock(&self.mailbox_rx).take()
    }

    /// A client of the node's own (the AOF loader's, a replica's master link): its buffers
    /// count in no total.
    pub fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr) -> ClientHandle {
        Self::counted_in(id, addr, local_addr, Default::default())
    }

    /// A connected client whose buffers count in `total` (see `super::client_memory`).
    pub fn counted_in(
        id: u64,
        addr: SocketAddr,
        local_addr: SocketAddr,
        total: super::client_memory::Total,
    ) -> ClientHandle {
        let (mailbox, mailbox_rx) = mpsc::unbounded_channel();
        ClientHandle {
            id,
            addr,
            local_addr,
            fd: AtomicI32::new(-1),
            created: Instant::now(),
            name: Mutex::default(),
            user: Mutex::new(Bytes::from_static(b"default")),
            lib_name: Mutex::default(),
            lib_ver: Mutex::default(),
            last_command: Mutex::new("NULL"),
            last_command_addr: AtomicUsize::new(0),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_active_ms: AtomicU64::new(0),
            no_evict: AtomicBool::new(false),
            monitor: AtomicBool::new(false),
            query_buffer: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            mailbox,
            mailbox_rx: Mutex::new(Some(mailbox_rx)),
            mailbox_bytes: AtomicUsize::new(0),
            reply_unwritten: AtomicUsize::new(0),
            memory: super::client_memory::Share::new(total),
            watch_dirty: AtomicBool::new(false),
            multi_queued: AtomicI64::new(-1),
            pubsub: crate::pubsub::HandleState::default(),
            replica: AtomicBool::new(false),
            tracking: Default::default(),
        }
    }

    /// Asks the connection to close; it does so after its current batch.
    pub fn request_kill(&self) {
        self.killed.store(true, Relaxed);
        // A client connection waits on its mailbox anyway: an empty message wakes it (one
        // future fewer to poll on every turn); `kill` wakes a replica's feeder, or a write
        // stuck on a client that does not read.
        let _ = self.mailbox.send(Bytes::new());
        self.kill.notify_one();
    }

    pub fn age_seconds(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    pub fn idle_seconds(&self) -> u64 {
        let active = self.last_active_ms.load(Relaxed);
        (self.created.elapsed().as_millis() as u64).saturating_sub(active) / 1000
    }

    /// Records the command the client runs (CLIENT LIST `cmd=`). Runs for every command, so
    /// the usual case, the same command as before, costs a plain load and compare instead of
    /// a lock and unlock.
    pub fn set_last_command(&self, name: &'static str) {
        let addr = name.as_ptr() as usize;
        if self.last_command_addr.load(Relaxed) != addr {
            *lock(&self.last_command) = name;
            self.last_command_addr.store(addr, Relaxed);
        }
    }

    /// The ACL user the client is logged in as.
    pub fn user(&self) -> Bytes {
        lock(&self.user).clone()
    }

    pub fn touch(&self) {
        self.last_active_ms
            .store(self.created.elapsed().as_millis() as u64, Relaxed);
    }
}

pub use slotproxy::registry::lock;

/// All connected clients by id.
pub type ClientRegistry = slotproxy::registry::Registry<ClientHandle>;

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
    /// The ACL version (`crate::acl::Acl::version`) at which this client's user was found
    /// allowed everything; 0 when not known. Reset whenever the client changes user.
    pub acl_unrestricted_at: u64,
    pub reply_mode: ReplyMode,
    /// Set by QUIT (and protocol errors): close once the pending replies are written.
    pub close_after_reply: bool,
    /// Set by a blocking command that found nothing (see `Ctx::block_on`).
    pub block: Option<crate::keyspace::blocking::BlockRequest>,
    /// False inside MULTI/EXEC and scripts: blocking commands then answer at once, as
    /// their non-blocking forms would.
    pub may_block: bool,
    /// The transaction being queued since MULTI.
    pub multi: Option<crate::cmd::transaction::Multi>,
    /// Keys this client WATCHes, with their database.
    pub watching: Vec<(usize, Bytes)>,
    /// Channels, patterns and shard channels this client subscribes to.
    pub subscriptions: crate::pubsub::Subscriptions,
    /// True while commands run inside EXEC (or a script): they keep the outer command's
    /// clock and skip the MULTI queue and the subscriber-mode check, as Redis's nested
    /// `call()` does.
    pub nested: bool,
    /// Cluster mode: ASKING was the previous command (one-shot; see `cmd::execute`).
    pub asking: bool,
    /// Cluster mode: READONLY was sent (reads on replicas).
    pub readonly: bool,
    /// The AOF loader's client: the log is replayed whole, whatever slots the cluster
    /// state says this node serves at start (no MOVED, ASK or CLUSTERDOWN), as Redis's
    /// loading client is never redirected.
    pub loading: bool,
    /// What REPLCONF said before SYNC/PSYNC.
    pub replica_handshake: crate::replication::master::Handshake,
    /// Set by SYNC/PSYNC: the connection becomes the replica's feeder after this batch.
    pub takeover: Option<crate::replication::master::sync::Attach>,
    /// The stream offset after this client's last write (Redis's `woff`), for WAIT.
    pub woff: u64,
    /// The client ran a command before (Redis moves `woff` after every command, so a
    /// WAIT that follows any command waits for the stream as it stands; one sent first
    /// on a connection waits for nothing).
    pub has_run_commands: bool,
    /// Set by a WAIT that must wait for acknowledgements.
    pub ack_wait: Option<crate::replication::wait::AckWait>,
    /// The replica's link applying its master's stream (Redis's `CLIENT_MASTER`): its
    /// writes pass the replica's gates and it sees keys past their TTL
    /// (`crate::replication::replica`).
    pub master: bool,
    /// A script's client (EVAL, FCALL): the slow log shows it as Redis shows its Lua
    /// client, address `?:0` and no name.
    pub scripted: bool,
    /// A blocked command run again because a key it waits for changed: MONITOR showed it
    /// when it arrived and does not show it again.
    pub retrying: bool,
    /// Set while a blocked command runs again: the key whose readiness woke it (a woken
    /// XREAD answers for that stream alone, as Redis serves one key at a time).
    pub woken_by: Option<Bytes>,
    /// The command this client named last (`cmd::Dispatch::get_remembered`).
    pub last_lookup: std::cell::Cell<crate::cmd::LastLookup>,
}

impl Client {
    pub fn new(handle: Arc<ClientHandle>, needs_auth: bool) -> Client {
        Client {
            handle,
            db: 0,
            proto: slotproxy::resp::Proto::Resp2,
            authenticated: !needs_auth,
            acl_unrestricted_at: 0,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            block: None,
            may_block: true,
            multi: None,
            watching: Vec::new(),
            subscriptions: crate::pubsub::Subscriptions::default(),
            nested: false,
            asking: false,
            readonly: false,
            loading: false,
            replica_handshake: Default::default(),
            takeover: None,
            woff: 0,
            has_run_commands: false,
            ack_wait: None,
            master: false,
            scripted: false,
            retrying: false,
            woken_by: None,
            last_lookup: Default::default(),
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
