//! Testing items; a missing key holds nothing.
//!
//! - `BF.EXISTS key item` → 1 if the item may have been added, 0 if it surely was not.
//! - `BF.MEXISTS key item [item ...]` → an array of those.
//!
//! Like RedisBloom, a key of another type reads as a missing filter (all zeros), not
//! WRONGTYPE: it only distinguishes "a filter" from "anything else" here.

use bytes::Bytes;

use super::wrong_arity;
use crate::cmd::{CmdResult, Ctx};
use crate::types::Value;

pub fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 3 {
        return Err(wrong_arity(args));
    }
    let found = check(ctx, &args[1], &args[2..]);
    ctx.out.integer(found[0] as i64);
    Ok(())
}

pub fn mexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() < 3 {
        return Err(wrong_arity(args));
    }
    let found = check(ctx, &args[1], &args[2..]);
    ctx.out.array(found.len());
    for f in found {
        ctx.out.integer(f as i64);
    }
    Ok(())
}

fn check(ctx: &mut Ctx<'_>, key: &[u8], items: &[Bytes]) -> Vec<bool> {
    match ctx.db().get(key).map(|e| &e.value) {
        Some(Value::Bloom(bloom)) => items.iter().map(|i| bloom.contains(i)).collect(),
        _ => vec![false; items.len()],
    }
}
