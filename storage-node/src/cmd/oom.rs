//! The `maxmemory` gate before every command (Redis 7.0's `processCommand`): keys are
//! evicted first (`keyspace::evict`); if the node is still over the limit, a `denyoom`
//! command (SET, RPUSH, ...; EXEC of a transaction holding one) is refused with
//! `-OOM command not allowed when used memory > 'maxmemory'.`, and so is every command
//! queued inside MULTI except EXEC, DISCARD, QUIT and RESET, which then aborts the
//! transaction. Scripts remember whether the node was out of memory when they started:
//! their first `denyoom` call fails then (`scripting::call`).
//!
//! No eviction happens inside EXEC or a script, while loading, on a replica (Redis's
//! `replica-ignore-maxmemory yes`) or while clients are paused (the dataset stays still).

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};

use super::{CmdResult, Ctx};
use crate::keyspace::evict::{Outcome, OOM};
use crate::server::client_memory;

/// Commands MULTI still accepts when out of memory.
const ALLOWED_IN_MULTI: &[&str] = &["exec", "discard", "quit", "reset"];

/// Evicts as needed before the command `args`, then refuses it if it may not run out of
/// memory.
pub fn check(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> CmdResult {
    if ctx.client.nested
        || ctx.client.loading
        || ctx.shared.pause.is_paused()
        || crate::replication::replica::is_replica(ctx.shared)
    {
        return Ok(());
    }
    let me = ctx.client.id();
    let shared = ctx.shared;
    // What a write will store, about: its arguments (see `keyspace::memory::UsedMemory`).
    let incoming = if spec.flags.contains(CommandFlags::DENYOOM) {
        args.iter().map(|a| a.len() as u64).sum()
    } else {
        0
    };
    let outcome = ctx.keyspace.perform_evictions(
        incoming,
        || client_memory::not_counted_for_evict(shared),
        me,
        ctx.out.buf,
    );
    let out_of_memory = outcome == Outcome::Fail;
    ctx.keyspace.eviction.pre_command_oom = out_of_memory;
    if !out_of_memory {
        return Ok(());
    }
    let in_multi = ctx.client.multi.is_some() && !ALLOWED_IN_MULTI.contains(&spec.name.as_str());
    if spec.flags.contains(CommandFlags::DENYOOM) || in_multi || exec_denied(ctx, spec) {
        return Err(OOM.into());
    }
    Ok(())
}

/// EXEC of a transaction that queued a `denyoom` command.
fn exec_denied(ctx: &Ctx<'_>, spec: &CommandSpec) -> bool {
    if spec.name != "exec" {
        return false;
    }
    let Some(multi) = ctx.client.multi.as_ref() else {
        return false;
    };
    let table = CommandTable::get();
    multi.queued().iter().any(|args| {
        table
            .lookup(args)
            .is_ok_and(|spec| spec.flags.contains(CommandFlags::DENYOOM))
    })
}
