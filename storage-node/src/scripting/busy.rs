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
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use slotproxy::resp::ReplyBuf;

use slotproxy::cluster::CommandFlags;

use crate::cmd::args::is;
use crate::cmd::transaction;
use crate::keyspace::Keyspace;
use crate::server::clients::{lock, Client};
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
    /// After how many milliseconds the script counts as slow (`busy-reply-threshold` when
    /// it started), and whether that was logged yet.
    slow_after_ms: AtomicU64,
    slow_reported: AtomicBool,
    /// The script's SHA1, or the function's name, for the log.
    name: Mutex<String>,
    /// When the count hook next hands the runtime's scheduler away (see [`offload_runtime`]).
    next_offload_ms: AtomicU64,
    epoch: std::sync::OnceLock<Instant>,
    /// The function being called (FCALL), for FUNCTION STATS while it is busy: the library
    /// registry is locked by the call, so the counts are taken when it starts.
    function: Mutex<Option<RunningFunction>>,
}

/// What FUNCTION STATS shows of a running function.
#[derive(Clone, Debug)]
pub struct RunningFunction {
    pub name: Vec<u8>,
    /// The command as the client sent it.
    pub command: Vec<Bytes>,
    pub libraries: usize,
    pub functions: usize,
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

    pub fn start(&self, is_function: bool, name: &str, slow_after_ms: u64) {
        self.started_ms.store(self.now_ms(), Relaxed);
        self.wrote.store(false, Relaxed);
        self.kill_requested.store(false, Relaxed);
        self.slow_after_ms.store(slow_after_ms, Relaxed);
        self.slow_reported.store(false, Relaxed);
        *lock(&self.name) = name.to_string();
        self.is_function.store(is_function, Relaxed);
        self.next_offload_ms.store(OFFLOAD_AFTER_MS, Relaxed);
        self.running.store(true, Relaxed);
    }

    pub fn finish(&self) {
        self.running.store(false, Relaxed);
        self.kill_requested.store(false, Relaxed);
        *lock(&self.function) = None;
    }

    /// Notes the function about to be called (before [`start`](Self::start)).
    pub fn describe_function(&self, function: RunningFunction) {
        *lock(&self.function) = Some(function);
    }

    /// FUNCTION STATS while a script is busy: the running function and the library counts
    /// taken when it started; during an EVAL script, BUSY (Redis's `functionStatsCommand`).
    fn write_function_stats(&self, out: &mut ReplyBuf<'_>) {
        let function = lock(&self.function).clone();
        let Some(function) = function.filter(|_| self.is_function.load(Relaxed)) else {
            out.error(BUSY_EVAL);
            return;
        };
        out.map(2);
        out.bulk(b"running_script");
        out.map(3);
        out.bulk(b"name");
        out.bulk(&function.name);
        out.bulk(b"command");
        out.array(function.command.len());
        for arg in &function.command {
            out.bulk(arg);
        }
        out.bulk(b"duration_ms");
        out.integer(self.elapsed_ms() as i64);
        out.bulk(b"engines");
        out.map(1);
        out.bulk(b"LUA");
        out.map(2);
        out.bulk(b"libraries_count");
        out.integer(function.libraries as i64);
        out.bulk(b"functions_count");
        out.integer(function.functions as i64);
    }

    pub fn note_write(&self) {
        self.wrote.store(true, Relaxed);
    }

