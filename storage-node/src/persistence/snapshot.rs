//! BGSAVE: the RDB file written from a point-in-time snapshot, without fork and without
//! stopping the node.
//!
//! `start` runs under the keyspace lock: it marks every non-empty database for the
//! snapshot (see `keyspace::snapshot_cow`) and starts a thread. The thread takes the lock
//! for at most [`CHUNK`] at a time ([`CHUNK_WHEN_WANTED`] when a client waits for it),
//! encodes whole slots into its buffer, releases the lock
//! and writes the buffer to `dir/temp-bg-<pid>.rdb`; a write that reaches a slot the thread
//! has not written yet first keeps that key's pre-image. When all slots are written the
//! file is fsynced and renamed over `dir/dbfilename`, exactly as SAVE does (one encoder,
//! [`super::rdb_file::Sink`]).
//!
//! Costs: the pre-images (reported as `rdb_last_cow_size`: the most the snapshot held at
//! once) and, per lock hold, the time to encode one slot's keys, or one piece of a slot of
//! many keys (a huge value is encoded in one hold).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::aof::base::Commands;
use super::aof::rewrite::{self, Plan};
use super::disk::{install, library_codes, write_temp, SaveSetup};
use super::rdb::Encodings;
use super::rdb_file::{Sink, Written};
use crate::keyspace::snapshot_cow::{ChunkProgress, SnapshotDb};
use crate::keyspace::Entry;
use crate::keyspace::{unix_time_ms, Keyspace};
use crate::replication::master::transfer::{DiskSync, SocketSync};
use crate::server::clients::lock;
use crate::server::Shared;

/// The longest the writer holds the keyspace lock at a time (whole slots or pieces are
/// written, so a hold can exceed it by one slot's or piece's keys).
const CHUNK: Duration = Duration::from_millis(1);

/// A hold ends sooner, after this much, when a client waits for the lock: the writer still
/// progresses under a steady load, and a client waits about this long, not a whole chunk.
const CHUNK_WHEN_WANTED: Duration = Duration::from_micros(200);

/// The writer's pause after a hold that clients waited for.
const HANDOVER: Duration = Duration::from_micros(100);

/// How long the writer waits before it looks again while a script has the keyspace.
const BUSY_RETRY: Duration = Duration::from_millis(5);

/// What INFO persistence reports about BGSAVE, and the running one's controls.
pub struct Background {
    running: AtomicBool,
    /// The running snapshot writes an AOF base (BGREWRITEAOF), not the RDB file.
    for_aof: AtomicBool,
    /// BGREWRITEAOF asked while a BGSAVE ran: it starts when that ends.
    pub aof_scheduled: AtomicBool,
    /// The running snapshot's temp file, removed by [`Self::abort`].
    temp: Mutex<PathBuf>,
    /// BGSAVE SCHEDULE (or BGSAVE inside EXEC) asked for one to start when possible.
    pub(super) scheduled: AtomicBool,
    /// Set by SHUTDOWN: the running save stops and removes its temp file.
    abort: AtomicBool,
    /// Held while the finished file is renamed into place, so that once [`Self::abort`]
    /// returns no older snapshot can replace the file SHUTDOWN saves next.
    install_gate: Mutex<()>,
    started_ms: AtomicU64,
    /// `rdb_last_bgsave_status`: false after a failed background save.
    pub(super) last_ok: AtomicBool,
    last_time_sec: AtomicI64,
    /// Unix seconds of the last attempt (a failed one is retried after
    /// [`super::save_points::RETRY_DELAY_SECS`]).
    pub(super) last_try_unix: AtomicU64,
    last_cow: AtomicU64,
    /// `aof_last_cow_size`: the pre-images the last rewrite's snapshot held at most.
    aof_last_cow: AtomicU64,
    cow_now: AtomicU64,
    cow_peak: AtomicU64,
    keys_done: AtomicU64,
    keys_total: AtomicU64,
}

