//! Adding, removing and reading single members.
//!
//! - `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]` → the number
//!   of members added (with CH: added or whose score changed). With INCR (one pair only) →
//!   the new score, or null when NX/XX/GT/LT prevented the change. Errors: `ERR syntax
//!   error` (no pairs or an odd count), `ERR XX and NX options at the same time are not
//!   compatible`, `ERR GT, LT, and/or NX options at the same time are not compatible`, `ERR
//!   INCR option supports a single increment-element pair`, `ERR value is not a valid
//!   float`, `ERR resulting score is not a number (NaN)` (inf + -inf).
//! - `ZINCRBY key increment member` → the new score.
//! - `ZREM key member [member ...]` → the number removed.
//! - `ZCARD key` → the number of members. `ZSCORE key member` → the score or null.
//!   `ZMSCORE key member [member ...]` → an array of scores or nulls.
//! - `ZRANK key member` / `ZREVRANK key member` → the 0-based rank (ascending /
//!   descending) or null.

use bytes::Bytes;

use super::bounds::score_arg;
use super::{db_and_out, delete_if_empty, limits, notify_change, read_zset, write_zset};
use crate::cmd::args::is;
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdResult, Ctx};
use crate::types::{Value, ZSetValue};

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

#[derive(Default)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one `zsetAdd` did.
enum Outcome {
    Added(f64),
    Updated(f64),
    /// Nothing changed; the score is the one reported with INCR.
    Unchanged(f64),
    /// A flag prevented the change (INCR then replies null).
    Skipped,
}

pub fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zadd_scored(ctx, args, None)
}

/// ZADD with its scores already read when `scores` is given (GEOADD computes them and
/// builds the ZADD it stands for): one per pair, in order, used instead of the pairs'
/// score arguments.
pub fn zadd_scored(ctx: &mut Ctx<'_>, args: &[Bytes], scores: Option<&[f64]>) -> CmdResult {
    let mut flags = Flags::default();
    let mut at = 2;
    while let Some(arg) = args.get(at) {
        let flag = match () {
            _ if is(arg, "nx") => &mut flags.nx,
            _ if is(arg, "xx") => &mut flags.xx,
            _ if is(arg, "gt") => &mut flags.gt,
            _ if is(arg, "lt") => &mut flags.lt,
            _ if is(arg, "ch") => &mut flags.ch,
            _ if is(arg, "incr") => &mut flags.incr,
            _ => break,
        };
        *flag = true;
        at += 1;
    }
    let pairs = &args[at..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(SYNTAX.into());
    }
    if flags.nx && flags.xx {
        return Err("ERR XX and NX options at the same time are not compatible".into());
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
    }
    if flags.incr && pairs.len() > 2 {
        return Err("ERR INCR option supports a single increment-element pair".into());
    }
    if let Some(scores) = scores.filter(|s| s.len() * 2 == pairs.len()) {
        return add_pairs(ctx, &args[1], pairs, scores, &flags);
    }
    let scores = pairs
        .chunks(2)
        .map(|pair| score_arg(&pair[0]))
        .collect::<Result<Vec<f64>, _>>()?;
    add_pairs(ctx, &args[1], pairs, &scores, &flags)
}

pub fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let score = score_arg(&args[2])?;
    let flags = Flags {
        incr: true,
        ..Flags::default()
    };
    add_pairs(ctx, &args[1], &args[2..], &[score], &flags)
}

