//! Command dispatch, and one module per command or command family.
//!
//! Each module opens with the syntax and replies of its commands and exports `COMMANDS`, a
//! list of `(name, handler)`. [`Dispatch`] joins those lists with the shared command table,
//! which supplies arity and flags, so an implemented command checks its arguments exactly as
//! Redis does before its handler runs. A command the table knows but no module implements
//! answers `unknown command`, like Redis does for commands it lacks.

pub mod args;
pub mod errors;

mod acl;
pub mod acl_gate;
mod aof;
mod bitfield;
mod bitmap;
mod bloom;
mod client;
mod command;
mod config;
mod connection;
mod debug;
mod dispatch_table;
#[cfg(test)]
mod dispatch_tests;
mod dump;
mod expire;
mod failover;
mod function;
mod geo;
mod hash;
mod hll;
mod info;
mod keys;
mod latency;
mod list;
mod lolwut;
mod memory;
mod memory_doctor;
mod monitor;
mod object;
mod oom;
mod pubsub;
mod replconf;
mod replicaof;
mod role;
mod save;
mod scan;
mod scripting;
mod server;
mod set;
pub mod shutdown;
mod slowlog;
mod sort;
mod stream;
mod strings;
mod sync;
mod tracking;
pub mod transaction;
mod wait;
pub mod wakeup;
mod zset;

/// The Redis version the node answers as (INFO, HELLO, the RDB file's `redis-ver`).
pub use connection::COMPATIBLE_VERSION;

use std::cell::Cell;
use std::panic::AssertUnwindSafe;

use bytes::{Bytes, BytesMut};
use slotproxy::cluster::{CommandSpec, CommandTable, LookupError};
use slotproxy::resp::ReplyBuf;

pub use dispatch_table::{Command, Dispatch, LastLookup};
pub use errors::{CmdError, CmdResult};

use crate::keyspace::blocking::{BlockRequest, TimeoutReply, Wants};
use crate::keyspace::{Db, Keyspace};
use crate::server::clients::{Client, ReplyMode};
use crate::server::stats::Stats;
use crate::server::Shared;

/// A command implementation. `args[0]` is the command name.
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// Everything a command can touch while it runs.
pub struct Ctx<'a> {
    pub keyspace: &'a mut Keyspace,
    pub client: &'a mut Client,
    pub shared: &'a Shared,
    pub out: ReplyBuf<'a>,
}

impl Ctx<'_> {
    /// The client's selected database.
    pub fn db(&mut self) -> &mut Db {
        self.keyspace.db(self.client.db)
    }

    pub fn now_ms(&self) -> u64 {
        self.keyspace.now_ms()
    }

    /// The running command is propagated (AOF, replicas) as `args` instead of as it was
    /// sent; called again, adds another command (see `crate::propagation`). Call only when
    /// the command changed data.
    pub fn propagate_as(&mut self, args: Vec<Bytes>) {
        self.keyspace.propagation.rewrite(args);
    }

    /// The running command is propagated as the deletion of `key` because its time is up
    /// (DEL, or UNLINK with `lazyfree-lazy-expire yes`).
    pub fn propagate_as_expired(&mut self, key: Bytes) {
        let command = Bytes::from_static(self.keyspace.propagation.expired_deletion());
        self.propagate_as(vec![command, key]);
    }

    /// Whether a blocking command may wait (not inside MULTI/EXEC or a script).
    pub fn may_block(&self) -> bool {
        self.client.may_block
    }

    /// Makes the running command wait for one of `keys` instead of replying now. Call only
    /// when [`may_block`](Self::may_block) is true, and write no reply. When a key is
    /// signalled ready and holds a value of the type `wants`, the whole command runs again;
    /// the timeout reply is sent if none does.
    pub fn block_on(
        &mut self,
        keys: Vec<Bytes>,
        wants: Wants,
        timeout: Option<std::time::Duration>,
        on_timeout: TimeoutReply,
    ) {
        self.client.block = Some(BlockRequest {
            keys,
            wants,
            timeout,
            on_timeout,
            rerun_as: None,
        });
    }

    /// After [`block_on`](Self::block_on): the command runs again as `args` instead of as it
    /// was sent (XREAD waits for entries after the ids its `$` stood for).
    pub fn rerun_blocked_as(&mut self, args: Vec<Bytes>) {
        if let Some(request) = self.client.block.as_mut() {
            request.rerun_as = Some(args);
        }
    }

    /// Tells blocked clients that `key` (in the client's database) may have what they wait
    /// for. Every command that adds elements a blocking command could take calls it.
    pub fn signal_key_ready(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.keyspace.blocking.signal_ready(db, key);
    }

    /// Announces a change to `key` in the client's database as a keyspace notification,
    /// e.g. `ctx.notify(notify::STRING, "set", key)`; call it where Redis calls
    /// `notifyKeyspaceEvent`, after the change and only if something changed. Classes and
    /// events: `crate::pubsub::notify`. Costs one comparison when notifications are off.
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let db = self.client.db;
        self.notify_in(db, class, event, key);
    }

    /// [`notify`](Self::notify) for a key of another database (MOVE, COPY ... DB).
    pub fn notify_in(&mut self, db: usize, class: u32, event: &str, key: &[u8]) {
        if self.keyspace.notify_flags == 0 {
            return;
        }
        let me = self.client.id();
        self.keyspace
            .notify(class, event, key, db, me, self.out.buf);
    }
}

