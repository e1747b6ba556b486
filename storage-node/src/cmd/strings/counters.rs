//! Strings used as numbers. A missing key counts as 0; the key keeps its expiry.
//!
//! - `INCR key` / `DECR key` / `INCRBY key n` / `DECRBY key n` → the new value as an
//!   integer. `ERR value is not an integer or out of range` if the value (or `n`) is not a
//!   64-bit integer in canonical form; `ERR increment or decrement would overflow`;
//!   `DECRBY key -9223372036854775808` is `ERR decrement would overflow`.
//! - `INCRBYFLOAT key n` → the new value as a bulk string, computed in 80-bit precision and
//!   written like Redis (`"%.17Lf"` without trailing zeros), which is also the text stored.
//!   `ERR value is not a valid float`; `ERR increment would produce NaN or Infinity`.

use bytes::Bytes;

use super::{db_and_out, write_string};
use crate::cmd::args::int;
use crate::cmd::errors::{NOT_FLOAT, NOT_INTEGER, OVERFLOW};
use crate::cmd::{CmdResult, Ctx};
use crate::types::long_double::{self, LongDouble, Parsed};
use crate::types::{StringValue, Value};

const DECREMENT_OVERFLOW: &str = "ERR decrement would overflow";
const NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";

pub fn incr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    add_integer(ctx, &args[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    add_integer(ctx, &args[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let delta = int(&args[2])?;
    add_integer(ctx, &args[1], delta)
}

pub fn decrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let delta = int(&args[2])?;
    let negated = delta.checked_neg().ok_or(DECREMENT_OVERFLOW)?;
    add_integer(ctx, &args[1], negated)
}

fn add_integer(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let sum = match write_string(db, key)? {
        Some(value) => {
            let current = value.as_integer().ok_or(NOT_INTEGER)?;
            let sum = current.checked_add(delta).ok_or(OVERFLOW)?;
            *value = StringValue::from_integer(sum);
            db.dirty += 1;
            sum
        }
        None => {
            db.insert(key, Value::Str(StringValue::from_integer(delta)), 0);
            delta
        }
    };
    out.integer(sum);
    ctx.notify(crate::pubsub::notify::STRING, "incrby", key);
    Ok(())
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let (db, out) = db_and_out(ctx);
    let stored = write_string(db, key)?;
    let current = match &stored {
        Some(value) => long_double::parse(value.as_slice()).ok_or(NOT_FLOAT)?,
        None => Parsed::Finite(LongDouble::ZERO),
    };
    let increment = long_double::parse(&args[2]).ok_or(NOT_FLOAT)?;
    let (Parsed::Finite(current), Parsed::Finite(increment)) = (current, increment) else {
        return Err(NAN_OR_INFINITY.into());
    };
    let sum = current.checked_add(increment).ok_or(NAN_OR_INFINITY)?;
    let text = sum.to_human_string();
    let new_value = StringValue::plain(text.as_bytes());
    match stored {
        Some(value) => {
            *value = new_value;
            db.dirty += 1;
        }
        None => {
            db.insert(key, Value::Str(new_value), 0);
        }
    }
    out.bulk(text.as_bytes());
    ctx.notify(crate::pubsub::notify::STRING, "incrbyfloat", key);
    // The result, not the increment: float formatting must not differ on replay.
    ctx.propagate_as(vec![
        Bytes::from_static(b"SET"),
        key.clone(),
        Bytes::from(text),
        Bytes::from_static(b"KEEPTTL"),
    ]);
    Ok(())
}