fn add_pairs(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    pairs: &[Bytes],
    scores: &[f64],
    flags: &Flags,
) -> CmdResult {
    let limits = limits(ctx);
    let (db, out) = db_and_out(ctx);
    if write_zset(db, key)?.is_none() {
        if flags.xx {
            if flags.incr {
                out.null();
            } else {
                out.integer(0);
            }
            return Ok(());
        }
        let zset = ZSetValue::for_first_member(pairs[1].len(), limits);
        db.insert(key, Value::ZSet(Box::new(zset)), 0);
    }
    let Some(zset) = write_zset(db, key)? else {
        return Ok(());
    };
    let (mut added, mut updated, mut processed) = (0, 0, 0);
    let mut reply_score = 0.0;
    let mut failed = false;
    for (pair, &score) in pairs.chunks(2).zip(scores) {
        match add_one(zset, &pair[1], score, flags, limits) {
            Some(Outcome::Added(s)) => {
                added += 1;
                processed += 1;
                reply_score = s;
            }
            Some(Outcome::Updated(s)) => {
                updated += 1;
                processed += 1;
                reply_score = s;
            }
            Some(Outcome::Unchanged(s)) => {
                processed += 1;
                reply_score = s;
            }
            Some(Outcome::Skipped) => {}
            None => {
                failed = true;
                break;
            }
        }
    }
    db.dirty += (added + updated) as u64;
    delete_if_empty(db, key);
    if added > 0 {
        ctx.signal_key_ready(key);
    }
    // Announced before a NaN error too, for what was done before it (as Redis).
    if added + updated > 0 {
        let event = if flags.incr { "zincr" } else { "zadd" };
        notify_change(ctx, event, key, false);
    }
    if failed {
        return Err(NAN_SCORE.into());
    }
    if flags.incr {
        if processed > 0 {
            ctx.out.double(reply_score);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out
            .integer(if flags.ch { added + updated } else { added });
    }
    Ok(())
}

/// Redis's `zsetAdd` for one member; None when INCR produced NaN.
fn add_one(
    zset: &mut ZSetValue,
    member: &[u8],
    mut score: f64,
    flags: &Flags,
    limits: crate::types::zset::ZSetLimits,
) -> Option<Outcome> {
    match zset.score(member) {
        Some(current) => {
            if flags.nx {
                return Some(Outcome::Skipped);
            }
            if flags.incr {
                score += current;
                if score.is_nan() {
                    return None;
                }
            }
            if (flags.lt && score >= current) || (flags.gt && score <= current) {
                return Some(Outcome::Skipped);
            }
            if score != current {
                zset.set_score(member, score, limits);
                Some(Outcome::Updated(score))
            } else {
                Some(Outcome::Unchanged(score))
            }
        }
        None if flags.xx => Some(Outcome::Skipped),
        None => {
            zset.set_score(member, score, limits);
            Some(Outcome::Added(score))
        }
    }
}

pub fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let (db, out) = db_and_out(ctx);
    let mut removed = 0;
    if let Some(zset) = write_zset(db, key)? {
        for member in &args[2..] {
            removed += zset.remove(member).is_some() as i64;
            if zset.is_empty() {
                break;
            }
        }
    }
    db.dirty += removed as u64;
    let deleted = delete_if_empty(db, key);
    out.integer(removed);
    if removed > 0 {
        notify_change(ctx, "zrem", key, deleted);
    }
    Ok(())
}

pub fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let len = read_zset(db, &args[1])?.map_or(0, ZSetValue::len);
    out.integer(len as i64);
    Ok(())
}

pub fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    match read_zset(db, &args[1])?.and_then(|z| z.score(&args[2])) {
        Some(score) => out.double(score),
        None => out.null(),
    }
    Ok(())
}

pub fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let zset = read_zset(db, &args[1])?;
    out.array(args.len() - 2);
    for member in &args[2..] {
        match zset.and_then(|z| z.score(member)) {
            Some(score) => out.double(score),
            None => out.null(),
        }
    }
    Ok(())
}

fn rank(ctx: &mut Ctx<'_>, args: &[Bytes], reverse: bool) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let zset = read_zset(db, &args[1])?;
    match zset.and_then(|z| z.tree.rank(&args[2]).map(|r| (r, z.len()))) {
        Some((rank, len)) => out.integer(if reverse { len - 1 - rank } else { rank } as i64),
        None => out.null(),
    }
    Ok(())
}

pub fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rank(ctx, args, false)
}

pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rank(ctx, args, true)
}