/// Drops a client's transaction, watches, subscriptions and monitor mode (RESET,
/// disconnect).
pub fn release_client_state(keyspace: &mut Keyspace, client: &mut Client) {
    keyspace.monitors.remove(&client.handle);
    keyspace.tracking.disable(client.id());
    transaction::discard_transaction(keyspace, client);
    keyspace
        .pubsub
        .forget(&mut client.subscriptions, &client.handle);
}

/// Redis's reply to a command it does not have.
pub fn unknown_command_error(args: &[Bytes]) -> String {
    slotproxy::protocol::unknown_command(args)
}

/// Redis's reply to a subcommand a container command does not have.
pub fn unknown_subcommand(args: &[Bytes]) -> CmdError {
    slotproxy::protocol::unknown_subcommand(args).into()
}

/// Runs one request and appends its reply to `output`.
pub fn execute(
    shared: &Shared,
    keyspace: &mut Keyspace,
    client: &mut Client,
    output: &mut BytesMut,
    args: &[Bytes],
) {
    // `keyspace` is borrowed from the locked keyspace.
    Stats::add_under_keyspace_lock(&shared.stats.total_commands_processed, 1);
    let reply_start = output.len();
    let result = dispatch(shared, keyspace, client, output, args);
    if !client.nested {
        finish_tracking(keyspace, client, output, args);
    }
    // ASKING lasts for the one command after it, whatever that command's outcome; inside
    // MULTI it lasts until EXEC (Redis keeps CLIENT_ASKING while CLIENT_MULTI is set).
    let was_asking = args
        .first()
        .is_some_and(|name| name.eq_ignore_ascii_case(b"asking"));
    if !was_asking && client.multi.is_none() && !client.nested {
        client.asking = false;
    }
    if let Err(e) = result {
        Stats::add_under_keyspace_lock(&shared.stats.total_error_replies, 1);
        keyspace.error_stats.count(e.message());
        ReplyBuf::new(output, client.proto).error(e.message());
    }
    // Inside EXEC or a script the outer command sorts replies from pushes once, at its end.
    let own_pushes = if client.nested {
        Vec::new()
    } else {
        keyspace.pubsub.take_own_pushes()
    };
    match client.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off if client.nested => {}
        ReplyMode::Off => silence_replies(output, reply_start, &own_pushes),
        ReplyMode::Skipping => {
            silence_replies(output, reply_start, &own_pushes);
            client.reply_mode = ReplyMode::On;
        }
        ReplyMode::SkipNext => client.reply_mode = ReplyMode::Skipping,
    }
}

/// Drops what a command wrote from `reply_start` on, except its pushes (subscription
/// confirmations, messages, notifications): CLIENT REPLY OFF/SKIP silence only replies,
/// as in Redis 7.0.
fn silence_replies(output: &mut BytesMut, reply_start: usize, pushes: &[std::ops::Range<usize>]) {
    let mut kept = Vec::new();
    for range in pushes {
        if range.start >= reply_start && range.end <= output.len() {
            kept.extend_from_slice(&output[range.clone()]);
        }
    }
    output.truncate(reply_start);
    output.extend_from_slice(&kept);
}

