//! Reading a filter's figures.
//!
//! - `BF.INFO key` → `[Capacity, n, Size, n, Number of filters, n,
//!   Number of items inserted, n, Expansion rate, n]` (names as simple strings, an array
//!   in RESP3 too). Capacity sums the sub-filters' capacities; Size is RedisBloom's
//!   memory figure (its structures and the bit arrays); the expansion rate of a
//!   `NONSCALING` filter is null.
//! - `BF.INFO key CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION` → a one-element array with that
//!   figure; another word → `Invalid information value`.
//! - `BF.CARD key` → the number of items added (0 for a missing key).
//!
//! BF.INFO of a missing key is `ERR not found`; another type is WRONGTYPE for both.

use bytes::Bytes;

use super::{read_bloom, wrong_arity, NOT_FOUND};
use crate::cmd::{CmdResult, Ctx};
use crate::types::BloomValue;

/// One figure of BF.INFO; `None` is the null expansion of a non-scaling filter.
fn figure(bloom: &BloomValue, field: &str) -> Option<i64> {
    match field {
        "capacity" => Some(bloom.capacity() as i64),
        "size" => Some(bloom.memory_usage() as i64),
        "filters" => Some(bloom.filters.len() as i64),
        "items" => Some(bloom.size as i64),
        _ => bloom.is_scaling().then_some(bloom.growth as i64),
    }
}

const FIELDS: [(&str, &str); 5] = [
    ("Capacity", "capacity"),
    ("Size", "size"),
    ("Number of filters", "filters"),
    ("Number of items inserted", "items"),
    ("Expansion rate", "expansion"),
];

pub fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 2 && args.len() != 3 {
        return Err(wrong_arity(args));
    }
    let bloom = read_bloom(ctx.keyspace.db(ctx.client.db), &args[1])?.ok_or(NOT_FOUND)?;
    if let Some(wanted) = args.get(2) {
        let field = FIELDS
            .iter()
            .find(|(_, short)| wanted.eq_ignore_ascii_case(short.as_bytes()))
            .ok_or("Invalid information value")?;
        let value = figure(bloom, field.1);
        ctx.out.array(1);
        match value {
            Some(n) => ctx.out.integer(n),
            None => ctx.out.null(),
        }
        return Ok(());
    }
    ctx.out.array(FIELDS.len() * 2);
    for (name, short) in FIELDS {
        ctx.out.simple(name);
        match figure(bloom, short) {
            Some(n) => ctx.out.integer(n),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

pub fn card(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 2 {
        return Err(wrong_arity(args));
    }
    let items = read_bloom(ctx.keyspace.db(ctx.client.db), &args[1])?.map_or(0, |b| b.size);
    ctx.out.integer(items as i64);
    Ok(())
}
