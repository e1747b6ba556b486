//! Saving the keyspace to the RDB file, synchronously.
//!
//! - `SAVE` → `+OK` once `dir/dbfilename` holds the whole keyspace and the function
//!   libraries (written to a temp file, fsynced, renamed, as Redis does); `-ERR` if the
//!   write failed (the reason is in the log). The node serves nobody meanwhile, as in Redis.
//! - `LASTSAVE` → the Unix time of the last successful save; before any, the start time
//!   (Redis's answer too).
//! - `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]` (through DEBUG, see [`super::debug`]) → `+OK`
//!   after saving, emptying keys and functions, and loading the file again. NOSAVE skips the
//!   save, NOFLUSH keeps the data in memory, MERGE lets the file's keys replace existing
//!   ones instead of failing. `ERR Error trying to load the RDB dump, check server logs.`
//!   if the load fails.
//!
//! BGSAVE and the `save` points are not here yet: they need a snapshot that does not stop
//! the node.

use bytes::Bytes;

use super::args::is;
use super::{CmdResult, Ctx, Handler};
use crate::persistence::disk;
use crate::server::clients::lock;

pub const COMMANDS: &[(&str, Handler)] = &[("save", save), ("lastsave", lastsave)];

/// Redis's `shared.err`: a failed save says no more than this to the client.
const SAVE_FAILED: &str = "ERR";
const RELOAD_OPTIONS: &str =
    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.";
const RELOAD_FAILED: &str = "ERR Error trying to load the RDB dump, check server logs.";

fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    disk::save(ctx.shared, ctx.keyspace).map_err(|_| SAVE_FAILED)?;
    ctx.out.ok();
    Ok(())
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
