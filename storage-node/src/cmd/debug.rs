//! `DEBUG` subcommands used by tests and operators.
//!
//! - `DEBUG SLEEP seconds` → `+OK` after stopping the whole node for that long (decimals
//!   allowed; read like C's `strtod`, so junk counts as 0). Like Redis, the node serves
//!   nobody meanwhile: the command runs under the keyspace lock.
//! - `DEBUG SET-ACTIVE-EXPIRE 0|1` → `+OK`; 0 stops the background expiry cycle (keys then
//!   only expire when touched). The argument is read like C's `atoi`.
//! - `DEBUG OBJECT key` → a status line `Value at:0x… refcount:N encoding:E
//!   serializedlength:N lru:N lru_seconds_idle:N`, where serializedlength is the size of the
//!   value's RDB encoding; `ERR no such key` if missing.
//! - `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]` → `+OK` after saving and reloading the RDB
//!   file (in [`super::save`]).
//! - `DEBUG HELP` → the subcommands this node supports.
//!
//! Anything else: `ERR unknown subcommand or wrong number of arguments for '…'. Try DEBUG
//! HELP.` Like Redis 7.0, the node refuses DEBUG unless `enable-debug-command` (default
//! `no`) allows it; the check runs before the command is queued or authenticated
//! (`crate::server::protection`), so a handler here only runs when it is allowed.

use std::time::Duration;

use bytes::Bytes;

use super::args::is;
use super::errors::NO_SUCH_KEY;
use super::object::{refcount, reply_help};
use super::{CmdError, CmdResult, Ctx, Handler};
use crate::keyspace::access::{idle_seconds, LRU_CLOCK_MAX};
use crate::persistence::rdb;

pub const COMMANDS: &[(&str, Handler)] = &[("debug", debug)];

const DEBUG_HELP: &[&str] = &[
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Options:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load; a",
    "      conflicting key makes the load fail.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
];

fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    match args.len() {
        2 if is(sub, "help") => reply_help(&mut ctx.out, &args[0], DEBUG_HELP),
        3 if is(sub, "sleep") => {
            let seconds = strtod_prefix(&args[2]);
            if seconds > 0.0 {
                // Whole microseconds, as Redis computes the nanosleep time.
                let micros = (seconds * 1_000_000.0) as u64;
                std::thread::sleep(Duration::from_micros(micros));
            }
            ctx.out.ok();
        }
        3 if is(sub, "set-active-expire") => {
            ctx.shared.config_mut().active_expire_enabled = atoi(&args[2]) != 0;
            ctx.out.ok();
        }
        3 if is(sub, "object") => debug_object(ctx, &args[2])?,
        _ if is(sub, "reload") => super::save::debug_reload(ctx, &args[2..])?,
        _ => return Err(syntax_error(args)),
    }
    Ok(())
}

fn debug_object(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let now = ctx.now_ms();
    let encodings = rdb::Encodings::from_config(&ctx.shared.config());
    let Some((entry, access)) = ctx.db().peek_with_access(key) else {
        return Err(NO_SUCH_KEY.into());
    };
    let line = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        &entry.value,
        refcount(&entry.value),
        entry.value.encoding_name(),
        rdb::serialized_len(&entry.value, &encodings),
        access & LRU_CLOCK_MAX,
        idle_seconds(access, now),
    );
    ctx.out.simple(&line);
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`.
fn syntax_error(args: &[Bytes]) -> CmdError {
    slotproxy::protocol::errors::subcommand_syntax_error(args).into()
}

/// The number C's `strtod` reads from the start of `text` (0 when there is none), limited
/// to what DEBUG SLEEP needs: no NaN, no infinity.
fn strtod_prefix(text: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(text);
    let text = text.trim_start();
    // The longest prefix that parses; the argument is short, so trying each is cheap.
    let limit = text.len().min(64);
    (1..=limit)
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .filter(|n| n.is_finite())
        .unwrap_or(0.0)
}

/// C's `atoi`: optional blanks and sign, then the digits that follow; 0 if none.
fn atoi(text: &[u8]) -> i64 {
    let mut rest = text;
    while let [b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c', tail @ ..] = rest {
        rest = tail;
    }
    let negative = rest.first() == Some(&b'-');
    if let [b'-' | b'+', tail @ ..] = rest {
        rest = tail;
    }
    let mut value: i64 = 0;
    for &d in rest.iter().take_while(|d| d.is_ascii_digit()) {
        value = value.saturating_mul(10).saturating_add((d - b'0') as i64);
    }
    if negative {
        -value
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_like_c() {
        assert_eq!(strtod_prefix(b"0.5"), 0.5);
        assert_eq!(strtod_prefix(b" 2abc"), 2.0);
        assert_eq!(strtod_prefix(b"abc"), 0.0);
        assert_eq!(strtod_prefix(b"inf"), 0.0);
        assert_eq!(atoi(b"1"), 1);
        assert_eq!(atoi(b" -3x"), -3);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b"0"), 0);
    }
}
