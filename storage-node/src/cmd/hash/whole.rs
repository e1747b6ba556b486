//! Whole-hash reads, random fields and iteration.
//!
//! - `HKEYS key` / `HVALS key` → all fields / all values; empty array when missing.
//! - `HGETALL key` → fields and values: a map in RESP3, a flat array in RESP2.
//! - `HRANDFIELD key` → a random field, or null when missing.
//! - `HRANDFIELD key count [WITHVALUES]` → count > 0: up to count distinct fields (the whole
//!   hash, in order, when count reaches its size; otherwise a random subset in hash order);
//!   count < 0: |count| fields drawn independently (repeats possible). WITHVALUES adds each
//!   value: flat in RESP2, `[field, value]` pairs in RESP3. Empty array when missing or 0.
//!   Errors: `ERR value is out of range, value must between -9223372036854775807 and
//!   9223372036854775807`, `ERR value is out of range` (WITHVALUES with |count| > 2^62),
//!   `ERR syntax error`.
//! - `HSCAN key cursor [MATCH pattern] [COUNT count]` → `[next cursor, [field, value, ...]]`.
//!   A `listpack`-encoded hash is returned whole with cursor 0, as Redis does; a bigger one
//!   in steps of COUNT pairs, with cursors explained in `types::hash`. Options are read
//!   after the key lookup, so a missing key answers `[0, []]` even with bad options.

use bytes::Bytes;
use rand::seq::index::sample;
use rand::Rng;
use slotproxy::resp::ReplyBuf;

use super::{db_and_out, read_hash};
use crate::cmd::args::{int_in_range, is};
use crate::cmd::errors::SYNTAX;
use crate::cmd::scan::{parse_cursor, ScanOptions};
use crate::cmd::{CmdResult, Ctx};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
}

pub fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    one_part(ctx, args, Part::Fields)
}

pub fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    one_part(ctx, args, Part::Values)
}

fn one_part(ctx: &mut Ctx<'_>, args: &[Bytes], part: Part) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let Some(hash) = read_hash(db, &args[1])? else {
        out.array(0);
        return Ok(());
    };
    out.array(hash.len());
    for (field, value) in hash.iter() {
        out.bulk(if part == Part::Fields { field } else { value });
    }
    Ok(())
}

pub fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let Some(hash) = read_hash(db, &args[1])? else {
        out.map(0);
        return Ok(());
    };
    out.map(hash.len());
    for (field, value) in hash.iter() {
        out.bulk(field);
        out.bulk(value);
    }
    Ok(())
}

/// Writes one HRANDFIELD element: the field, or the field and value.
fn write_pick(out: &mut ReplyBuf<'_>, field: &[u8], value: &[u8], with_values: bool) {
    if with_values && out.is_resp3() {
        out.array(2);
    }
    out.bulk(field);
    if with_values {
        out.bulk(value);
    }
}

pub fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 2 {
        let (db, out) = db_and_out(ctx);
        match read_hash(db, &args[1])? {
            None => out.null(),
            Some(hash) => {
                let index = rand::thread_rng().gen_range(0..hash.len());
                match hash.nth(index) {
                    Some((field, _)) => out.bulk(field),
                    None => out.null(),
                }
            }
        }
        return Ok(());
    }
    let count = int_in_range(&args[2], -i64::MAX, i64::MAX)?;
    let with_values = match args.get(3) {
        None => false,
        Some(arg) if args.len() == 4 && is(arg, "withvalues") => true,
        Some(_) => return Err(SYNTAX.into()),
    };
    if with_values && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err("ERR value is out of range".into());
    }
    let (db, out) = db_and_out(ctx);
    let Some(hash) = read_hash(db, &args[1])? else {
        out.array(0);
        return Ok(());
    };
    let size = hash.len();
    let wanted = count.unsigned_abs() as usize;
    let picks_per_element = if with_values && !out.is_resp3() { 2 } else { 1 };
    let mut rng = rand::thread_rng();
    if count < 0 || wanted == 1 {
        // Independent draws. Small hashes are walked once into a table first.
        let pairs: Vec<(&[u8], &[u8])> = if hash.is_small() {
            hash.iter().collect()
        } else {
            Vec::new()
        };
        out.array(wanted * picks_per_element);
        for _ in 0..wanted {
            let index = rng.gen_range(0..size);
            let pair = if hash.is_small() {
                pairs.get(index).copied()
            } else {
                hash.nth(index)
            };
            if let Some((field, value)) = pair {
                write_pick(out, field, value, with_values);
            }
        }
        return Ok(());
    }
    if wanted >= size {
        out.array(size * picks_per_element);
        for (field, value) in hash.iter() {
            write_pick(out, field, value, with_values);
        }
        return Ok(());
    }
    let mut chosen = sample(&mut rng, size, wanted).into_vec();
    chosen.sort_unstable();
    out.array(wanted * picks_per_element);
    let mut next = chosen.iter().peekable();
    for (index, (field, value)) in hash.iter().enumerate() {
        if next.peek() == Some(&&index) {
            next.next();
            write_pick(out, field, value, with_values);
        }
    }
    Ok(())
}

pub fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = parse_cursor(&args[2])?;
    let (db, out) = db_and_out(ctx);
    let Some(hash) = read_hash(db, &args[1])? else {
        out.array(2);
        out.bulk(b"0");
        out.array(0);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..], false)?;
    let (next, pairs) = hash.scan(cursor, options.count);
    let kept: Vec<(&[u8], &[u8])> = pairs
        .into_iter()
        .filter(|(field, _)| options.matches(field))
        .collect();
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(kept.len() * 2);
    for (field, value) in kept {
        out.bulk(field);
        out.bulk(value);
    }
    Ok(())
}
