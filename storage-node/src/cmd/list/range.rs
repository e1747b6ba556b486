//! Reading and editing by position or value.
//!
//! - `LRANGE key start stop` → the elements from start to stop inclusive; negative indexes
//!   count from the end; out-of-range indexes are clamped; an empty array when nothing is
//!   selected or the key is missing.
//! - `LINDEX key index` → the element, or null when out of range or missing.
//! - `LSET key index element` → `+OK`; `ERR no such key`, `ERR index out of range`.
//! - `LINSERT key BEFORE|AFTER pivot element` → the new length; -1 when the pivot is not
//!   found; 0 when the key is missing.
//! - `LREM key count element` → the number removed: count > 0 removes the first count
//!   occurrences from the head, count < 0 from the tail, 0 all of them.
//! - `LTRIM key start stop` → `+OK`, keeping only the range (deleting the key if it is empty).
//! - `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]` → the index of the
//!   rank-th match (negative rank: searching from the tail), or null; with COUNT an array of
//!   up to num-matches indexes (0: all). MAXLEN limits the elements compared. Errors: `ERR
//!   RANK can't be zero: ...`, `ERR COUNT can't be negative`, `ERR MAXLEN can't be
//!   negative`, `ERR syntax error`.
//!
//! Integer arguments are parsed before the key is looked up, except for LSET and LINDEX,
//! which look the key up first (as Redis does).

use bytes::Bytes;

use super::{db_and_out, notify_change, read_list, remove_if_empty, write_list};
use crate::cmd::args::{int, is, non_negative};
use crate::cmd::errors::{CmdError, NO_SUCH_KEY, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::types::CompactBytes;

const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";
const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from \
    the second ... or use negative to start from the end of the list";
const COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
const MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";

pub fn lrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let stop = int(&args[3])?;
    let (db, out) = db_and_out(ctx);
    let Some(list) = read_list(db, &args[1])? else {
        out.array(0);
        return Ok(());
    };
    match list.clamp_range(start, stop) {
        None => out.array(0),
        Some((from, to)) => {
            out.array(to - from + 1);
            for element in list.items.range(from..=to) {
                out.bulk(element);
            }
        }
    }
    Ok(())
}

pub fn lindex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let Some(list) = read_list(db, &args[1])? else {
        out.null();
        return Ok(());
    };
    let index = int(&args[2])?;
    match list.position(index).and_then(|i| list.items.get(i)) {
        Some(element) => out.bulk(element),
        None => out.null(),
    }
    Ok(())
}

pub fn lset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let db = ctx.db();
    let Some(list) = write_list(db, &args[1])? else {
        return Err(NO_SUCH_KEY.into());
    };
    let index = int(&args[2])?;
    let position = list.position(index).ok_or(INDEX_OUT_OF_RANGE)?;
    list.items[position] = CompactBytes::new(&args[3]);
    db.dirty += 1;
    ctx.out.ok();
    notify_change(ctx, "lset", &args[1], false);
    Ok(())
}

pub fn linsert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let after = if is(&args[2], "after") {
        true
    } else if is(&args[2], "before") {
        false
    } else {
        return Err(SYNTAX.into());
    };
    let db = ctx.db();
    let Some(list) = write_list(db, &args[1])? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let pivot = &args[3][..];
    let Some(found) = list.items.iter().position(|e| e.as_slice() == pivot) else {
        ctx.out.integer(-1);
        return Ok(());
    };
    let at = if after { found + 1 } else { found };
    list.items.insert(at, CompactBytes::new(&args[4]));
    let len = list.len();
    db.dirty += 1;
    ctx.out.integer(len as i64);
    notify_change(ctx, "linsert", &args[1], false);
    Ok(())
}

