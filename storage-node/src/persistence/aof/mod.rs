//! The append-only file, in Redis 7.0's multi-part layout (`dir/appenddirname/`: a base
//! file, incremental files and the manifest that lists them, see [`manifest`]).
//!
//! # Writing
//! The propagated stream (`crate::propagation`) is fed here at the end of every batch,
//! under the keyspace lock, so it arrives in order. It waits in a buffer (Redis's
//! `aof_buf`) until the batch's connection is about to send its replies; then whatever is
//! buffered, every connection's writes together, goes to the incremental file in one
//! write (group commit). With `appendfsync always` the file is also fsynced up to the
//! batch's writes before the replies leave; concurrent batches share one fsync. With
//! `everysec` a background thread fsyncs once a second (and writes out what a quiet
//! connection left buffered), with `no` the kernel decides.
//!
//! # Layout
//! - [`manifest`]: the manifest file.
//! - [`files`]: starting, stopping and rewriting the log (BGREWRITEAOF), the files swapped
//!   atomically under a new manifest.
//! - [`rewrite`]: BGREWRITEAOF from the point-in-time snapshot; [`base`]: the base
//!   without the RDB preamble.
//! - [`load`]: replaying the base and incremental files at start.

pub mod base;
pub mod files;
pub mod load;
pub mod manifest;
pub mod rewrite;

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::config::aof::Fsync;
use crate::config::Config;
use crate::keyspace::unix_time_ms;
use crate::server::clients::lock;

/// The log's state: the open incremental file and what waits to be written to it.
#[derive(Default)]
struct Writer {
    /// The incremental file being appended to; `None` while the AOF is off.
    file: Option<Arc<File>>,
    buffer: BytesMut,
    /// The stream offset the end of `buffer` stands for.
    buffered_upto: u64,
    /// Unix seconds of the last `#TS:` annotation written.
    last_timestamp: u64,
    /// The AOF directory and its manifest while the AOF is on.
    dir: PathBuf,
    manifest: manifest::Manifest,
}

/// The AOF of one node (in `Shared`).
#[derive(Default)]
pub struct Aof {
    writer: Mutex<Writer>,
    /// Serialises writes to the file (see [`write_out`](Self::write_out)).
    write_lock: Mutex<()>,
    /// Serialises fsyncs, so concurrent batches wait for one fsync instead of each doing one.
    fsync_lock: Mutex<()>,
    on: AtomicBool,
    /// `appendfsync` and `aof-timestamp-enabled`, copied from the settings.
    fsync: AtomicU8,
    timestamps: AtomicBool,
    /// `no-appendfsync-on-rewrite`, copied from the settings.
    no_fsync_on_rewrite: AtomicBool,
    /// A snapshot (BGSAVE or rewrite) is being written: Redis's "active child".
    pub snapshot_running: AtomicBool,
    /// Stream offsets written to the file, and fsynced.
    written_upto: AtomicU64,
    synced_upto: AtomicU64,
    /// INFO's figures.
    pub stats: Stats,
}

/// What INFO persistence reports about the AOF.
#[derive(Default)]
pub struct Stats {
    pub rewrites: AtomicU64,
    pub last_rewrite_time_sec: AtomicI64,
    pub last_rewrite_ok: AtomicBool,
    pub consecutive_failures: AtomicU64,
    pub last_write_failed: AtomicBool,
    /// Why the last write or fsync failed, as MISCONF reports it.
    pub last_write_error: Mutex<String>,
    pub current_size: AtomicU64,
    pub base_size: AtomicU64,
    /// The size after the last rewrite (or at start), for `auto-aof-rewrite-percentage`.
    pub rewrite_base_size: AtomicU64,
}

const FSYNC_ALWAYS: u8 = 0;
const FSYNC_EVERYSEC: u8 = 1;
const FSYNC_NO: u8 = 2;

impl Aof {
    pub fn new() -> Aof {
        let aof = Aof::default();
        aof.stats.last_rewrite_time_sec.store(-1, Relaxed);
        aof.stats.last_rewrite_ok.store(true, Relaxed);
        aof
    }

    /// Whether writes are logged (`aof_enabled`).
    pub fn is_on(&self) -> bool {
        self.on.load(Relaxed)
    }

    /// Copies the settings consulted on the write path (at start and after CONFIG SET).
    pub fn apply_settings(&self, config: &Config) {
        let fsync = match config.aof.fsync {
            Fsync::Always => FSYNC_ALWAYS,
            Fsync::EverySec => FSYNC_EVERYSEC,
            Fsync::No => FSYNC_NO,
        };
        self.fsync.store(fsync, Relaxed);
        self.timestamps.store(config.aof.timestamps, Relaxed);
        self.no_fsync_on_rewrite
            .store(config.aof.no_fsync_on_rewrite, Relaxed);
    }

    /// `no-appendfsync-on-rewrite yes` while a snapshot is written: the log is written but
    /// not fsynced, so the snapshot's disk writes do not stall the fsyncs (Redis's
    /// trade: up to the whole rewrite's writes can be lost in a power loss).
    fn fsync_paused(&self) -> bool {
        self.no_fsync_on_rewrite.load(Relaxed) && self.snapshot_running.load(Relaxed)
    }

    /// Appends a piece of the propagated stream, which ends at stream offset `upto`.
    /// Called under the keyspace lock, so pieces arrive in order.
    pub fn feed(&self, chunk: Bytes, upto: u64) {
        if !self.is_on() {
            return;
        }
        let mut writer = lock(&self.writer);
        if self.timestamps.load(Relaxed) {
            let now = unix_time_ms() / 1000;
            if now > writer.last_timestamp {
                writer.last_timestamp = now;
                let annotation = format!("#TS:{now}\r\n");
                writer.buffer.extend_from_slice(annotation.as_bytes());
            }
        }
        writer.buffer.extend_from_slice(&chunk);
        writer.buffered_upto = upto;
    }