fn dispatch(
    shared: &Shared,
    keyspace: &mut Keyspace,
    client: &mut Client,
    output: &mut BytesMut,
    args: &[Bytes],
) -> CmdResult {
    let (command, spec) = match check_request(shared, client, args) {
        Ok(found) => found,
        Err(e) => {
            // A known command refused (arity, NOAUTH) counts against it, as in Redis.
            if let Ok((_, spec)) = find_command(shared, args) {
                keyspace.command_stats.rejected(spec);
            }
            return Err(transaction::rejected(keyspace, client, args, e));
        }
    };
    client.handle.set_last_command(spec.name.as_str());
    // One clock reading times the command (its gates included) and gives its `now`.
    let started = std::time::Instant::now();
    // Commands inside EXEC (or a script) see the clock of the command that runs them.
    if !client.nested {
        let now_ms = keyspace.wall_clock.unix_ms_at(started);
        keyspace.set_now(now_ms);
        keyspace.expiry = crate::replication::replica::expiry_for(shared, client);
        // While clients are paused keys do not expire (Redis 7.0's `expireIfNeeded`): they
        // look missing but stay, for the end of the pause or the new master's DEL.
        if keyspace.expiry == crate::keyspace::Expiry::Remove && shared.pause.is_paused() {
            keyspace.expiry = crate::keyspace::Expiry::Hide;
        }
    }
    let proto = client.proto;
    let mut ctx = Ctx {
        keyspace,
        client,
        shared,
        out: ReplyBuf::new(output, proto),
    };
    // Redis's gates after the argument checks, in its order.
    // A script's commands were checked where it called them (`scripting::call`). The ACL
    // check comes before the cluster redirect, as in Redis's processCommand.
    let gates =
        transaction::check_allowed(ctx.client, spec).and_then(|()| match ctx.client.scripted {
            true => Ok(()),
            false => acl_gate::check(shared, ctx.client, spec, args),
        });
    if let Err(e) = gates {
        ctx.keyspace.command_stats.rejected(spec);
        return Err(transaction::rejected(ctx.keyspace, ctx.client, args, e));
    }
    // Cluster mode: MOVED/ASK/TRYAGAIN/CROSSSLOT/CLUSTERDOWN before anything runs or is
    // queued (a redirected command inside MULTI flags the transaction, as in Redis).
    // Commands a script runs are checked by the script's own cluster rule instead.
    // Redis redirects before its other gates (a write to a replica gets MOVED, not
    // READONLY); the master's stream on a replica is never redirected.
    let obeys = ctx.client.loading || ctx.client.master;
    if let Some(cluster) = shared.cluster.as_deref().filter(|_| !obeys) {
        let access = crate::cluster::redirect::Access {
            asking: ctx.client.asking,
            readonly: ctx.client.readonly,
            reads_when_down: shared.config().cluster_ha.allow_reads_when_down,
        };
        if !ctx.client.nested && spec.name != "exec" && crate::cluster::redirect::applies(spec) {
            if let Err(e) =
                crate::cluster::redirect::check(cluster, ctx.keyspace, access, &[(spec, args)])
            {
                ctx.keyspace.command_stats.rejected(spec);
                return Err(transaction::rejected(ctx.keyspace, ctx.client, args, e));
            }
        }
        // EXEC checks all its queued commands together (one slot, served here); refused,
        // it discards the transaction, as Redis's processCommand does.
        if spec.name == "exec" && !ctx.client.nested {
            if let Some(multi) = ctx.client.multi.as_ref() {
                let table = slotproxy::cluster::CommandTable::get();
                let queued: Vec<(&CommandSpec, &[Bytes])> = multi
                    .queued()
                    .iter()
                    .filter_map(|q| table.lookup(q).ok().map(|spec| (spec, &q[..])))
                    .filter(|(spec, _)| crate::cluster::redirect::applies(spec))
                    .collect();
                if let Err(e) =
                    crate::cluster::redirect::check(cluster, ctx.keyspace, access, &queued)
                {
                    ctx.keyspace.command_stats.rejected(spec);
                    transaction::discard_transaction(ctx.keyspace, ctx.client);
                    return Err(e);
                }
            }
        }
    }
    // Redis's processCommand: OOM after the cluster redirect, before the disk and replica gates.
    if let Err(e) = oom::check(&mut ctx, spec, args) {
        ctx.keyspace.command_stats.rejected(spec);
        return Err(transaction::rejected(ctx.keyspace, ctx.client, args, e));
    }
    let gates = pubsub::check_subscriber_mode(&ctx, spec)
        .and_then(|()| check_disk_errors(&ctx, spec))
        .and_then(|()| check_good_replicas(&ctx, spec))
        .and_then(|()| crate::replication::replica::check_command(shared, ctx.client, spec));
    if let Err(e) = gates {
        ctx.keyspace.command_stats.rejected(spec);
        return Err(transaction::rejected(ctx.keyspace, ctx.client, args, e));
    }
    if let Err(e) = save::refuse_writes_after_failed_save(shared, ctx.client, spec) {
        ctx.keyspace.command_stats.rejected(spec);
        return Err(transaction::rejected(ctx.keyspace, ctx.client, args, e));
    }
    if transaction::queue_if_in_multi(&mut ctx, spec, args) {
        return Ok(());
    }
    let handler = command.handler;
    let propagating = ctx.keyspace.propagation.enabled();
    let dirty_before = if propagating { ctx.keyspace.dirty() } else { 0 };
    monitor::feed_script_call(&mut ctx, spec, args);
    // A bug in one command must not take the node down: answer an error and carry on.
    let result = match std::panic::catch_unwind(AssertUnwindSafe(|| handler(&mut ctx, args))) {
        Ok(result) => result,
        Err(_) => Err("ERR internal error while running the command".into()),
    };
    if propagating {
        propagate(&mut ctx, spec, args, dirty_before, result.is_ok());
    }
    // A command that blocked has not run yet: it counts when it is served.
    if ctx.client.block.is_none() {
        let took = started.elapsed();
        ctx.keyspace.command_stats.ran(spec, took, result.is_err());
        slowlog::record(&mut ctx, spec, args, took);
        latency::record(&mut ctx, spec, took);
    }
    monitor::feed(&mut ctx, spec, args);
    remember_tracked_keys(&mut ctx, spec, args);
    let me = ctx.client.id();
    ctx.keyspace.after_command(me, ctx.out.buf);
    result
}