    /// Whether the running script has called a write command.
    pub fn wrote(&self) -> bool {
        self.wrote.load(Relaxed)
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

    /// Called from the count hook: logs once that the script passed
    /// `busy-reply-threshold` (other clients now get `-BUSY`), as Redis does.
    pub fn report_if_slow(&self) {
        let elapsed = self.elapsed_ms();
        if elapsed < self.slow_after_ms.load(Relaxed) || self.slow_reported.swap(true, Relaxed) {
            return;
        }
        let kill = if self.is_function.load(Relaxed) {
            "FUNCTION KILL"
        } else {
            "SCRIPT KILL"
        };
        crate::log::warning!(
            "Slow script detected: still in execution after {elapsed} milliseconds. You can \
             try killing the script using the {kill} command. Script name is: {}.",
            lock(&self.name)
        );
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

/// Answers the queued commands while a script is busy, as Redis's `processCommand` does
/// between a busy script's yields:
///
/// - a command flagged `allow_busy` works: MULTI, SCRIPT KILL / FUNCTION KILL, SHUTDOWN
///   NOSAVE, FUNCTION STATS (which shows the running function; during an EVAL script it
///   answers BUSY, as Redis's `functionStatsCommand` does); inside MULTI the ones that are
///   queued there are queued (`+QUEUED`), SCRIPT KILL included, as in Redis;
/// - any other command answers `-BUSY` and flags an open transaction, so its EXEC aborts;
///   EXEC itself answers `-EXECABORT Transaction discarded because of: BUSY ...` and leaves
///   MULTI. No part of a transaction runs.
///
/// Requests the command table refuses (unknown, wrong arity, NOAUTH) get those errors first,
/// as in Redis. The `allow_busy` commands that need the keyspace or the connection's
/// handlers (WATCH, DISCARD or UNWATCH of watched keys, RESET, HELLO, AUTH, QUIT, other
/// SHUTDOWN forms) wait for the script to end and then run normally: this returns at once
/// if replies are pending (so they are written first), otherwise once the script is over.
pub async fn answer_while_busy(
    shared: &Shared,
    client: &mut Client,
    queued: &mut std::collections::VecDeque<Vec<Bytes>>,
    output: &mut BytesMut,
) {
    let state = &shared.scripting.state;
    while let Some(args) = queued.front() {
        // The way out of a script that wrote and cannot be killed: exit without saving
        // (the keyspace is the script's until it ends), as Redis does.
        if let [cmd, mode] = args.as_slice() {
            if is(cmd, "shutdown") && is(mode, "nosave") {
                crate::log::warning!(
                    "User requested shutdown while a script was busy, exiting now."
                );
                crate::process::exit(0);
            }
        }
        let in_multi = client.multi.is_some();
        let mut out = ReplyBuf::new(output, client.proto);
        // Unknown commands, wrong arity and NOAUTH are answered before BUSY, as in Redis.
        let spec = match crate::cmd::check_request(shared, client, args) {
            Ok((_, spec)) => spec,
            Err(e) => {
                transaction::flag_refused(client);
                out.error(e.message());
                queued.pop_front();
                continue;
            }
        };
        if spec.flags.contains(CommandFlags::ALLOW_BUSY) {
            if in_multi && !transaction::runs_inside_multi(spec) {
                transaction::enqueue(client, args);
                out.simple("QUEUED");
            } else {
                match spec.name.as_str() {
                    "multi" => match transaction::begin(client) {
                        Ok(()) => out.ok(),
                        Err(e) => out.error(e.message()),
                    },
                    "script|kill" => reply(&mut out, state.kill(false)),
                    "function|kill" => reply(&mut out, state.kill(true)),
                    "function|stats" => state.write_function_stats(&mut out),
                    // Without WATCHed keys these need nothing from the keyspace.
                    "discard" if !in_multi => out.error(transaction::DISCARD_WITHOUT_MULTI),
                    "discard" if client.watching.is_empty() => {
                        transaction::leave_multi(client);
                        out.ok();
                    }
                    "unwatch" if client.watching.is_empty() => out.ok(),
                    _ => return wait_for_script_end(shared, output).await,
                }
            }
        } else if spec.name == "exec" {
            out.error(&transaction::exec_refused(state.busy_error()));
            if transaction::leave_multi(client) {
                // Its WATCHes go too; they live in the keyspace the script holds.
                let mut keyspace = lock_keyspace_patiently(shared).await;
                transaction::discard_transaction(&mut keyspace, client);
            }
        } else {
            transaction::flag_refused(client);
            out.error(state.busy_error());
        }
        queued.pop_front();
    }
}

fn reply(out: &mut ReplyBuf<'_>, result: Result<(), &str>) {
    match result {
        Ok(()) => out.ok(),
        Err(e) => out.error(e),
    }
}

/// Returns once the pending replies can be written or, with none pending, once no script
/// runs any more (the caller then locks the keyspace as usual).
async fn wait_for_script_end(shared: &Shared, output: &BytesMut) {
    if output.is_empty() {
        drop(lock_keyspace_patiently(shared).await);
    }
}
