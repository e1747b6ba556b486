//! Server commands.
//!
//! - `DBSIZE` → the number of keys in the selected database.
//! - `FLUSHDB [ASYNC|SYNC]` / `FLUSHALL [ASYNC|SYNC]` → `+OK`. Both modes free memory at once:
//!   a flush here is a pointer swap and a drop, short enough not to need a background thread.
//!   FLUSHALL also stops a running BGSAVE and, with save points set, saves the empty
//!   dataset at once, as Redis 7.0 does.
//! - `TIME` → `[unix seconds, microseconds]` as two bulk strings.
//!
//! `SAVE` and `LASTSAVE` are in [`super::save`].

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
    crate::persistence::disk::flush_all(ctx.shared, ctx.keyspace);
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
