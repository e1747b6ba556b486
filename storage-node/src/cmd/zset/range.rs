//! Reading ranges.
//!
//! - `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]` →
//!   members (and scores: flat in RESP2, `[member, score]` pairs in RESP3). Ranks count
//!   from 0, negative from the end; with BYSCORE/BYLEX `start stop` are bounds (`max min`
//!   with REV). LIMIT needs BYSCORE or BYLEX (`ERR syntax error, LIMIT is only supported in
//!   combination with either BYSCORE or BYLEX`); WITHSCORES is refused with BYLEX (`ERR
//!   syntax error, WITHSCORES not supported in combination with BYLEX`). A negative offset
//!   gives nothing, a negative count means no limit. Missing key: empty array.
//! - `ZRANGESTORE dst src start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]` → the
//!   number of elements stored at `dst` (an empty result deletes `dst`).
//! - Legacy forms: `ZREVRANGE key start stop [WITHSCORES]`, `ZRANGEBYSCORE key min max
//!   [WITHSCORES] [LIMIT offset count]`, `ZREVRANGEBYSCORE key max min ...`,
//!   `ZRANGEBYLEX key min max [LIMIT offset count]`, `ZREVRANGEBYLEX key max min ...`.
//! - `ZCOUNT key min max` / `ZLEXCOUNT key min max` → how many elements are in range.

use bytes::Bytes;

use super::bounds::{rank_range, LexRange, ScoreRange};
use super::{db_and_out, limits, read_zset, reply_elements, store_result};
use crate::cmd::args::{int, is};
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdResult, Ctx};
use crate::types::zset::ScoreTree;
use crate::types::ZSetValue;

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Auto,
    Rank,
    Score,
    Lex,
}

enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// A parsed ZRANGE-family request.
struct Request {
    range: Range,
    reverse: bool,
    with_scores: bool,
    offset: i64,
    /// -1: no LIMIT given (any negative count means "all").
    limit: i64,
}

impl Request {
    /// Parses `key min max [options]` starting at `args[at]` (the key), as Redis's
    /// `zrangeGenericCommand`; `by` and `reverse` are fixed by the legacy commands.
    fn parse(
        args: &[Bytes],
        at: usize,
        store: bool,
        mut by: By,
        reverse: Option<bool>,
    ) -> Result<Request, crate::cmd::CmdError> {
        let mut direction = reverse;
        let (mut with_scores, mut offset, mut limit) = (false, 0, -1);
        let mut j = at + 3;
        while j < args.len() {
            let arg = &args[j];
            let left = args.len() - j - 1;
            if !store && is(arg, "withscores") {
                with_scores = true;
            } else if is(arg, "limit") && left >= 2 {
                offset = int(&args[j + 1])?;
                limit = int(&args[j + 2])?;
                j += 2;
            } else if direction.is_none() && is(arg, "rev") {
                direction = Some(true);
            } else if by == By::Auto && is(arg, "bylex") {
                by = By::Lex;
            } else if by == By::Auto && is(arg, "byscore") {
                by = By::Score;
            } else {
                return Err(SYNTAX.into());
            }
            j += 1;
        }
        let reverse = direction.unwrap_or(false);
        if by == By::Auto {
            by = By::Rank;
        }
        if limit != -1 && by == By::Rank {
            return Err(
                "ERR syntax error, LIMIT is only supported in combination with either \
                BYSCORE or BYLEX"
                    .into(),
            );
        }
        if with_scores && by == By::Lex {
            return Err(
                "ERR syntax error, WITHSCORES not supported in combination with BYLEX".into(),
            );
        }
        let (mut min, mut max) = (&args[at + 1], &args[at + 2]);
        if reverse && by != By::Rank {
            std::mem::swap(&mut min, &mut max);
        }
        let range = match by {
            By::Score => Range::Score(ScoreRange::parse(min, max)?),
            By::Lex => Range::Lex(LexRange::parse(min, max)?),
            _ => Range::Rank(int(min)?, int(max)?),
        };
        Ok(Request {
            range,
            reverse,
            with_scores,
            offset,
            limit,
        })
    }

    /// The selected elements, in reply order.
    fn select<'z>(&self, zset: &'z ZSetValue) -> Vec<(&'z [u8], f64)> {
        let len = zset.len();
        let (start, end) = match &self.range {
            Range::Rank(start, stop) => {
                let (start, end) = rank_range(*start, *stop, len);
                return if self.reverse {
                    zset.tree.iter_rev_from(start).take(end - start).collect()
                } else {
                    zset.tree.iter_from(start).take(end - start).collect()
                };
            }
            Range::Score(range) => range.ranks(zset),
            Range::Lex(range) if self.reverse => range.ranks_reversed(zset),
            Range::Lex(range) => range.ranks(zset),
        };
        // Redis walks `offset` elements before checking the range; a negative offset never
        // stops walking, and a negative count never stops taking.
        if self.offset < 0 {
            return Vec::new();
        }
        let available = (end - start).saturating_sub(self.offset as usize);
        let count = if self.limit < 0 {
            available
        } else {
            available.min(self.limit as usize)
        };
        let skip = (self.offset as usize).min(end - start);
        if self.reverse {
            zset.tree
                .iter_rev_from(len - end + skip)
                .take(count)
                .collect()
        } else {
            zset.tree.iter_from(start + skip).take(count).collect()
        }
    }
}

fn range_command(ctx: &mut Ctx<'_>, args: &[Bytes], by: By, reverse: Option<bool>) -> CmdResult {
    let request = Request::parse(args, 1, false, by, reverse)?;
    let (db, out) = db_and_out(ctx);
    match read_zset(db, &args[1])? {
        Some(zset) => {
            let elements = request.select(zset);
            reply_elements(out, elements.into_iter(), request.with_scores);
        }
        None => out.array(0),
    }
    Ok(())
}

pub fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, By::Auto, None)
}

pub fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, By::Rank, Some(true))
}

pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, By::Score, Some(false))
}

pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, By::Score, Some(true))
}

pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, By::Lex, Some(false))
}

pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, By::Lex, Some(true))
}

pub fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let request = Request::parse(args, 2, true, By::Auto, None)?;
    let limits = limits(ctx);
    let db = ctx.db();
    let mut tree = ScoreTree::new();
    if let Some(zset) = read_zset(db, &args[2])? {
        for (member, score) in request.select(zset) {
            tree.insert_new(member, score);
        }
    }
    store_result(
        ctx,
        &args[1],
        ZSetValue::from_tree(tree, limits),
        "zrangestore",
    );
    Ok(())
}

pub fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let range = ScoreRange::parse(&args[2], &args[3])?;
    let (db, out) = db_and_out(ctx);
    let count = read_zset(db, &args[1])?.map_or(0, |z| {
        let (start, end) = range.ranks(z);
        end - start
    });
    out.integer(count as i64);
    Ok(())
}

pub fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let range = LexRange::parse(&args[2], &args[3])?;
    let (db, out) = db_and_out(ctx);
    let count = read_zset(db, &args[1])?.map_or(0, |z| {
        let (start, end) = range.ranks(z);
        end - start
    });
    out.integer(count as i64);
    Ok(())
}