impl Default for Background {
    fn default() -> Background {
        Background {
            running: AtomicBool::new(false),
            for_aof: AtomicBool::new(false),
            aof_scheduled: AtomicBool::new(false),
            temp: Mutex::new(PathBuf::new()),
            scheduled: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            install_gate: Mutex::new(()),
            started_ms: AtomicU64::new(0),
            last_ok: AtomicBool::new(true),
            last_time_sec: AtomicI64::new(-1),
            last_try_unix: AtomicU64::new(0),
            last_cow: AtomicU64::new(0),
            aof_last_cow: AtomicU64::new(0),
            cow_now: AtomicU64::new(0),
            cow_peak: AtomicU64::new(0),
            keys_done: AtomicU64::new(0),
            keys_total: AtomicU64::new(0),
        }
    }
}

/// INFO persistence's BGSAVE figures, read at once.
pub struct Figures {
    pub in_progress: bool,
    pub last_ok: bool,
    pub last_time_sec: i64,
    pub current_time_sec: i64,
    pub last_cow_size: u64,
    pub cow_size: u64,
    pub cow_peak: u64,
    pub keys_done: u64,
    pub keys_total: u64,
}

impl Background {
    /// A BGSAVE runs (`rdb_bgsave_in_progress`).
    pub fn in_progress(&self) -> bool {
        self.running.load(Relaxed) && !self.for_aof.load(Relaxed)
    }

    /// An AOF rewrite writes its base (`aof_rewrite_in_progress`).
    pub fn rewriting(&self) -> bool {
        self.running.load(Relaxed) && self.for_aof.load(Relaxed)
    }

    /// The snapshot is taken, by a BGSAVE or a rewrite: there is only one at a time, as
    /// Redis has one child.
    pub fn busy(&self) -> bool {
        self.running.load(Relaxed)
    }

    /// `aof_current_rewrite_time_sec`: -1 when none runs.
    pub fn rewrite_time_sec(&self) -> i64 {
        if self.rewriting() {
            (unix_time_ms().saturating_sub(self.started_ms.load(Relaxed)) / 1000) as i64
        } else {
            -1
        }
    }

    /// `aof_last_cow_size`.
    pub fn aof_last_cow_size(&self) -> u64 {
        self.aof_last_cow.load(Relaxed)
    }

    /// Whether the last background save failed (`rdb_last_bgsave_status:err`).
    pub fn last_failed(&self) -> bool {
        !self.last_ok.load(Relaxed)
    }

    pub fn figures(&self) -> Figures {
        let in_progress = self.in_progress();
        // The `current_*` figures are the running snapshot's, BGSAVE's or a rewrite's,
        // as Redis reports them for either child.
        let busy = self.busy();
        let current_time_sec = if in_progress {
            (unix_time_ms().saturating_sub(self.started_ms.load(Relaxed)) / 1000) as i64
        } else {
            -1
        };
        Figures {
            in_progress,
            last_ok: self.last_ok.load(Relaxed),
            last_time_sec: self.last_time_sec.load(Relaxed),
            current_time_sec,
            last_cow_size: self.last_cow.load(Relaxed),
            cow_size: if busy { self.cow_now.load(Relaxed) } else { 0 },
            cow_peak: if busy { self.cow_peak.load(Relaxed) } else { 0 },
            keys_done: if busy {
                self.keys_done.load(Relaxed)
            } else {
                0
            },
            keys_total: if busy {
                self.keys_total.load(Relaxed)
            } else {
                0
            },
        }
    }

    /// Stops a running background save (SHUTDOWN, FLUSHALL), as Redis kills its child:
    /// the snapshot's pre-images are dropped now, the thread stops at its next chunk
    /// without touching the RDB file, and its temp file is removed. The last save's
    /// status is left alone.
    pub fn abort(&self, shared: &Shared, keyspace: &mut Keyspace) {
        let _ = shared;
        let _gate = lock(&self.install_gate);
        if self.busy() {
            self.abort.store(true, Relaxed);
            keyspace.end_snapshot();
            let _ = std::fs::remove_file(&*lock(&self.temp));
        }
    }

    /// BGSAVE SCHEDULE: the save-point check starts one as soon as none runs.
    pub fn schedule(&self) {
        self.scheduled.store(true, Relaxed);
    }
}

