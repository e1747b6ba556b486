//! Popping the lowest or highest members, blocking or not.
//!
//! - `ZPOPMIN key [count]` / `ZPOPMAX key [count]` → `[member, score, ...]`, lowest (or
//!   highest) first; in RESP3 with a count, `[[member, score], ...]`. Missing key or a count
//!   of 0: empty array. `ERR value is out of
//!   range, must be positive` for a negative count; more arguments: `ERR syntax error`.
//! - `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]` → `[key, [[member, score], ...]]`
//!   from the first non-empty key, or null. `ERR numkeys should be greater than 0`, `ERR
//!   count should be greater than 0`, `ERR syntax error`.
//! - `BZPOPMIN key [key ...] timeout` / `BZPOPMAX ...` → `[key, member, score]` from the
//!   first non-empty key; otherwise wait up to `timeout` seconds (decimals allowed, 0 =
//!   forever), then null. Clients waiting on a key are served first come, first served.
//! - `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]` → as ZMPOP, blocking.
//!
//! Timeout errors, as Redis: `ERR timeout is not a float or out of range`, `ERR timeout is
//! negative` (also for timeouts too big for 64-bit milliseconds, as Redis's cast gives). Inside MULTI/EXEC or a script the blocking
//! forms answer null at once instead of waiting.

use std::time::Duration;

use bytes::Bytes;
use slotproxy::numbers::parse_f64;

use super::{db_and_out, notify_change, write_zset};
use crate::cmd::args::{int, int_in_range, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::blocking::{TimeoutReply, Wants};
use crate::keyspace::Db;
use crate::types::long_double::{self, Parsed};

/// Reads a blocking command's timeout in seconds (Redis's `getTimeoutFromObjectOrReply`):
/// None means wait forever. The text is read as a long double; Redis then converts the
/// milliseconds to a 64-bit integer, where anything too big (infinity included) wraps to a
/// negative number, hence `timeout is negative` for those. Hexadecimal timeouts, which
/// `strtold` also reads, are not supported.
pub fn parse_timeout(arg: &[u8]) -> Result<Option<Duration>, CmdError> {
    const NOT_A_FLOAT: &str = "ERR timeout is not a float or out of range";
    const NEGATIVE: &str = "ERR timeout is negative";
    let seconds = match long_double::parse(arg).ok_or(CmdError::from(NOT_A_FLOAT))? {
        Parsed::Infinite => return Err(NEGATIVE.into()),
        Parsed::Finite(_) => parse_f64(arg).ok_or(CmdError::from(NOT_A_FLOAT))?,
    };
    let millis = (seconds * 1000.0).ceil();
    if millis >= i64::MAX as f64 || millis < 0.0 {
        return Err(NEGATIVE.into());
    }
    Ok((millis > 0.0).then(|| Duration::from_millis(millis as u64)))
}

/// How a pop reply is shaped (Redis's `genericZpopCommand` flags).
#[derive(Clone, Copy)]
struct Shape {
    /// `[member, score]` pairs instead of a flat list.
    nested: bool,
    /// The key comes first.
    with_key: bool,
}

/// Pops up to `count` elements from the sorted set at `key` (which exists), replies, and
/// announces `zpopmin`/`zpopmax` (then `del` if the set emptied). Returns how many it took.
fn pop_and_reply(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    max: bool,
    count: usize,
    shape: Shape,
) -> Result<usize, CmdError> {
    let (db, out) = db_and_out(ctx);
    let Some(zset) = write_zset(db, key)? else {
        return Ok(0);
    };
    let taken = count.min(zset.len());
    let popped: Vec<(Vec<u8>, f64)> = if max {
        zset.tree.iter_rev_from(0).take(taken)
    } else {
        zset.tree.iter_from(0).take(taken)
    }
    .map(|(m, s)| (m.to_vec(), s))
    .collect();
    for (member, _) in &popped {
        zset.remove(member);
    }
    let emptied = zset.is_empty();
    match (shape.nested, shape.with_key) {
        (false, false) => out.array(taken * 2),
        (true, false) => out.array(taken),
        (false, true) => {
            out.array(taken * 2 + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(taken);
        }
    }
    for (member, score) in &popped {
        if shape.nested {
            out.array(2);
        }
        out.bulk(member);
        out.double(*score);
    }
    db.dirty += taken as u64;
    if emptied {
        db.remove(key);
    }
    if taken > 0 {
        notify_change(ctx, if max { "zpopmax" } else { "zpopmin" }, key, emptied);
    }
    Ok(taken)
}

/// The first of `keys` holding a sorted set (WRONGTYPE stops the search), if any.
fn first_present(db: &mut Db, keys: &[Bytes]) -> Result<Option<Bytes>, CmdError> {
    for key in keys {
        if write_zset(db, key)?.is_some() {
            return Ok(Some(key.clone()));
        }
    }
    Ok(None)
}

fn zpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX.into());
    }
    let count = match args.get(2) {
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err("ERR value is out of range, must be positive".into()),
        },
        None => None,
    };
    let shape = Shape {
        nested: count.is_some() && ctx.out.is_resp3(),
        with_key: false,
    };
    let (db, out) = db_and_out(ctx);
    if write_zset(db, &args[1])?.is_none() || count == Some(0) {
        out.array(0);
        return Ok(());
    }
    pop_and_reply(ctx, &args[1], max, count.unwrap_or(1), shape).map(|_| ())
}

