//! The running script as other connections see it, and what they do while it runs.
//!
//! A script runs inside a command handler, so it holds the keyspace lock for its whole run.
//! Redis, being single-threaded, answers other clients `-BUSY` once a script has run longer
//! than `busy-reply-threshold`, and serves only SCRIPT KILL / FUNCTION KILL and SHUTDOWN
//! NOSAVE. Here the connection asks [`lock_keyspace_for_commands`] instead of blocking on the
//! keyspace mutex: it waits (asynchronously) while a young script runs and gives up once the
//! script is past the threshold, and the connection then answers its queued commands with
//! [`answer_while_busy`].
//!
//! The script's own thread must not keep the runtime from serving those connections: once a
//! script has run for a while the count hook moves the runtime's scheduler to another
//! thread ([`offload_runtime`]), as `tokio::task::block_in_place` does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Proto, ReplyBuf};

use crate::cmd::args::is;
use crate::keyspace::Keyspace;
use crate::server::Shared;

pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
pub const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
pub const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands \
against the dataset. You can either wait the script termination or kill the server in a hard \
way using the SHUTDOWN NOSAVE command.";
pub const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// A script running this long is no longer short: its thread leaves the scheduler.
const OFFLOAD_AFTER_MS: u64 = 10;

/// How long a connection sleeps between looks at a young script.
const POLL: Duration = Duration::from_millis(1);

/// The script in execution, if any. Written by the running script, read by everyone.
#[derive(Default)]
pub struct ScriptState {
    running: AtomicBool,
    /// Whether the running script is a function (FCALL), not an EVAL script.
    is_function: AtomicBool,
    /// When the script started, in milliseconds since `epoch`.
    started_ms: AtomicU64,
    /// Whether it ran a write command (then it cannot be killed).
    wrote: AtomicBool,
    kill_requested: AtomicBool,
    /// When the count hook next hands the runtime's scheduler away (see [`offload_runtime`]).
    next_offload_ms: AtomicU64,
    epoch: std::sync::OnceLock<Instant>,
}

/// What a connection sees of the running script.
#[derive(Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    /// Running for less than the threshold: wait this long at most before looking again.
    Young(Duration),
    Busy,
}

impl ScriptState {
    fn now_ms(&self) -> u64 {
        self.epoch.get_or_init(Instant::now).elapsed().as_millis() as u64
    }

    pub fn start(&self, is_function: bool) {
        self.started_ms.store(self.now_ms(), Relaxed);
        self.wrote.store(false, Relaxed);
        self.kill_requested.store(false, Relaxed);
        self.is_function.store(is_function, Relaxed);
        self.next_offload_ms.store(OFFLOAD_AFTER_MS, Relaxed);
        self.running.store(true, Relaxed);
    }

    pub fn finish(&self) {
        self.running.store(false, Relaxed);
        self.kill_requested.store(false, Relaxed);
    }

    pub fn note_write(&self) {
        self.wrote.store(true, Relaxed);
    }

    pub fn kill_requested(&self) -> bool {
        self.kill_requested.load(Relaxed)
    }

    /// Called from the count hook: hands the scheduler away once the script has run for
    /// [`OFFLOAD_AFTER_MS`], and again at doubling intervals in case a handover failed.
    pub fn offload_if_long(&self) {
        let elapsed = self.elapsed_ms();
        let due = self.next_offload_ms.load(Relaxed);
        if elapsed >= due {
            self.next_offload_ms.store(elapsed.max(due) * 2, Relaxed);
            offload_runtime();
        }
    }

    /// Milliseconds the running script has run.
    pub fn elapsed_ms(&self) -> u64 {
        self.now_ms().saturating_sub(self.started_ms.load(Relaxed))
    }

    pub fn status(&self, threshold_ms: u64) -> Status {
        if !self.running.load(Relaxed) {
            return Status::Idle;
        }
        let elapsed = self.elapsed_ms();
        if elapsed >= threshold_ms {
            Status::Busy
        } else {
            Status::Young(POLL.min(Duration::from_millis(threshold_ms - elapsed)))
        }
    }

