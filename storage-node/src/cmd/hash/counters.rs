//! Counters inside hashes.
//!
//! - `HINCRBY key field increment` → the new value; a missing field counts as 0. Errors:
//!   `ERR value is not an integer or out of range` (increment), `ERR hash value is not an
//!   integer` (stored value), `ERR increment or decrement would overflow`.
//! - `HINCRBYFLOAT key field increment` → the new value as a bulk string, computed in 80-bit
//!   long double and printed as Redis prints it (see `types::long_double`). Errors: `ERR
//!   value is not a valid float`, `ERR value is NaN or Infinity` (increment), `ERR hash
//!   value is not a float` (stored value), `ERR increment would produce NaN or Infinity`.

use bytes::Bytes;

use super::{hash_or_create, limits, remove_if_empty};
use crate::cmd::args::int;
use crate::cmd::errors::{CmdError, NOT_FLOAT, OVERFLOW};
use crate::cmd::{CmdResult, Ctx};
use crate::types::long_double::{self, LongDouble, Parsed};

const NOT_AN_INTEGER: &str = "ERR hash value is not an integer";
const NOT_A_FLOAT: &str = "ERR hash value is not a float";
const INCREMENT_NAN_OR_INFINITY: &str = "ERR value is NaN or Infinity";
const RESULT_NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";

/// Runs `update` on the field's current value (None when missing) and stores what it
/// returns. A failed update leaves no empty hash behind.
fn update_field(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    update: impl FnOnce(Option<&[u8]>) -> Result<Vec<u8>, CmdError>,
) -> Result<Vec<u8>, CmdError> {
    let limits = limits(ctx);
    let (key, field) = (&args[1], &args[2]);
    let db = ctx.db();
    let hash = hash_or_create(db, key)?;
    match update(hash.get(field)) {
        Ok(new_value) => {
            hash.set(field, &new_value, &limits);
            db.dirty += 1;
            Ok(new_value)
        }
        Err(e) => {
            remove_if_empty(db, key);
            Err(e)
        }
    }
}

pub fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let increment = int(&args[3])?;
    let mut result = 0;
    update_field(ctx, args, |current| {
        let current = match current {
            Some(bytes) => slotproxy::numbers::parse_i64(bytes).ok_or(NOT_AN_INTEGER)?,
            None => 0,
        };
        result = current.checked_add(increment).ok_or(OVERFLOW)?;
        Ok(result.to_string().into_bytes())
    })?;
    ctx.out.integer(result);
    ctx.notify(crate::pubsub::notify::HASH, "hincrby", &args[1]);
    Ok(())
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Parsed::Finite(increment) = long_double::parse(&args[3]).ok_or(NOT_FLOAT)? else {
        return Err(INCREMENT_NAN_OR_INFINITY.into());
    };
    let text = update_field(ctx, args, |current| {
        let current = match current {
            Some(bytes) => long_double::parse(bytes).ok_or(NOT_A_FLOAT)?,
            None => Parsed::Finite(LongDouble::ZERO),
        };
        let Parsed::Finite(current) = current else {
            return Err(RESULT_NAN_OR_INFINITY.into());
        };
        let sum = current
            .checked_add(increment)
            .ok_or(RESULT_NAN_OR_INFINITY)?;
        Ok(sum.to_human_string().into_bytes())
    })?;
    ctx.out.bulk(&text);
    ctx.notify(crate::pubsub::notify::HASH, "hincrbyfloat", &args[1]);
    ctx.propagate_as(vec![
        Bytes::from_static(b"HSET"),
        args[1].clone(),
        args[2].clone(),
        Bytes::from(text),
    ]);
    Ok(())
}
