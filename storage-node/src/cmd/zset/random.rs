//! Random members and scanning.
//!
//! - `ZRANDMEMBER key` → a random member, or null.
//! - `ZRANDMEMBER key count [WITHSCORES]` → an array: `count` > 0 gives distinct members
//!   (the whole set, highest first, when `count` ≥ its size), `count` < 0 gives |count|
//!   members that may repeat. With WITHSCORES, scores follow their members (pairs in
//!   RESP3), and |count| must be at most 2^62-1 (`ERR value is out of range`).
//! - `ZSCAN key cursor [MATCH pattern] [COUNT count]` → `[cursor, [member, score, ...]]`
//!   with scores as bulk strings in both protocols. A `listpack` set comes back whole
//!   (cursor 0) as in Redis; a `skiplist` is walked with this node's own cursors, like
//!   SSCAN over a hashtable set.

use bytes::Bytes;
use rand::seq::index::sample;
use rand::Rng;
use slotproxy::resp::format_double;

use super::{db_and_out, read_zset};
use crate::cmd::args::{int_in_range, is};
use crate::cmd::errors::{SYNTAX, WRONGTYPE};
use crate::cmd::scan::{parse_cursor, ScanOptions};
use crate::cmd::{CmdResult, Ctx};
use crate::types::{Value, ZSetValue};

pub fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut rng = rand::thread_rng();
    if args.len() == 2 {
        let (db, out) = db_and_out(ctx);
        let zset = read_zset(db, &args[1])?.filter(|z| !z.is_empty());
        match zset.and_then(|z| z.tree.select(rng.gen_range(0..z.len()))) {
            Some((member, _)) => out.bulk(member),
            None => out.null(),
        }
        return Ok(());
    }
    let count = int_in_range(&args[2], -i64::MAX, i64::MAX)?;
    let with_scores = match args.get(3) {
        _ if args.len() > 4 => return Err(SYNTAX.into()),
        Some(arg) if is(arg, "withscores") => true,
        Some(_) => return Err(SYNTAX.into()),
        None => false,
    };
    if with_scores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err("ERR value is out of range".into());
    }
    let (db, out) = db_and_out(ctx);
    let Some(zset) = read_zset(db, &args[1])? else {
        out.array(0);
        return Ok(());
    };
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    let pairs = with_scores && out.is_resp3();
    let emit = |out: &mut slotproxy::resp::ReplyBuf<'_>, zset: &ZSetValue, rank: usize| {
        if let Some((member, score)) = zset.tree.select(rank) {
            if pairs {
                out.array(2);
            }
            out.bulk(member);
            if with_scores {
                out.double(score);
            }
        }
    };
    let header = |n: usize| if with_scores && !pairs { n * 2 } else { n };
    let len = zset.len();
    if count < 0 || count == 1 {
        let n = count.unsigned_abs() as usize;
        out.array(header(n));
        for _ in 0..n {
            emit(out, zset, rng.gen_range(0..len));
        }
    } else if count as usize >= len {
        // Redis walks the whole set from the highest element down here.
        out.array(header(len));
        for rank in (0..len).rev() {
            emit(out, zset, rank);
        }
    } else {
        let n = count as usize;
        out.array(header(n));
        for rank in sample(&mut rng, len, n) {
            emit(out, zset, rank);
        }
    }
    Ok(())
}

pub fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = parse_cursor(&args[2])?;
    let (db, out) = db_and_out(ctx);
    let zset = match db.get(&args[1]).map(|e| &e.value) {
        None => {
            out.array(2);
            out.bulk(b"0");
            out.array(0);
            return Ok(());
        }
        Some(Value::ZSet(z)) => z,
        Some(_) => return Err(WRONGTYPE.into()),
    };
    let options = ScanOptions::parse(&args[3..], false)?;
    let (next, elements) = if zset.is_listpack() {
        (0, zset.tree.iter().collect())
    } else {
        scan_tree(zset, cursor, options.count)
    };
    let elements: Vec<(&[u8], f64)> = elements
        .into_iter()
        .filter(|(m, _)| options.matches(m))
        .collect();
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(elements.len() * 2);
    for (member, score) in elements {
        out.bulk(member);
        out.bulk(format_double(score).as_bytes());
    }
    Ok(())
}

/// One ZSCAN step over a big sorted set: the same hash-threshold cursor as SSCAN uses.
fn scan_tree(zset: &ZSetValue, cursor: u64, count: usize) -> (u64, Vec<(&[u8], f64)>) {
    let tree = &zset.tree;
    let mut pending: Vec<(u64, (&[u8], f64))> = tree
        .iter()
        .map(|e| (tree.member_hash(e.0), e))
        .filter(|(h, _)| *h >= cursor)
        .collect();
    let piece = count.max(tree.len() / 64).max(1);
    if pending.len() <= piece {
        return (0, pending.into_iter().map(|(_, e)| e).collect());
    }
    pending.select_nth_unstable_by_key(piece - 1, |(h, _)| *h);
    let cutoff = pending[piece - 1].0;
    let chosen: Vec<(&[u8], f64)> = pending
        .iter()
        .filter(|(h, _)| *h <= cutoff)
        .map(|(_, e)| *e)
        .collect();
    if chosen.len() == pending.len() {
        return (0, chosen);
    }
    (cutoff.checked_add(1).unwrap_or(0), chosen)
}
