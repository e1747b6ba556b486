//! Saving the keyspace to the RDB file.
//!
//! - `SAVE` → `+OK` once `dir/dbfilename` holds the whole keyspace and the function
//!   libraries (written to a temp file, fsynced, renamed, as Redis does); `-ERR` if the
//!   write failed (the reason is in the log). The node serves nobody meanwhile, as in Redis.
//!   `-ERR Background save already in progress` while a BGSAVE runs.
//! - `BGSAVE [SCHEDULE]` → `+Background saving started`: the same file is written from a
//!   point-in-time snapshot while the node keeps serving (`persistence::snapshot`);
//!   `-ERR Background save already in progress` if one runs; inside MULTI/EXEC,
//!   `+Background saving scheduled` (it starts right after, from the save-point check).
//!   SCHEDULE matters in Redis only while an AOF rewrite runs; this node has no other
//!   background job, so it starts at once. LASTSAVE and INFO persistence report the
//!   outcome.
//! - `LASTSAVE` → the Unix time of the last successful save; before any, the start time
//!   (Redis's answer too).
//! - `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]` (through DEBUG, see [`super::debug`]) → `+OK`
//!   after saving, emptying keys and functions, and loading the file again. NOSAVE skips the
//!   save, NOFLUSH keeps the data in memory, MERGE lets the file's keys replace existing
//!   ones instead of failing. `ERR Error trying to load the RDB dump, check server logs.`
//!   if the load fails.
//! - a write (or PING) while the last background save failed, save points are set and
//!   `stop-writes-on-bgsave-error` is on → `-MISCONF ...` ([`refuse_writes_after_failed_save`]).

use bytes::Bytes;

use slotproxy::cluster::{CommandFlags, CommandSpec};

use super::args::is;
use super::errors::SYNTAX;
use super::{CmdError, CmdResult, Ctx, Handler};
use crate::persistence::{disk, snapshot};
use crate::server::clients::{lock, Client};
use crate::server::Shared;

pub const COMMANDS: &[(&str, Handler)] =
    &[("save", save), ("bgsave", bgsave), ("lastsave", lastsave)];

const BGSAVE_RUNNING: &str = "ERR Background save already in progress";
const REWRITE_RUNNING: &str = "ERR Another child process is active (AOF?): can't BGSAVE right \
now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.";
/// Redis's `shared.bgsaveerr`.
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's \
currently unable to persist to disk. Commands that may modify the data set are disabled, \
because this instance is configured to report errors during writes if RDB snapshotting \
fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about \
the RDB error.";

/// Redis's `shared.err`: a failed save says no more than this to the client.
const SAVE_FAILED: &str = "ERR";
const RELOAD_OPTIONS: &str =
    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.";
const RELOAD_FAILED: &str = "ERR Error trying to load the RDB dump, check server logs.";

fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.shared.persistence.background.in_progress() {
        return Err(BGSAVE_RUNNING.into());
    }
    ctx.shared.persistence.count_save();
    disk::save(ctx.shared, ctx.keyspace).map_err(|_| SAVE_FAILED)?;
    ctx.out.ok();
    Ok(())
}

fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let schedule = match args {
        [_] => false,
        [_, word] if is(word, "schedule") => true,
        _ => return Err(SYNTAX.into()),
    };
    let background = &ctx.shared.persistence.background;
    if background.in_progress() {
        return Err(BGSAVE_RUNNING.into());
    }
    // An AOF rewrite has the snapshot (Redis's other child).
    if background.rewriting() && !schedule && !ctx.client.nested {
        return Err(REWRITE_RUNNING.into());
    }
    // Inside EXEC Redis schedules it, so that the transaction stays one atomic step.
    if ctx.client.nested || background.rewriting() {
        background.schedule();
        ctx.out.simple("Background saving scheduled");
        return Ok(());
    }
    match snapshot::start(ctx.shared, ctx.keyspace) {
        Ok(()) => ctx.out.simple("Background saving started"),
        Err(snapshot::StartError::Running) => return Err(BGSAVE_RUNNING.into()),
        Err(snapshot::StartError::Spawn(_)) => return Err(SAVE_FAILED.into()),
    }
    Ok(())
}

/// Redis's `writeCommandsDeniedByDiskError` gate: while the last background save failed,
/// save points are configured and `stop-writes-on-bgsave-error` is on, write commands
/// (EXEC of a transaction with any) and PING are refused with MISCONF.
pub fn refuse_writes_after_failed_save(
    shared: &Shared,
    client: &Client,
    spec: &CommandSpec,
) -> Result<(), CmdError> {
    // The common case costs one atomic load.
    if !shared.persistence.background.last_failed() {
        return Ok(());
    }
    let denied = {
        let config = shared.config();
        config.stop_writes_on_bgsave_error && !config.save.is_empty()
    };
    if !denied {
        return Ok(());
    }
    let writes = spec.flags.contains(CommandFlags::WRITE)
        || spec.name == "ping"
        || (spec.name == "exec" && client.multi.as_ref().is_some_and(queues_a_write));
    if writes {
        Err(MISCONF.into())
    } else {
        Ok(())
    }
}

/// Whether a transaction holds a write command (EXEC then counts as a write).
pub(super) fn queues_a_write(multi: &super::transaction::Multi) -> bool {
    let table = slotproxy::cluster::CommandTable::get();
    multi.queued().iter().any(|args| {
        table
            .lookup(args)
            .is_ok_and(|spec| spec.flags.contains(CommandFlags::WRITE))
    })
}

fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let time = ctx.shared.persistence.last_save_unix();
    ctx.out.integer(time as i64);
    Ok(())
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`; `options` are the words after RELOAD.
pub fn debug_reload(ctx: &mut Ctx<'_>, options: &[Bytes]) -> CmdResult {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for option in options {
        if is(option, "merge") {
            merge = true;
        } else if is(option, "noflush") {
            flush = false;
        } else if is(option, "nosave") {
            save = false;
        } else {
            return Err(RELOAD_OPTIONS.into());
        }
    }
    if save {
        disk::save(ctx.shared, ctx.keyspace).map_err(|_| SAVE_FAILED)?;
    }
    if flush {
        ctx.keyspace.flush_all();
        lock(&ctx.shared.scripting.functions).flush();
    }
    let path = disk::rdb_path(ctx.shared);
    match disk::load(ctx.shared, ctx.keyspace, &path, merge) {
        Ok(_) => {
            crate::log::notice!("DB reloaded by DEBUG RELOAD");
            ctx.out.ok();
            Ok(())
        }
        Err(e) => {
            crate::log::warning!("DEBUG RELOAD: {e}");
            Err(RELOAD_FAILED.into())
        }
    }
}