/// A read-only command of a tracking client adds the keys it read to the invalidation table
/// (Redis's `call`: not for EVAL_RO and friends, whose commands count one by one).
fn remember_tracked_keys(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    let id = ctx.client.id();
    if !spec
        .flags
        .contains(slotproxy::cluster::CommandFlags::READONLY)
        || !ctx.keyspace.tracking.is_tracking(id)
        || matches!(spec.name.as_str(), "eval_ro" | "evalsha_ro" | "fcall_ro")
    {
        return;
    }
    if let Ok(indexes) = spec.key_indexes(args) {
        let keys = indexes.into_iter().filter_map(|i| args.get(i).cloned());
        ctx.keyspace.tracking.remember(id, keys);
    }
}

/// After a top-level command: the `CLIENT CACHING` choice is spent (unless the command was
/// CLIENT or the client is queuing a transaction), and the invalidations held for the end of
/// the command are sent (see `keyspace::tracking`).
fn finish_tracking(
    keyspace: &mut Keyspace,
    client: &Client,
    output: &mut BytesMut,
    args: &[Bytes],
) {
    if keyspace.tracking.idle() {
        return;
    }
    let id = client.id();
    let is_client_command = args
        .first()
        .is_some_and(|name| name.eq_ignore_ascii_case(b"client"));
    if client.multi.is_none() && !is_client_command {
        keyspace.tracking.clear_caching(id);
    }
    keyspace.flush_tracking(id, output);
}

/// Writes are refused while the AOF cannot be written (Redis's `-MISCONF`), so no client
/// is told a write succeeded that the log lost.
fn check_disk_errors(ctx: &Ctx<'_>, spec: &CommandSpec) -> CmdResult {
    if ctx.client.nested || !spec.flags.contains(slotproxy::cluster::CommandFlags::WRITE) {
        return Ok(());
    }
    match ctx.shared.aof.refuses_writes() {
        Some(refusal) => Err(refusal.into()),
        None => Ok(()),
    }
}

/// `min-replicas-to-write`: writes (and EXEC of a transaction that writes) are refused
/// with `-NOREPLICAS` without enough good replicas, as Redis's `processCommand` does.
/// A script's writes are checked where it calls them (`scripting::call`).
fn check_good_replicas(ctx: &Ctx<'_>, spec: &CommandSpec) -> CmdResult {
    if ctx.client.nested || ctx.client.loading {
        return Ok(());
    }
    let writes = spec.flags.contains(slotproxy::cluster::CommandFlags::WRITE)
        || (spec.name == "exec" && ctx.client.multi.as_ref().is_some_and(save::queues_a_write));
    if !writes {
        return Ok(());
    }
    crate::replication::master::check_good_replicas(ctx.shared).map_err(CmdError::from)
}

/// Commands written to the stream whenever they succeed, even if no key changed (Redis's
/// `forceCommandPropagation`): the functions live outside the databases, and an empty
/// FLUSHALL still means "empty" to whoever replays it.
const ALWAYS_PROPAGATED: &[&str] = &[
    "flushall",
    "flushdb",
    "function|load",
    "function|delete",
    "function|flush",
    "function|restore",
];

