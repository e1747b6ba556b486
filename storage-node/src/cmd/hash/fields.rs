//! Single fields.
//!
//! - `HSET key field value [field value ...]` → the number of fields added (not updated).
//! - `HMSET key field value [field value ...]` → `+OK`.
//! - `HSETNX key field value` → 1 if set, 0 if the field existed.
//! - `HGET key field` → the value, or null.
//! - `HMGET key field [field ...]` → an array of values, null for each missing one.
//! - `HDEL key field [field ...]` → the number removed; the key goes when it empties.
//! - `HEXISTS key field` → 1 or 0.
//! - `HLEN key` → the number of fields, 0 when missing.
//! - `HSTRLEN key field` → the value's length, 0 when missing.
//!
//! An odd number of field/value arguments is `ERR wrong number of arguments for '<cmd>'
//! command`; WRONGTYPE when the key holds another type.

use bytes::Bytes;

use super::{db_and_out, hash_or_create, limits, read_hash, remove_if_empty, write_hash};
use crate::cmd::errors::wrong_arity;
use crate::cmd::{CmdResult, Ctx};
use crate::pubsub::notify;

pub fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let added = set_pairs(ctx, args, "hset")?;
    ctx.out.integer(added as i64);
    Ok(())
}

pub fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    set_pairs(ctx, args, "hmset")?;
    ctx.out.ok();
    Ok(())
}

fn set_pairs(ctx: &mut Ctx<'_>, args: &[Bytes], name: &str) -> Result<usize, crate::cmd::CmdError> {
    if args.len() % 2 == 1 {
        return Err(wrong_arity(name));
    }
    let limits = limits(ctx);
    let db = ctx.db();
    let hash = hash_or_create(db, &args[1])?;
    let strings: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    hash.convert_for(&strings, &limits);
    let mut added = 0;
    for pair in args[2..].chunks(2) {
        added += hash.set(&pair[0], &pair[1], &limits) as usize;
    }
    db.dirty += (args.len() / 2 - 1) as u64;
    // Announced even when every value was already there, as Redis does.
    ctx.notify(notify::HASH, "hset", &args[1]);
    Ok(added)
}

pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let limits = limits(ctx);
    let db = ctx.db();
    let hash = hash_or_create(db, &args[1])?;
    let added = !hash.contains(&args[2]);
    if added {
        hash.set(&args[2], &args[3], &limits);
        db.dirty += 1;
        ctx.notify(notify::HASH, "hset", &args[1]);
    }
    ctx.out.integer(added as i64);
    Ok(())
}

pub fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    match read_hash(db, &args[1])?.and_then(|h| h.get(&args[2])) {
        Some(value) => out.bulk(value),
        None => out.null(),
    }
    Ok(())
}

pub fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let hash = read_hash(db, &args[1])?;
    out.array(args.len() - 2);
    for field in &args[2..] {
        match hash.and_then(|h| h.get(field)) {
            Some(value) => out.bulk(value),
            None => out.null(),
        }
    }
    Ok(())
}

pub fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let db = ctx.db();
    let mut removed = 0;
    if let Some(hash) = write_hash(db, key)? {
        for field in &args[2..] {
            removed += hash.remove(field) as i64;
            if hash.is_empty() {
                break;
            }
        }
        db.dirty += removed as u64;
        let deleted = remove_if_empty(db, key);
        if removed > 0 {
            ctx.notify(notify::HASH, "hdel", key);
        }
        if deleted {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    ctx.out.integer(removed);
    Ok(())
}

pub fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let exists = read_hash(ctx.db(), &args[1])?.is_some_and(|h| h.contains(&args[2]));
    ctx.out.integer(exists as i64);
    Ok(())
}

pub fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let len = read_hash(ctx.db(), &args[1])?.map_or(0, |h| h.len());
    ctx.out.integer(len as i64);
    Ok(())
}

pub fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let len = read_hash(ctx.db(), &args[1])?
        .and_then(|h| h.get(&args[2]))
        .map_or(0, <[u8]>::len);
    ctx.out.integer(len as i64);
    Ok(())
}
