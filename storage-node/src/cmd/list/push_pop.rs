//! Pushing, popping and the length.
//!
//! - `LPUSH key element [element ...]` / `RPUSH ...` → the list's length after the push;
//!   elements are pushed one by one, so `LPUSH k a b c` gives `c b a`. Creates the list.
//! - `LPUSHX key element [element ...]` / `RPUSHX ...` → the same, but only onto an
//!   existing list; 0 (and nothing created) when the key is missing.
//! - `LPOP key [count]` / `RPOP key [count]` → without count: the element, or null. With
//!   count: an array of up to count elements, an empty array for count 0, and a null array
//!   when the key is missing. `ERR value is out of range, must be positive` for a negative
//!   or non-integer count.
//! - `LLEN key` → the length, 0 when missing.
//!
//! WRONGTYPE when the key holds another type.

use bytes::Bytes;

use super::{
    db_and_out, notify_change, pop_event, pop_many, push_all, push_event, read_list, write_list,
    End,
};
use crate::cmd::args::non_negative;
use crate::cmd::errors::wrong_arity;
use crate::cmd::{CmdResult, Ctx};

const COUNT_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

pub fn lpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_command(ctx, args, End::Left, false)
}

pub fn rpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_command(ctx, args, End::Right, false)
}

pub fn lpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_command(ctx, args, End::Left, true)
}

pub fn rpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_command(ctx, args, End::Right, true)
}

fn push_command(ctx: &mut Ctx<'_>, args: &[Bytes], end: End, only_existing: bool) -> CmdResult {
    let key = &args[1];
    let db = ctx.db();
    if only_existing && write_list(db, key)?.is_none() {
        ctx.out.integer(0);
        return Ok(());
    }
    let len = push_all(db, key, end, args[2..].iter().map(|a| &a[..]))?;
    ctx.signal_key_ready(key);
    ctx.notify(crate::pubsub::notify::LIST, push_event(end), key);
    ctx.out.integer(len as i64);
    Ok(())
}

pub fn lpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    pop_command(ctx, args, End::Left)
}

pub fn rpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    pop_command(ctx, args, End::Right)
}

fn pop_command(ctx: &mut Ctx<'_>, args: &[Bytes], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(wrong_arity(if end == End::Left { "lpop" } else { "rpop" }));
    }
    let count = match args.get(2) {
        Some(arg) => Some(non_negative(arg, COUNT_NOT_POSITIVE)? as usize),
        None => None,
    };
    let key = &args[1];
    let (db, out) = db_and_out(ctx);
    if write_list(db, key)?.is_none() {
        match count {
            Some(_) => out.null_array(),
            None => out.null(),
        }
        return Ok(());
    }
    let (popped, deleted) = pop_many(db, key, end, count.unwrap_or(1));
    match count {
        None => match popped.first() {
            Some(element) => out.bulk(element),
            None => out.null(),
        },
        Some(_) => {
            out.array(popped.len());
            for element in &popped {
                out.bulk(element);
            }
        }
    }
    // LPOP key 0 changes nothing and announces nothing.
    if !popped.is_empty() {
        notify_change(ctx, pop_event(end), key, deleted);
    }
    Ok(())
}

pub fn llen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let len = read_list(ctx.db(), &args[1])?.map_or(0, |list| list.len());
    ctx.out.integer(len as i64);
    Ok(())
}