/// Why a background save did not start.
#[derive(Debug)]
pub enum StartError {
    /// One is already running.
    Running,
    /// The thread could not be created.
    Spawn(io::Error),
}

/// What the snapshot is written to.
pub enum Target {
    /// The RDB file (BGSAVE).
    Rdb,
    /// A new AOF base file (BGREWRITEAOF), installed by `aof::rewrite::finish`.
    AofBase(Box<Plan>),
    /// A full sync, disk-based: the RDB file, then handed to the waiting replicas.
    ReplicaDisk(Box<DiskSync>),
    /// A full sync, diskless: straight to the replicas' sockets.
    ReplicaSocket(Box<SocketSync>),
}

/// What the writer thread needs, fixed when the snapshot starts.
struct Job {
    target: Target,
    shared: Arc<Shared>,
    setup: SaveSetup,
    libraries: Vec<bytes::Bytes>,
    dbs: Vec<SnapshotDb>,
    /// The write counter at the start: the file holds every change up to it.
    dirty_at_start: u64,
    started: Instant,
}

/// Starts a background save of `keyspace` (which must be `shared`'s, locked by the
/// caller). Redis's `rdbSaveBackground`.
pub fn start(shared: &Shared, keyspace: &mut Keyspace) -> Result<(), StartError> {
    start_for(shared, keyspace, Target::Rdb)
}

/// Starts the snapshot's thread, writing to `target`.
pub fn start_for(
    shared: &Shared,
    keyspace: &mut Keyspace,
    target: Target,
) -> Result<(), StartError> {
    let background = &shared.persistence.background;
    let arc = shared
        .scripting
        .server()
        .map_err(|e| StartError::Spawn(io::Error::other(e.message().to_string())))?;
    if background.running.swap(true, Relaxed) {
        return Err(StartError::Running);
    }
    shared.aof.snapshot_running.store(true, Relaxed);
    let now = unix_time_ms();
    background.started_ms.store(now, Relaxed);
    background.last_try_unix.store(now / 1000, Relaxed);
    background.scheduled.store(false, Relaxed);
    background.abort.store(false, Relaxed);
    let for_aof = matches!(target, Target::AofBase(_));
    background.for_aof.store(for_aof, Relaxed);
    let setup = SaveSetup::new(shared);
    *lock(&background.temp) = match &target {
        Target::Rdb | Target::ReplicaDisk(_) => setup.temp(BG_TAG),
        Target::AofBase(plan) => plan.temp.clone(),
        Target::ReplicaSocket(_) => PathBuf::new(),
    };
    if for_aof {
        background.aof_scheduled.store(false, Relaxed);
    } else {
        shared.persistence.count_save();
    }
    let dbs = keyspace.begin_snapshot();
    background
        .keys_total
        .store(dbs.iter().map(|d| d.keys as u64).sum(), Relaxed);
    background.keys_done.store(0, Relaxed);
    background.cow_now.store(0, Relaxed);
    background.cow_peak.store(0, Relaxed);
    let job_kind = match &target {
        Target::AofBase(_) => JobKind::Aof,
        Target::ReplicaSocket(_) => JobKind::Socket,
        Target::Rdb | Target::ReplicaDisk(_) => JobKind::Rdb,
    };
    let job = Job {
        target,
        setup,
        libraries: library_codes(shared),
        dbs,
        dirty_at_start: keyspace.dirty(),
        started: Instant::now(),
        shared: arc,
    };
    let spawned = std::thread::Builder::new()
        .name(if for_aof { "bgrewriteaof" } else { "bgsave" }.into())
        .spawn(move || run(job));
    match spawned {
        Ok(_) => {
            match &job_kind {
                JobKind::Aof => {
                    crate::log::notice!("Background append only file rewriting started")
                }
                JobKind::Rdb => crate::log::notice!("Background saving started"),
                JobKind::Socket => {
                    crate::log::notice!("Starting BGSAVE for SYNC with target: replicas sockets")
                }
            }
            Ok(())
        }
        Err(e) => {
            keyspace.end_snapshot();
            background.running.store(false, Relaxed);
            shared.aof.snapshot_running.store(false, Relaxed);
            if for_aof {
                crate::log::warning!("Can't rewrite append only file in background: {e}");
            } else {
                background.last_ok.store(false, Relaxed);
                crate::log::warning!("Can't save in background: {e}");
            }
            Err(StartError::Spawn(e))
        }
    }
}