/// Adds the command that just ran to the propagated stream if it changed data (see
/// `crate::propagation`). Keys it found expired go first, as DELs.
fn propagate(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes], dirty_before: u64, ok: bool) {
    let expired = ctx.keyspace.propagate_expired();
    let own_changes = ctx
        .keyspace
        .dirty()
        .saturating_sub(dirty_before)
        .saturating_sub(expired);
    let propagation = &mut ctx.keyspace.propagation;
    let is_write = spec.flags.contains(slotproxy::cluster::CommandFlags::WRITE);
    // A command not flagged `write` that still changed data (PFCOUNT refreshing its
    // cached count) says so with `propagate_as`, as Redis propagates any command that
    // moved `dirty`.
    let changed = ctx.client.block.is_none()
        && ((is_write
            && (own_changes > 0
                || propagation.rewritten()
                || (ok && ALWAYS_PROPAGATED.contains(&spec.name.as_str()))))
            || (own_changes > 0 && propagation.rewritten()));
    propagation.command_ran(ctx.client.db, args, changed, ctx.client.nested);
    if !ctx.client.nested {
        propagation.end_unit();
    }
}

/// The implementation and the table entry (the subcommand's, for a container command
/// such as CONFIG) of the command `args` names.
pub fn find_command<'s>(
    shared: &'s Shared,
    args: &[Bytes],
) -> Result<(&'s Command, &'static CommandSpec), LookupError> {
    find_command_remembered(shared, args, None)
}

/// [`find_command`], through a client's [`LastLookup`] when given.
fn find_command_remembered<'s>(
    shared: &'s Shared,
    args: &[Bytes],
    last: Option<&Cell<LastLookup>>,
) -> Result<(&'s Command, &'static CommandSpec), LookupError> {
    let command = args
        .first()
        .and_then(|name| match last {
            Some(last) => shared.dispatch.get_remembered(name, last),
            None => shared.dispatch.get(name),
        })
        .ok_or(LookupError::UnknownCommand)?;
    // Only container commands (CONFIG, CLIENT, ...) need a second look-up for the subcommand.
    if command.spec.subcommands.is_empty() {
        return Ok((command, command.spec));
    }
    // Under a name `rename-command` gave it, the table knows the command by its own name.
    let renamed;
    let args = match args.first() {
        Some(name) if !name.eq_ignore_ascii_case(command.spec.name.as_bytes()) => {
            renamed = [
                Bytes::from_static(command.spec.name.as_bytes()),
                args.get(1).cloned().unwrap_or_default(),
            ];
            &renamed[..args.len().min(2)]
        }
        _ => args,
    };
    match CommandTable::get().lookup(args) {
        Ok(spec) => Ok((command, spec)),
        Err(LookupError::UnknownSubcommand) => Err(LookupError::UnknownSubcommand),
        Err(LookupError::UnknownCommand) => Ok((command, command.spec)),
    }
}

/// Finds the command and checks its arity, whether DEBUG is enabled, and the client's
/// authentication.
pub fn check_request<'s>(
    shared: &'s Shared,
    client: &Client,
    args: &[Bytes],
) -> Result<(&'s Command, &'static CommandSpec), CmdError> {
    if args.is_empty() {
        return Err(CmdError::from(""));
    }
    let (command, spec) = match find_command_remembered(shared, args, Some(&client.last_lookup)) {
        Ok(found) => found,
        Err(LookupError::UnknownCommand) => return Err(unknown_command_error(args).into()),
        Err(LookupError::UnknownSubcommand) => return Err(unknown_subcommand(args)),
    };
    if !spec.arity_ok(args.len()) {
        return Err(errors::wrong_arity(spec.display_name()));
    }
    // Before authentication and MULTI, as Redis refuses protected commands.
    if spec.name == "debug" {
        let config = shared.config();
        crate::server::protection::check_debug_allowed(&config, &client.handle.addr)
            .map_err(CmdError::from)?;
    }
    // Redis's `authRequired`: a client not logged in may still run anything once the
    // default user needs no password.
    if !client.authenticated
        && !spec
            .flags
            .contains(slotproxy::cluster::CommandFlags::NO_AUTH)
        && !shared.acl.default_needs_no_password()
    {
        return Err(slotproxy::protocol::errors::NOAUTH.into());
    }
    Ok((command, spec))
}
