//! Server commands.
//!
//! - `DBSIZE` → the number of keys in the selected database.
//! - `FLUSHDB [ASYNC|SYNC]` / `FLUSHALL [ASYNC|SYNC]` → `+OK`. Both modes free memory at once:
//!   a flush here is a pointer swap and a drop, short enough not to need a background thread.
//! - `TIME` → `[unix seconds, microseconds]` as two bulk strings.
//! - `FUNCTION FLUSH [ASYNC|SYNC]` → `+OK`. There are no function libraries yet, so there is
//!   nothing to delete; `ERR FUNCTION FLUSH only supports SYNC|ASYNC option` for another mode.
//!   The other FUNCTION subcommands are not implemented (`unknown subcommand`).
//!
//! `LASTSAVE` is not implemented: the node has never saved, and Redis's answer (the start
//! time) would claim otherwise.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::args::is;
use super::errors::SYNTAX;
use super::{CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("dbsize", dbsize),
    ("flushdb", flushdb),
    ("flushall", flushall),
    ("time", time),
    ("function", function),
];

/// FUNCTION subcommands no handler serves yet.
pub const FUNCTION_UNIMPLEMENTED: &[&str] = &[
    "delete", "dump", "help", "kill", "list", "load", "restore", "stats",
];

fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let len = ctx.db().len();
    ctx.out.integer(len as i64);
    Ok(())
}

fn flush_mode_ok(args: &[Bytes]) -> CmdResult {
    match args {
        [_] => Ok(()),
        [_, mode] if is(mode, "async") || is(mode, "sync") => Ok(()),
        _ => Err(SYNTAX.into()),
    }
}

fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_mode_ok(args)?;
    ctx.db().clear();
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_mode_ok(args)?;
    ctx.keyspace.flush_all();
    ctx.out.ok();
    Ok(())
}

fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk_integer(now.as_secs() as i64);
    ctx.out.bulk_integer(i64::from(now.subsec_micros()));
    Ok(())
}

fn function(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if !is(&args[1], "flush") {
        return Err(super::unknown_subcommand(args));
    }
    match args {
        [_, _] => {}
        [_, _, mode] if is(mode, "async") || is(mode, "sync") => {}
        [_, _, _] => return Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into()),
        _ => {
            return Err(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                super::args::text(&args[1])
            )
            .into())
        }
    }
    ctx.out.ok();
    Ok(())
}