/// What the start logs.
enum JobKind {
    Rdb,
    Aof,
    Socket,
}

/// The temp file's tag (`temp-bg-<pid>.rdb`): SAVE's own temp file is another.
const BG_TAG: &str = "bg-";

fn run(mut job: Job) {
    // The target is used apart from the rest of the job (the replicas' hand-over).
    let mut target = std::mem::replace(&mut job.target, Target::Rdb);
    let shared = &job.shared;
    let background = &shared.persistence.background;
    let temp = lock(&background.temp).clone();
    let write = || match &mut target {
        Target::Rdb | Target::ReplicaDisk(_) => write_temp(&temp, |file| {
            let params = job.setup.params(&job.libraries);
            write_snapshot(&job, Sink::start(file, &params))
        })
        .and_then(|written| {
            let _gate = lock(&background.install_gate);
            if background.abort.load(Relaxed) {
                let _ = std::fs::remove_file(&temp);
                return Err(io::Error::new(io::ErrorKind::Interrupted, "aborted"));
            }
            install(&temp, &job.setup)?;
            if let Target::ReplicaDisk(sync) = &mut target {
                // Under the gate: no other save renames over the file meanwhile.
                sync.deliver(&job.setup.target);
            }
            Ok(written)
        }),
        Target::ReplicaSocket(sync) => {
            let params = job.setup.params(&job.libraries);
            let written = write_snapshot(&job, Sink::start(&**sync, &params))?;
            sync.finish();
            Ok(written)
        }
        Target::AofBase(plan) => write_temp(&temp, |file| {
            if plan.preamble {
                let mut params = job.setup.params(&job.libraries);
                params.aof_base = true;
                write_snapshot(&job, Sink::start(file, &params))
            } else {
                write_snapshot(&job, Commands::start(file, &job.libraries))
            }
        }),
    };
    // A bug must not leave the snapshot "in progress" forever: it fails like a write error.
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(write)).unwrap_or_else(|_| {
            let _ = std::fs::remove_file(&temp);
            Err(io::Error::other(
                "internal error while writing the snapshot",
            ))
        });
    let mut keyspace = shared.lock_keyspace();
    // The pre-images live in the databases: wait until no script has them lent out.
    while keyspace.db_count() == 0 {
        drop(keyspace);
        std::thread::sleep(BUSY_RETRY);
        keyspace = shared.lock_keyspace();
    }
    keyspace.end_snapshot();
    // Abort is decided under the keyspace lock, which is held from here to the end.
    let aborted = background.abort.load(Relaxed);
    if let Target::ReplicaSocket(_) = &target {
        match &result {
            Ok(written) => crate::log::notice!(
                "Diskless rdb transfer done: {} keys, {} bytes",
                written.keys,
                written.bytes
            ),
            Err(e) => crate::log::warning!("Diskless rdb transfer failed: {e}"),
        }
        background.running.store(false, Relaxed);
        shared.aof.snapshot_running.store(false, Relaxed);
        drop(keyspace);
        return;
    }
    if let Target::AofBase(plan) = &target {
        let result = match result {
            Ok(_) if aborted => {
                let _ = std::fs::remove_file(&temp);
                Err(io::Error::new(io::ErrorKind::Interrupted, "aborted"))
            }
            Ok(_) => rewrite::finish(shared, plan),
            Err(e) => Err(e),
        };
        rewrite::report(shared, &result, aborted, job.started);
        background
            .aof_last_cow
            .store(background.cow_peak.load(Relaxed), Relaxed);
        background.running.store(false, Relaxed);
        shared.aof.snapshot_running.store(false, Relaxed);
        drop(keyspace);
        return;
    }
    match &result {
        Ok(written) => {
            shared.persistence.saved(job.dirty_at_start);
            crate::log::notice!(
                "DB saved on disk: {} keys, {} bytes to {}",
                written.keys,
                written.bytes,
                job.setup.target.display()
            );
            crate::log::notice!("Background saving terminated with success");
        }
        Err(_) if aborted => crate::log::notice!("Background saving stopped (shutdown)"),
        Err(e) => {
            background.last_ok.store(false, Relaxed);
            crate::log::warning!(
                "Error saving DB on disk ({}): {e}",
                job.setup.target.display()
            );
            crate::log::warning!("Background saving error");
        }
    }
    if !aborted {
        background
            .last_time_sec
            .store(job.started.elapsed().as_secs() as i64, Relaxed);
        background
            .last_cow
            .store(background.cow_peak.load(Relaxed), Relaxed);
    }
    background.running.store(false, Relaxed);
    shared.aof.snapshot_running.store(false, Relaxed);
    drop(keyspace);
}

