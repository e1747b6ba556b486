//! Transactions.
//!
//! - `MULTI` → `+OK`; `ERR MULTI calls can not be nested`. Nesting does not abort the
//!   transaction.
//! - `EXEC` → an array with each queued command's reply (errors included: a command failing
//!   at run time does not stop the others); a null array (`*-1`, RESP3 `_`) if a watched key
//!   changed or expired since WATCH; `EXECABORT Transaction discarded because of previous
//!   errors.` if a command was refused while queuing; `ERR EXEC without MULTI`.
//! - `DISCARD` → `+OK`, dropping the queue and every WATCH; `ERR DISCARD without MULTI`.
//! - `WATCH key [key ...]` → `+OK`; `ERR WATCH inside MULTI is not allowed`.
//! - `UNWATCH` → `+OK`.
//!
//! While a client is in MULTI, dispatch hands every command other than EXEC, DISCARD, MULTI,
//! WATCH, QUIT and RESET to [`queue_if_in_multi`] once its name, arity, authentication and
//! `no-multi` flag are checked; it answers `+QUEUED`. A command refused by those checks goes
//! through [`rejected`], which flags the transaction so EXEC aborts (and a refused EXEC
//! aborts at once with `EXECABORT Transaction discarded because of: <reason>`, in MULTI or
//! not).
//!
//! EXEC runs the queue in one go: the keyspace lock is held for the whole request batch, so
//! no other client sees a partial state. During it blocking commands answer as their
//! non-blocking forms, all commands see the clock of EXEC, and blocked clients are served
//! only after EXEC returns (the connection does that after each top-level command).
//! See `keyspace::watch` for how writes make watchers dirty.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec};

use super::args::is;
use super::{execute, CmdError, CmdResult, Ctx, Handler};
use crate::keyspace::Keyspace;
use crate::server::clients::Client;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("multi", multi),
    ("exec", exec),
    ("discard", discard),
    ("watch", watch),
    ("unwatch", unwatch),
];

pub const DISCARD_WITHOUT_MULTI: &str = "ERR DISCARD without MULTI";

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Multi {
    queue: Vec<Vec<Bytes>>,
    /// A command was refused while queuing (Redis's `CLIENT_DIRTY_EXEC`).
    aborted: bool,
}

impl Multi {
    /// The queued requests.
    pub fn queued(&self) -> &[Vec<Bytes>] {
        &self.queue
    }
}

/// Commands that run at once even inside MULTI.
const NOT_QUEUED: &[&str] = &["exec", "discard", "multi", "watch", "quit", "reset"];

/// Refuses `no-multi` commands inside MULTI (SAVE, SHUTDOWN, SYNC, PSYNC, ...).
pub fn check_allowed(client: &Client, spec: &CommandSpec) -> CmdResult {
    if client.multi.is_some() && !client.nested && spec.flags.contains(CommandFlags::NO_MULTI) {
        return Err("ERR Command not allowed inside a transaction".into());
    }
    Ok(())
}

/// Queues a checked command when the client is in MULTI; true if it was queued (and
/// `+QUEUED` written).
pub fn queue_if_in_multi(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    if ctx.client.nested || NOT_QUEUED.contains(&spec.name.as_str()) {
        return false;
    }
    if !enqueue(ctx.client, args) {
        return false;
    }
    ctx.out.simple("QUEUED");
    true
}

/// Whether a command runs at once even inside MULTI (EXEC, DISCARD, MULTI, WATCH, ...).
pub fn runs_inside_multi(spec: &CommandSpec) -> bool {
    NOT_QUEUED.contains(&spec.name.as_str())
}

/// A command refused before running (unknown, wrong arity, NOAUTH, not allowed here):
/// inside MULTI the transaction is flagged to abort; a refused EXEC aborts it now.
pub fn rejected(
    keyspace: &mut Keyspace,
    client: &mut Client,
    args: &[Bytes],
    error: CmdError,
) -> CmdError {
    if client.nested {
        return error;
    }
    // A refused EXEC aborts even outside MULTI (Redis's rejectCommand calls
    // execCommandAbort either way, which also drops every WATCH).
    if args.first().is_some_and(|name| is(name, "exec")) {
        discard_transaction(keyspace, client);
        return exec_refused(error.message()).into();
    }
    flag_refused(client);
    error
}