    /// Makes the stream up to offset `upto` as durable as `appendfsync` asks before the
    /// replies of the writes that produced it leave: written to the file always, fsynced
    /// too with `always`.
    pub fn make_durable(&self, upto: u64) {
        if !self.is_on() {
            return;
        }
        if self.written_upto.load(Relaxed) < upto {
            self.write_out_upto(upto);
        }
        if self.fsync.load(Relaxed) == FSYNC_ALWAYS
            && self.synced_upto.load(Relaxed) < upto
            && !self.fsync_paused()
        {
            self.fsync_written();
        }
    }

    /// Writes everything buffered to the incremental file. The buffer is taken under its
    /// lock and written outside it, so the batches feeding it meanwhile (under the
    /// keyspace lock) never wait for the disk; `write_lock` keeps the writes in order.
    fn write_out(&self) {
        self.write_out_upto(u64::MAX);
    }

    /// [`write_out`](Self::write_out) for a batch whose writes end at stream offset
    /// `needed`: a batch that waited for `write_lock` while another's write took its bytes
    /// along returns without a write of its own (what was fed since is written by the
    /// batches it belongs to, each before its replies), so busy connections share writes
    /// instead of each adding one.
    fn write_out_upto(&self, needed: u64) {
        let _in_order = lock(&self.write_lock);
        if self.written_upto.load(Relaxed) >= needed {
            return;
        }
        let (data, upto, file) = {
            let mut writer = lock(&self.writer);
            if writer.buffer.is_empty() {
                return;
            }
            let Some(file) = writer.file.clone() else {
                return;
            };
            (writer.buffer.split(), writer.buffered_upto, file)
        };
        match (&*file).write_all(&data) {
            Ok(()) => {
                self.stats
                    .current_size
                    .fetch_add(data.len() as u64, Relaxed);
                self.written_upto.store(upto, Relaxed);
                if self.stats.last_write_failed.swap(false, Relaxed) {
                    println!("AOF write error looks solved. The node can write again.");
                }
            }
            Err(e) => {
                // Kept in front of what came since and written again next time, as Redis
                // retries.
                let mut writer = lock(&self.writer);
                let newer = writer.buffer.split();
                writer.buffer = data;
                writer.buffer.unsplit(newer);
                drop(writer);
                self.failed("Error writing to the AOF file", &e);
            }
        }
    }

    /// Fsyncs the incremental file up to what has been written. A caller that finds its
    /// writes already covered by another's fsync returns at once.
    fn fsync_written(&self) {
        let _one_at_a_time = lock(&self.fsync_lock);
        let (file, target) = {
            let writer = lock(&self.writer);
            (writer.file.clone(), self.written_upto.load(Relaxed))
        };
        if self.synced_upto.load(Relaxed) >= target {
            return;
        }
        let Some(file) = file else {
            return;
        };
        match file.sync_data() {
            Ok(()) => self.synced_upto.store(target, Relaxed),
            Err(e) => self.failed("Can't fsync the AOF file", &e),
        }
    }

    /// A write or fsync failed. With `appendfsync always` the node cannot keep its promise
    /// (replies only after the disk has the write) and exits, as Redis does; otherwise
    /// writes are refused with MISCONF until a write succeeds again.
    fn failed(&self, what: &str, error: &io::Error) {
        let text = error.to_string();
        // `No space left on device`, without Rust's ` (os error 28)`, as strerror says it.
        let text = text.split(" (os error").next().unwrap_or(&text).to_string();
        if self.fsync.load(Relaxed) == FSYNC_ALWAYS {
            eprintln!(
                "{what}: {text}. Can't recover from AOF write error when the AOF fsync policy \
                 is 'always'. Exiting..."
            );
            std::process::exit(1);
        }
        if !self.stats.last_write_failed.swap(true, Relaxed) {
            eprintln!("{what}: {text}");
        }
        *lock(&self.stats.last_write_error) = text;
    }

    /// Redis's refusal of writes while the AOF cannot be written.
    pub fn refuses_writes(&self) -> Option<String> {
        if !self.is_on() || !self.stats.last_write_failed.load(Relaxed) {
            return None;
        }
        let reason = lock(&self.stats.last_write_error).clone();
        Some(format!("MISCONF Errors writing to the AOF file: {reason}"))
    }

    /// [`make_durable`](Self::make_durable) for everything fed so far (a blocked client
    /// served by another's write replies on its own connection).
    pub fn make_all_durable(&self) {
        if self.is_on() {
            let upto = lock(&self.writer).buffered_upto;
            self.make_durable(upto);
        }
    }

    /// Writes out what waits and fsyncs it, whatever `appendfsync` says (SHUTDOWN).
    pub fn flush_and_fsync(&self) {
        self.write_out();
        self.fsync_written();
    }

    /// Bytes waiting in the buffer (`aof_buffer_length`).
    pub fn buffer_length(&self) -> usize {
        lock(&self.writer).buffer.len()
    }

    /// The once-a-second work: write out what waits, fsync with `everysec`.
    fn tick(&self) {
        if !self.is_on() {
            return;
        }
        self.write_out();
        if self.fsync.load(Relaxed) == FSYNC_EVERYSEC && !self.fsync_paused() {
            self.fsync_written();
        }
    }

    /// Starts the background thread of `everysec` (one per process; it idles while the
    /// AOF is off).
    pub fn spawn_background(self: &Arc<Self>) -> io::Result<()> {
        let aof = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("aof-fsync".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_secs(1));
                match aof.upgrade() {
                    Some(aof) => aof.tick(),
                    None => return,
                }
            })?;
        Ok(())
    }
}
