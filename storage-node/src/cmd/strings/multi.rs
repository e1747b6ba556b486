//! Several keys at once.
//!
//! - `MGET key [key ...]` → an array with each value, or null for a missing key or a key of
//!   another type (MGET never answers WRONGTYPE).
//! - `MSET key value [key value ...]` → `+OK`; every key loses its expiry.
//! - `MSETNX key value [key value ...]` → `1` if all keys were set, `0` (and nothing set) if
//!   any of them exists.
//!
//! A key without its value is `ERR wrong number of arguments for 'mset' command` (or
//! `'msetnx'`).

use bytes::Bytes;

use super::db_and_out;
use crate::cmd::errors::wrong_arity;
use crate::cmd::{CmdResult, Ctx};
use crate::types::{StringValue, Value};

pub fn mget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let keys = &args[1..];
    let (db, out) = db_and_out(ctx);
    out.array(keys.len());
    for key in keys {
        match db.get(key).map(|entry| &entry.value) {
            Some(Value::Str(value)) => out.bulk(value.as_slice()),
            #[allow(unreachable_patterns)]
            Some(_) | None => out.null(),
        }
    }
    Ok(())
}

pub fn mset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    set_pairs(ctx, args, "mset")?;
    ctx.out.ok();
    Ok(())
}

pub fn msetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let pairs = &args[1..];
    if !pairs.len().is_multiple_of(2) {
        return Err(wrong_arity("msetnx"));
    }
    let db = ctx.db();
    let any_exists = pairs.chunks(2).any(|pair| db.get_mut(&pair[0]).is_some());
    if !any_exists {
        set_pairs(ctx, args, "msetnx")?;
    }
    ctx.out.integer(i64::from(!any_exists));
    Ok(())
}

/// Stores every `key value` pair of `args[1..]`, in order (a repeated key keeps its last
/// value).
fn set_pairs(ctx: &mut Ctx<'_>, args: &[Bytes], name: &str) -> CmdResult {
    let pairs = &args[1..];
    if !pairs.len().is_multiple_of(2) {
        return Err(wrong_arity(name));
    }
    for pair in pairs.chunks(2) {
        ctx.db()
            .insert(&pair[0], Value::Str(StringValue::new(&pair[1])), 0);
        ctx.notify(crate::pubsub::notify::STRING, "set", &pair[0]);
    }
    Ok(())
}
