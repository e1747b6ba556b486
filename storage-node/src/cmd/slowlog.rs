//! `SLOWLOG`: the commands that ran slower than `slowlog-log-slower-than` microseconds
//! (see `keyspace::slowlog` for what an entry keeps and which commands are logged).
//!
//! - `SLOWLOG GET [count]` → the newest `count` entries (10 by default, -1 for all), each
//!   `[id, unix time, microseconds, [args...], "ip:port", client name]`; a count below -1
//!   or not an integer answers `ERR count should be greater than or equal to -1`.
//! - `SLOWLOG LEN` → the number of entries.
//! - `SLOWLOG RESET` → `+OK`; the entries go, the ids keep counting.
//! - `SLOWLOG HELP` → the list of subcommands.

use bytes::Bytes;

use super::args::is;
use super::object::reply_help;
use super::{CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[("slowlog", slowlog)];

const HELP: &[&str] = &[
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
];

const BAD_COUNT: &str = "ERR count should be greater than or equal to -1";

fn slowlog(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    match args.len() {
        2 if is(sub, "help") => reply_help(&mut ctx.out, &args[0], HELP),
        2 if is(sub, "reset") => {
            ctx.keyspace.slowlog.reset();
            ctx.out.ok();
        }
        2 if is(sub, "len") => ctx.out.integer(ctx.keyspace.slowlog.len() as i64),
        2 | 3 if is(sub, "get") => get(ctx, args.get(2))?,
        _ => return Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into()),
    }
    Ok(())
}

fn get(ctx: &mut Ctx<'_>, count: Option<&Bytes>) -> CmdResult {
    let log = &ctx.keyspace.slowlog;
    let count = match count {
        None => 10,
        Some(arg) => match slotproxy::numbers::parse_i64(arg) {
            Some(-1) => log.len(),
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err(BAD_COUNT.into()),
        },
    };
    let count = count.min(log.len());
    ctx.out.array(count);
    for entry in log.newest(count) {
        ctx.out.array(6);
        ctx.out.integer(entry.id as i64);
        ctx.out.integer(entry.unix_time as i64);
        ctx.out.integer(entry.micros as i64);
        ctx.out.array(entry.args.len());
        for arg in &entry.args {
            ctx.out.bulk(arg);
        }
        ctx.out.bulk(entry.addr.as_bytes());
        ctx.out.bulk(&entry.name);
    }
    Ok(())
}

/// Logs a command that ran for `took` if it was slow enough, as Redis's `call()` does for
/// every command it runs, those inside EXEC and scripts included; EXEC itself is
/// `skip_slowlog`, and commands replayed from the AOF are not logged.
pub(super) fn record(
    ctx: &mut Ctx<'_>,
    spec: &slotproxy::cluster::CommandSpec,
    args: &[Bytes],
    took: std::time::Duration,
) {
    let micros = took.as_micros() as u64;
    if !ctx.keyspace.slowlog.wants(micros)
        || ctx.client.loading
        || spec
            .flags
            .contains(slotproxy::cluster::CommandFlags::SKIP_SLOWLOG)
    {
        return;
    }
    let (addr, name) = if ctx.client.scripted {
        ("?:0".to_string(), Bytes::new())
    } else {
        let name = Bytes::from(crate::server::clients::lock(&ctx.client.handle.name).clone());
        (ctx.client.handle.addr.to_string(), name)
    };
    let args = crate::keyspace::redact::redacted(spec.name.as_str(), args);
    ctx.keyspace.slowlog.record(&args, micros, addr, name);
}