pub fn lrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = int(&args[2])?;
    let key = &args[1];
    let db = ctx.db();
    let Some(list) = write_list(db, key)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let element = &args[3][..];
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let mut removed = 0usize;
    if count >= 0 {
        list.items.retain(|e| {
            let remove = removed < limit && e.as_slice() == element;
            removed += remove as usize;
            !remove
        });
    } else {
        // From the tail: mark positions walking backwards, then drop them.
        let mut doomed = vec![false; list.len()];
        for (i, e) in list.items.iter().enumerate().rev() {
            if removed == limit {
                break;
            }
            if e.as_slice() == element {
                doomed[i] = true;
                removed += 1;
            }
        }
        let mut position = 0;
        list.items.retain(|_| {
            let keep = !doomed[position];
            position += 1;
            keep
        });
    }
    db.dirty += removed as u64;
    let deleted = remove_if_empty(db, key);
    ctx.out.integer(removed as i64);
    if removed > 0 {
        notify_change(ctx, "lrem", key, deleted);
    }
    Ok(())
}

pub fn ltrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let stop = int(&args[3])?;
    let key = &args[1];
    let db = ctx.db();
    if let Some(list) = write_list(db, key)? {
        match list.clamp_range(start, stop) {
            None => list.items.clear(),
            Some((from, to)) => {
                list.items.truncate(to + 1);
                list.items.drain(..from);
            }
        }
        db.dirty += 1;
        let deleted = remove_if_empty(db, key);
        notify_change(ctx, "ltrim", key, deleted);
    }
    ctx.out.ok();
    Ok(())
}

/// LPOS's options.
struct PosOptions {
    rank: i64,
    /// None: no COUNT option (reply with one index).
    count: Option<i64>,
    maxlen: i64,
}

impl PosOptions {
    fn parse(options: &[Bytes]) -> Result<PosOptions, CmdError> {
        let mut parsed = PosOptions {
            rank: 1,
            count: None,
            maxlen: 0,
        };
        let mut i = 0;
        while i < options.len() {
            let has_value = i + 1 < options.len();
            let option = &options[i];
            if is(option, "rank") && has_value {
                i += 1;
                parsed.rank = int(&options[i])?;
                if parsed.rank == 0 {
                    return Err(RANK_ZERO.into());
                }
            } else if is(option, "count") && has_value {
                i += 1;
                parsed.count = Some(non_negative(&options[i], COUNT_NEGATIVE)?);
            } else if is(option, "maxlen") && has_value {
                i += 1;
                parsed.maxlen = non_negative(&options[i], MAXLEN_NEGATIVE)?;
            } else {
                return Err(SYNTAX.into());
            }
            i += 1;
        }
        Ok(parsed)
    }
}

pub fn lpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = PosOptions::parse(&args[3..])?;
    let (db, out) = db_and_out(ctx);
    let Some(list) = read_list(db, &args[1])? else {
        match options.count {
            Some(_) => out.array(0),
            None => out.null(),
        }
        return Ok(());
    };
    // A negative rank searches from the tail. Redis negates in C, so i64::MIN stays
    // negative and then accepts the first match; wrapping arithmetic keeps that.
    let (from_tail, rank) = if options.rank < 0 {
        (true, options.rank.wrapping_neg())
    } else {
        (false, options.rank)
    };
    let element = &args[2][..];
    let len = list.len();
    let limit = if options.maxlen == 0 {
        len
    } else {
        len.min(options.maxlen as usize)
    };
    let mut found: Vec<i64> = Vec::new();
    let mut matches: i64 = 0;
    for step in 0..limit {
        let position = if from_tail { len - 1 - step } else { step };
        if list.items[position].as_slice() != element {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        found.push(position as i64);
        match options.count {
            None => break,
            Some(count) => {
                if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count {
                    break;
                }
            }
        }
    }
    match options.count {
        Some(_) => {
            out.array(found.len());
            for position in found {
                out.integer(position);
            }
        }
        None => match found.first() {
            Some(&position) => out.integer(position),
            None => out.null(),
        },
    }
    Ok(())
}