/// Marks the transaction being queued (if any) so that EXEC aborts: a command was refused
/// while queuing (Redis's `flagTransaction`).
pub fn flag_refused(client: &mut Client) {
    if client.nested {
        return;
    }
    if let Some(multi) = &mut client.multi {
        multi.aborted = true;
    }
}

/// What a refused EXEC answers (the text is shared with the proxy).
pub use slotproxy::protocol::errors::exec_refused;

/// Starts a transaction (MULTI).
pub fn begin(client: &mut Client) -> CmdResult {
    if client.multi.is_some() {
        return Err("ERR MULTI calls can not be nested".into());
    }
    client.multi = Some(Multi::default());
    client.handle.multi_queued.store(0, Relaxed);
    Ok(())
}

/// Adds a checked command to the transaction; false outside MULTI. A transaction that
/// cannot run any more keeps nothing (Redis does the same).
pub fn enqueue(client: &mut Client, args: &[Bytes]) -> bool {
    let dirty = client.handle.watch_dirty.load(Relaxed);
    let Some(multi) = &mut client.multi else {
        return false;
    };
    if !multi.aborted && !dirty {
        multi.queue.push(args.to_vec());
        client
            .handle
            .multi_queued
            .store(multi.queue.len() as i64, Relaxed);
    }
    true
}

/// Leaves MULTI without touching the keyspace; true if WATCHed keys remain to be dropped
/// with [`discard_transaction`] once the keyspace can be locked.
pub fn leave_multi(client: &mut Client) -> bool {
    client.multi = None;
    client.handle.multi_queued.store(-1, Relaxed);
    !client.watching.is_empty()
}

/// Leaves MULTI and drops every WATCH (DISCARD, EXEC, RESET, disconnect).
pub fn discard_transaction(keyspace: &mut Keyspace, client: &mut Client) {
    leave_multi(client);
    unwatch_all(keyspace, client);
}

fn unwatch_all(keyspace: &mut Keyspace, client: &mut Client) {
    let id = client.id();
    for (db, key) in client.watching.drain(..) {
        keyspace.unwatch(db, &key, id);
    }
    client.handle.watch_dirty.store(false, Relaxed);
}

fn multi(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    begin(ctx.client)?;
    ctx.out.ok();
    Ok(())
}

fn discard(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(DISCARD_WITHOUT_MULTI.into());
    }
    discard_transaction(ctx.keyspace, ctx.client);
    ctx.out.ok();
    Ok(())
}

/// Whether a watched key is stored but expired, and was not already expired at WATCH.
fn watched_key_expired(ctx: &mut Ctx<'_>) -> bool {
    let id = ctx.client.id();
    ctx.client
        .watching
        .iter()
        .any(|(db, key)| ctx.keyspace.watched_key_expired(*db, key, id))
}

fn exec(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let Some(multi) = ctx.client.multi.take() else {
        return Err("ERR EXEC without MULTI".into());
    };
    let dirty = ctx.client.handle.watch_dirty.load(Relaxed) || watched_key_expired(ctx);
    discard_transaction(ctx.keyspace, ctx.client);
    if multi.aborted {
        return Err(EXECABORT.into());
    }
    if dirty {
        ctx.out.null_array();
        return Ok(());
    }
    let (was_nested, could_block) = (ctx.client.nested, ctx.client.may_block);
    ctx.client.nested = true;
    ctx.client.may_block = false;
    ctx.out.array(multi.queue.len());
    for args in &multi.queue {
        execute(ctx.shared, ctx.keyspace, ctx.client, ctx.out.buf, args);
    }
    ctx.client.nested = was_nested;
    ctx.client.may_block = could_block;
    Ok(())
}

fn watch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err("ERR WATCH inside MULTI is not allowed".into());
    }
    // A dirty client's EXEC fails anyway; watching more changes nothing.
    if !ctx.client.handle.watch_dirty.load(Relaxed) {
        let db = ctx.client.db;
        for key in &args[1..] {
            if ctx
                .client
                .watching
                .iter()
                .any(|(d, k)| *d == db && k == key)
            {
                continue;
            }
            ctx.keyspace.watch(db, key.clone(), &ctx.client.handle);
            ctx.client.watching.push((db, key.clone()));
        }
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    unwatch_all(ctx.keyspace, ctx.client);
    ctx.out.ok();
    Ok(())
}