pub fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zpop(ctx, args, false)
}

pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zpop(ctx, args, true)
}

/// Pops from the first non-empty key, or blocks (None timeout arg: never blocks).
fn pop_or_block(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    max: bool,
    count: usize,
    shape: Shape,
    timeout: Option<&Bytes>,
) -> CmdResult {
    let timeout = timeout.map(|arg| parse_timeout(arg)).transpose()?;
    if let Some(key) = first_present(ctx.db(), keys)? {
        let taken = pop_and_reply(ctx, &key, max, count, shape)?;
        // Propagated in the non-blocking, one-key form (Redis 7.0's ZPOPMIN/ZPOPMAX
        // [count], the count it took), whichever key the command found.
        let pop = if max {
            &b"ZPOPMAX"[..]
        } else {
            &b"ZPOPMIN"[..]
        };
        let mut rewritten = vec![Bytes::from_static(pop), key];
        if shape.nested {
            rewritten.push(Bytes::from(taken.to_string()));
        }
        ctx.propagate_as(rewritten);
        return Ok(());
    }
    match timeout {
        Some(timeout) if ctx.may_block() => {
            ctx.block_on(keys.to_vec(), Wants::ZSet, timeout, TimeoutReply::NullArray)
        }
        _ => ctx.out.null_array(),
    }
    Ok(())
}

fn bzpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> CmdResult {
    let keys = &args[1..args.len() - 1];
    let shape = Shape {
        nested: false,
        with_key: true,
    };
    pop_or_block(ctx, keys, max, 1, shape, args.last())
}

pub fn bzpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bzpop(ctx, args, false)
}

pub fn bzpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bzpop(ctx, args, true)
}

/// ZMPOP and BZMPOP: `numkeys` is at `args[at]`.
fn mpop(ctx: &mut Ctx<'_>, args: &[Bytes], at: usize, timeout: Option<&Bytes>) -> CmdResult {
    let numkeys = int_in_range(&args[at], 1, i64::MAX)
        .map_err(|_| CmdError::from("ERR numkeys should be greater than 0"))?
        as usize;
    let where_at = at.saturating_add(numkeys).saturating_add(1);
    let max = match args.get(where_at) {
        Some(arg) if is(arg, "min") => false,
        Some(arg) if is(arg, "max") => true,
        _ => return Err(SYNTAX.into()),
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && is(&args[j], "count") && j + 1 < args.len() {
            let n = int_in_range(&args[j + 1], 1, i64::MAX)
                .map_err(|_| CmdError::from("ERR count should be greater than 0"))?;
            count = Some(n as usize);
            j += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    let keys = &args[at + 1..where_at];
    let shape = Shape {
        nested: true,
        with_key: true,
    };
    pop_or_block(ctx, keys, max, count.unwrap_or(1), shape, timeout)
}

pub fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    mpop(ctx, args, 1, None)
}

pub fn bzmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    mpop(ctx, args, 2, Some(&args[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_like_redis() {
        assert_eq!(parse_timeout(b"0"), Ok(None));
        assert_eq!(parse_timeout(b"0.1"), Ok(Some(Duration::from_millis(100))));
        assert_eq!(parse_timeout(b"0.0001"), Ok(Some(Duration::from_millis(1))));
        assert!(parse_timeout(b"-1").is_err());
        assert!(parse_timeout(b"abc").is_err());
        assert_eq!(parse_timeout(b"inf"), Err("ERR timeout is negative".into()));
        assert!(parse_timeout(b"1e5000").is_err());
    }
}