    /// SCRIPT KILL (`function == false`) or FUNCTION KILL, as Redis's `scriptKill` answers.
    pub fn kill(&self, function: bool) -> Result<(), &'static str> {
        if !self.running.load(Relaxed) {
            return Err(NOTBUSY);
        }
        if self.wrote.load(Relaxed) {
            return Err(UNKILLABLE);
        }
        let running_function = self.is_function.load(Relaxed);
        if !function && running_function {
            return Err(BUSY_FUNCTION);
        }
        if function && !running_function {
            return Err(BUSY_EVAL);
        }
        self.kill_requested.store(true, Relaxed);
        Ok(())
    }

    fn busy_error(&self) -> &'static str {
        if self.is_function.load(Relaxed) {
            BUSY_FUNCTION
        } else {
            BUSY_EVAL
        }
    }
}

/// Locks the keyspace for a batch of commands, or `None` when a script has run past
/// `busy-reply-threshold` (the caller then answers with [`answer_while_busy`]).
pub async fn lock_keyspace_for_commands(shared: &Shared) -> Option<MutexGuard<'_, Keyspace>> {
    loop {
        match shared.keyspace.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => {}
        }
        let threshold = shared.config().busy_reply_threshold_ms;
        match shared.scripting.state.status(threshold) {
            Status::Busy => return None,
            Status::Young(wait) => tokio::time::sleep(wait).await,
            Status::Idle => return Some(lock_keyspace_blocking(shared)),
        }
    }
}

/// Locks the keyspace from async code that must not answer BUSY (timeouts, disconnects,
/// background cycles): waits while a script runs, without holding up the runtime.
pub async fn lock_keyspace_patiently(shared: &Shared) -> MutexGuard<'_, Keyspace> {
    loop {
        match shared.keyspace.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(TryLockError::WouldBlock) => {}
        }
        match shared.scripting.state.status(u64::MAX) {
            Status::Idle => return lock_keyspace_blocking(shared),
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

/// A plain blocking lock for a short wait on another command. On the multi-threaded
/// runtime the wait happens off the scheduler, so that a script starting meanwhile cannot
/// stall the connections that must answer BUSY.
fn lock_keyspace_blocking(shared: &Shared) -> MutexGuard<'_, Keyspace> {
    if multi_threaded_runtime() {
        tokio::task::block_in_place(|| shared.lock_keyspace())
    } else {
        shared.lock_keyspace()
    }
}

fn multi_threaded_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Called by the count hook of a script that has run for a while: hands the runtime's
/// scheduler to another thread so other connections are served (with BUSY) while this
/// thread keeps running the script. The short pause gives the new thread time to take the
/// scheduler over; if it did not, the next call tries again.
fn offload_runtime() {
    if multi_threaded_runtime() {
        tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(1)));
    }
}

/// Answers every queued command while a script is busy: SCRIPT KILL and FUNCTION KILL act
/// on the script, SHUTDOWN NOSAVE ends the process, everything else gets `-BUSY`.
pub fn answer_while_busy(
    shared: &Shared,
    proto: Proto,
    queued: &mut std::collections::VecDeque<Vec<Bytes>>,
    output: &mut BytesMut,
) {
    let state = &shared.scripting.state;
    while let Some(args) = queued.pop_front() {
        let mut out = ReplyBuf::new(output, proto);
        let kill = match args.as_slice() {
            [cmd, sub] if is(cmd, "script") && is(sub, "kill") => Some(false),
            [cmd, sub] if is(cmd, "function") && is(sub, "kill") => Some(true),
            [cmd, mode] if is(cmd, "shutdown") && is(mode, "nosave") => {
                eprintln!("User requested shutdown while a script was busy, exiting now.");
                std::process::exit(0);
            }
            _ => None,
        };
        match kill.map(|function| state.kill(function)) {
            Some(Ok(())) => out.ok(),
            Some(Err(e)) => out.error(e),
            None => out.error(state.busy_error()),
        }
    }
}