/// What a snapshot is encoded into: the RDB file (BGSAVE, or the AOF base's RDB
/// preamble) or RESTORE commands (an AOF base without the preamble).
pub trait SnapshotSink {
    fn begin_db(&mut self, index: usize, keys: usize, volatile: usize);
    /// One key; `access`, its access word when known, for the file's IDLE/FREQ hint.
    fn entry(&mut self, entry: &Entry, access: Option<u32>, encodings: &Encodings);
    fn flush_if_full(&mut self) -> io::Result<()>;
    fn finish(self, checksum: bool) -> io::Result<Written>;
}

impl<W: Write> SnapshotSink for Sink<W> {
    fn begin_db(&mut self, index: usize, keys: usize, volatile: usize) {
        Sink::begin_db(self, index, keys, volatile)
    }
    fn entry(&mut self, entry: &Entry, access: Option<u32>, encodings: &Encodings) {
        Sink::entry(self, entry, access, encodings)
    }
    fn flush_if_full(&mut self) -> io::Result<()> {
        Sink::flush_if_full(self)
    }
    fn finish(self, checksum: bool) -> io::Result<Written> {
        Ok(Sink::finish(self, checksum)?.1)
    }
}

/// The file's contents: header, then each database chunk by chunk.
fn write_snapshot(job: &Job, mut sink: impl SnapshotSink) -> io::Result<Written> {
    let shared = &job.shared;
    let background = &shared.persistence.background;
    for db in &job.dbs {
        sink.begin_db(db.index, db.keys, db.volatile);
        loop {
            if background.abort.load(Relaxed) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "aborted"));
            }
            let progress = {
                let mut keyspace = shared.lock_keyspace();
                // Measured before the chunk frees the pre-images of the slots it writes:
                // they only grow between chunks, so this is the peak.
                let cow = keyspace.snapshot_cow_bytes() as u64;
                let started = Instant::now();
                let stop = || {
                    let held = started.elapsed();
                    held >= CHUNK || (held >= CHUNK_WHEN_WANTED && shared.keyspace_wanted())
                };
                let mut keys = 0;
                let progress = keyspace.snapshot_chunk(db.index, stop, |entry, access| {
                    sink.entry(entry, access, &job.setup.encodings);
                    keys += 1;
                });
                drop(keyspace);
                background.keys_done.fetch_add(keys, Relaxed);
                background.cow_now.store(cow, Relaxed);
                background.cow_peak.fetch_max(cow, Relaxed);
                progress
            };
            let wanted = shared.keyspace_wanted();
            sink.flush_if_full()?;
            // A mutex is not fair: a thread that unlocks and locks again at once usually
            // wins over the waiters it just woke. This pause lets the waiting clients in;
            // when nobody waited the writer goes on at once.
            if wanted {
                std::thread::sleep(HANDOVER);
            }
            match progress {
                ChunkProgress::Done => break,
                ChunkProgress::More => {}
                ChunkProgress::Busy => std::thread::sleep(BUSY_RETRY),
            }
        }
    }
    sink.finish(job.setup.checksum)
}
