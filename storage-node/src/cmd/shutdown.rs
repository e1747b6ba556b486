//! `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: stops the node, as Redis 7.0 does.
//!
//! - A running BGSAVE is stopped and its temp file removed.
//! - The RDB file is saved first when save points are configured (unless NOSAVE) or SAVE is
//!   given. If that save fails the node does not exit and answers
//!   `-ERR Errors trying to SHUTDOWN. Check logs.`, unless FORCE (then it exits anyway).
//! - On success the node exits with status 0 and the client gets no reply.
//! - ABORT cancels a shutdown waiting for lagging replicas; the node has no replicas, so
//!   nothing ever waits and ABORT answers `-ERR No shutdown in progress.`. For the same
//!   reason NOW (do not wait for replicas) changes nothing.
//! - NOSAVE with SAVE, or ABORT with any other flag → `-ERR syntax error`.
//!
//! SIGTERM and SIGINT shut the node down the same way, as plain SHUTDOWN
//! (`crate::server::signals`).

use bytes::Bytes;

use super::args::is;
use super::errors::SYNTAX;
use super::{CmdResult, Ctx, Handler};
use crate::keyspace::Keyspace;
use crate::persistence::disk;
use crate::server::Shared;

pub const COMMANDS: &[(&str, Handler)] = &[("shutdown", shutdown)];

const NO_SHUTDOWN: &str = "ERR No shutdown in progress.";
const SHUTDOWN_FAILED: &str = "ERR Errors trying to SHUTDOWN. Check logs.";

#[derive(Default)]
struct Flags {
    nosave: bool,
    save: bool,
    force: bool,
    abort: bool,
    now: bool,
}

fn parse(args: &[Bytes]) -> Option<Flags> {
    let mut flags = Flags::default();
    for arg in args {
        if is(arg, "nosave") {
            flags.nosave = true;
        } else if is(arg, "save") {
            flags.save = true;
        } else if is(arg, "now") {
            flags.now = true;
        } else if is(arg, "force") {
            flags.force = true;
        } else if is(arg, "abort") {
            flags.abort = true;
        } else {
            return None;
        }
    }
    let others = flags.nosave || flags.save || flags.now || flags.force;
    if (flags.abort && others) || (flags.nosave && flags.save) {
        return None;
    }
    Some(flags)
}

fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let flags = parse(&args[1..]).ok_or(SYNTAX)?;
    if flags.abort {
        return Err(NO_SHUTDOWN.into());
    }
    crate::log::notice!("User requested shutdown...");
    let (save, nosave, force) = (flags.save, flags.nosave, flags.force);
    if !prepare(ctx.shared, ctx.keyspace, save, nosave, force) {
        return Err(SHUTDOWN_FAILED.into());
    }
    crate::log::notice!("Redis is now ready to exit, bye bye...");
    crate::process::exit(0);
}

/// Redis's `finishShutdown`: stops a running BGSAVE and makes the final save (with save
/// points set unless `nosave`, or when `save`). False when that save failed and `force`
/// is off: the node must not exit then.
pub fn prepare(
    shared: &Shared,
    keyspace: &mut Keyspace,
    save: bool,
    nosave: bool,
    force: bool,
) -> bool {
    if shared.persistence.background.in_progress() {
        crate::log::notice!("There is a child saving an .rdb. Killing it!");
        shared.persistence.background.abort(shared, keyspace);
    }
    if shared.persistence.background.rewriting() {
        crate::log::notice!("There is a child rewriting the AOF. Killing it!");
        shared.persistence.background.abort(shared, keyspace);
    }
    if shared.aof.is_on() {
        crate::log::notice!("Calling fsync() on the AOF file.");
        shared.aof.flush_and_fsync();
    }
    let save_points = !shared.config().save.is_empty();
    if (save_points && !nosave) || save {
        crate::log::notice!("Saving the final RDB snapshot before exiting.");
        if disk::save(shared, keyspace).is_err() {
            if force {
                crate::log::warning!("Error trying to save the DB. Exit anyway.");
            } else {
                crate::log::warning!("Error trying to save the DB, can't exit.");
                crate::log::warning!(
                    "Errors trying to shut down the server. Check the logs for more information."
                );
                return false;
            }
        }
    }
    true
}
