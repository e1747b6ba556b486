//! Removing ranges.
//!
//! - `ZREMRANGEBYRANK key start stop` → the number removed; ranks as in ZRANGE.
//! - `ZREMRANGEBYSCORE key min max` / `ZREMRANGEBYLEX key min max` → the number removed;
//!   bounds as in ZRANGEBYSCORE / ZRANGEBYLEX.
//!
//! The range is checked before the key is looked up; a missing key answers 0 and an
//! emptied set is deleted.

use bytes::Bytes;

use super::bounds::{rank_range, LexRange, ScoreRange};
use super::{db_and_out, delete_if_empty, notify_change, write_zset};
use crate::cmd::args::int;
use crate::cmd::{CmdResult, Ctx};
use crate::types::ZSetValue;

enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

fn remove_range(ctx: &mut Ctx<'_>, key: &[u8], range: Range) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let removed = match write_zset(db, key)? {
        Some(zset) => {
            let (start, end) = match &range {
                Range::Rank(start, stop) => rank_range(*start, *stop, zset.len()),
                Range::Score(range) => range.ranks(zset),
                Range::Lex(range) => range.ranks(zset),
            };
            remove_ranks(zset, start, end)
        }
        None => 0,
    };
    db.dirty += removed as u64;
    let deleted = delete_if_empty(db, key);
    out.integer(removed as i64);
    if removed > 0 {
        let event = match range {
            Range::Rank(..) => "zremrangebyrank",
            Range::Score(_) => "zremrangebyscore",
            Range::Lex(_) => "zremrangebylex",
        };
        notify_change(ctx, event, key, deleted);
    }
    Ok(())
}

/// Removes the elements with ranks `[start, end)`.
fn remove_ranks(zset: &mut ZSetValue, start: usize, end: usize) -> usize {
    let doomed: Vec<Vec<u8>> = zset
        .tree
        .iter_from(start)
        .take(end.saturating_sub(start))
        .map(|(m, _)| m.to_vec())
        .collect();
    for member in &doomed {
        zset.remove(member);
    }
    doomed.len()
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let range = Range::Rank(int(&args[2])?, int(&args[3])?);
    remove_range(ctx, &args[1], range)
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let range = Range::Score(ScoreRange::parse(&args[2], &args[3])?);
    remove_range(ctx, &args[1], range)
}

pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let range = Range::Lex(LexRange::parse(&args[2], &args[3])?);
    remove_range(ctx, &args[1], range)
}
