//! Reading and writing whole string values.
//!
//! - `GET key` → the value, or null.
//! - `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]` →
//!   `+OK`, or null when NX / XX stopped the write. With `GET`: the old value (or null)
//!   instead, whether or not the write happened; WRONGTYPE (and no write) if the old value
//!   is not a string. Without `KEEPTTL` the key's previous expiry is dropped. An expire time
//!   in the past is accepted and the key expires at once.
//! - `SETNX key value` → `1` if the key was set, `0` if it existed.
//! - `SETEX key seconds value` / `PSETEX key ms value` → `+OK`.
//! - `GETSET key value` → the old value or null; the new value has no expiry.
//! - `GETDEL key` → the value or null; the key is deleted.
//! - `GETEX key [EX s | PX ms | EXAT unix-s | PXAT unix-ms | PERSIST]` → the value or null;
//!   sets or removes the expiry. An `EXAT` / `PXAT` time already past deletes the key.
//!
//! Bad expire times: `ERR invalid expire time in '<command>' command`. Every command
//! answers WRONGTYPE when the key holds another type (SET without GET overwrites it).

use bytes::Bytes;

use super::expiry::{Command, Expire, Options};
use super::{db_and_out, read_string};
use crate::cmd::{CmdError, CmdResult, Ctx};
use crate::types::{StringValue, Value};

pub fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    match read_string(db, &args[1])? {
        Some(value) => out.bulk(value.as_slice()),
        None => out.null(),
    }
    Ok(())
}

pub fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = Options::parse(&args[3..], Command::Set)?;
    let deadline = deadline(ctx, options.expire, "set")?;
    let written = store(ctx, &args[1], &args[2], &options, deadline)?;
    let given_pxat = options.expire.is_some_and(|e| e.absolute && e.unit_ms == 1);
    if written && !given_pxat {
        propagate_with_pxat(ctx, args, deadline);
    }
    if !options.get {
        if written {
            ctx.out.ok();
        } else {
            ctx.out.null();
        }
    }
    Ok(())
}

pub fn setnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = Options {
        nx: true,
        ..Options::default()
    };
    let written = store(ctx, &args[1], &args[2], &options, None)?;
    ctx.out.integer(i64::from(written));
    Ok(())
}

pub fn setex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    set_with_expire(ctx, args, 1000, "setex")
}

pub fn psetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    set_with_expire(ctx, args, 1, "psetex")
}

/// SETEX / PSETEX: `key time value`.
fn set_with_expire(ctx: &mut Ctx<'_>, args: &[Bytes], unit_ms: i64, name: &str) -> CmdResult {
    let deadline = deadline(ctx, Some(Expire::relative(&args[2], unit_ms)), name)?;
    store(ctx, &args[1], &args[3], &Options::default(), deadline)?;
    propagate_with_pxat(
        ctx,
        &[args[0].clone(), args[1].clone(), args[3].clone()],
        deadline,
    );
    ctx.out.ok();
    Ok(())
}

/// A SET with a relative (or seconds) expiry is propagated as `SET key value PXAT ms`, so a
/// replay later sets the same instant (Redis's `setGenericCommand`). `args` starts with
/// `name key value`.
fn propagate_with_pxat(ctx: &mut Ctx<'_>, args: &[Bytes], deadline: Option<u64>) {
    if let Some(at) = deadline {
        ctx.propagate_as(vec![
            Bytes::from_static(b"SET"),
            args[1].clone(),
            args[2].clone(),
            Bytes::from_static(b"PXAT"),
            Bytes::from(at.to_string()),
        ]);
    }
}

pub fn getset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = Options {
        get: true,
        ..Options::default()
    };
    store(ctx, &args[1], &args[2], &options, None)?;
    Ok(())
}

pub fn getdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    match read_string(db, &args[1])? {
        Some(value) => out.bulk(value.as_slice()),
        None => {
            out.null();
            return Ok(());
        }
    }
    db.remove(&args[1]);
    ctx.notify(crate::pubsub::notify::GENERIC, "del", &args[1]);
    Ok(())
}

pub fn getex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = Options::parse(&args[2..], Command::GetEx)?;
    let now = ctx.now_ms();
    let key = &args[1];
    let removes_past = crate::replication::replica::removes_past_expiry(ctx.shared);
    let (db, out) = db_and_out(ctx);
    let Some(value) = read_string(db, key)? else {
        out.null();
        return Ok(());
    };
    // Redis checks the expire time only once it knows the key is a string.
    let deadline = options
        .expire
        .map(|expire| expire.deadline(now, "getex"))
        .transpose()?;
    out.bulk(value.as_slice());
    match (options.expire, deadline) {
        (Some(expire), Some(at)) if expire.absolute && at <= now && removes_past => {
            db.remove(key);
            ctx.notify(crate::pubsub::notify::GENERIC, "del", key);
            ctx.propagate_as_expired(key.clone());
        }
        (_, Some(at)) => {
            db.set_expiry(key, at);
            ctx.notify(crate::pubsub::notify::GENERIC, "expire", key);
            let at = Bytes::from(at.to_string());
            ctx.propagate_as(vec![Bytes::from_static(b"PEXPIREAT"), key.clone(), at]);
        }
        _ if options.persist && db.peek(key).is_some_and(|entry| entry.has_expiry()) => {
            db.set_expiry(key, 0);
            ctx.notify(crate::pubsub::notify::GENERIC, "persist", key);
            ctx.propagate_as(vec![Bytes::from_static(b"PERSIST"), key.clone()]);
        }
        _ => {}
    }
    Ok(())
}

/// The absolute expiry of an optional expire option.
fn deadline(
    ctx: &Ctx<'_>,
    expire: Option<Expire<'_>>,
    name: &str,
) -> Result<Option<u64>, CmdError> {
    expire
        .map(|expire| expire.deadline(ctx.now_ms(), name))
        .transpose()
}

/// SET's core, shared by SETNX, SETEX, PSETEX and GETSET. With `options.get` it replies the
/// old value itself; otherwise the caller replies. Returns whether the value was written.
fn store(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    options: &Options<'_>,
    deadline: Option<u64>,
) -> Result<bool, CmdError> {
    let (db, out) = db_and_out(ctx);
    if options.get {
        match read_string(db, key)? {
            Some(old) => out.bulk(old.as_slice()),
            None => out.null(),
        }
    }
    // A plain SET needs nothing of the old value: skip the look-up (insert replaces it).
    let needs_old = options.nx || options.xx || options.keep_ttl;
    let old_expiry = if needs_old {
        db.get_mut(key).map(|entry| entry.expire_at_ms())
    } else {
        None
    };
    let found = old_expiry.is_some();
    if (options.nx && found) || (options.xx && !found) {
        return Ok(false);
    }
    let expire_at_ms = match deadline {
        Some(at) => at,
        None if options.keep_ttl => old_expiry.unwrap_or(0),
        None => 0,
    };
    db.insert(key, Value::Str(StringValue::new(value)), expire_at_ms);
    ctx.notify(crate::pubsub::notify::STRING, "set", key);
    if deadline.is_some() {
        ctx.notify(crate::pubsub::notify::GENERIC, "expire", key);
    }
    Ok(true)
}
