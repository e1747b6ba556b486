//! Parts of strings.
//!
//! - `APPEND key value` → the new length. Appending to an existing key makes it `raw`; a
//!   missing key is created as SET would.
//! - `STRLEN key` → the length, 0 for a missing key.
//! - `GETRANGE key start end` (alias `SUBSTR`) → the bytes from `start` to `end` inclusive;
//!   negative indexes count from the end; the empty string when the range is empty or the
//!   key is missing.
//! - `SETRANGE key offset value` → the new length. Overwrites from `offset`, padding with
//!   zero bytes; an empty value changes nothing (and creates no key). `ERR offset is out of
//!   range` for a negative offset.
//!
//! A result longer than `proto-max-bulk-len` is `ERR string exceeds maximum allowed size
//! (proto-max-bulk-len)`.

use bytes::Bytes;

use super::{db_and_out, max_string_len, read_string, write_string};
use crate::cmd::args::int;
use crate::cmd::errors::{CmdError, STRING_TOO_LONG};
use crate::cmd::{CmdResult, Ctx};
use crate::types::{StringValue, Value};

const OFFSET_OUT_OF_RANGE: &str = "ERR offset is out of range";

/// Refuses a string of `len + extra` bytes past the limit (or overflowing).
fn check_length(len: usize, extra: usize, max: usize) -> Result<usize, CmdError> {
    len.checked_add(extra)
        .filter(|&total| total <= max)
        .ok_or_else(|| STRING_TOO_LONG.into())
}

pub fn append(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, suffix) = (&args[1], &args[2]);
    let max = max_string_len(ctx);
    let (db, out) = db_and_out(ctx);
    let len = match write_string(db, key)? {
        Some(value) => {
            check_length(value.len(), suffix.len(), max)?;
            let bytes = value.make_raw();
            bytes.extend_from_slice(suffix);
            let len = bytes.len();
            db.dirty += 1;
            len
        }
        None => {
            db.insert(key, Value::Str(StringValue::new(suffix)), 0);
            suffix.len()
        }
    };
    out.integer(len as i64);
    ctx.notify(crate::pubsub::notify::STRING, "append", key);
    Ok(())
}

pub fn strlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let len = read_string(db, &args[1])?.map_or(0, StringValue::len);
    out.integer(len as i64);
    Ok(())
}

pub fn getrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let end = int(&args[3])?;
    let (db, out) = db_and_out(ctx);
    let bytes = read_string(db, &args[1])?.map_or(&b""[..], StringValue::as_slice);
    out.bulk(byte_range(bytes, start, end));
    Ok(())
}

/// GETRANGE's index rules: negative indexes count from the end and are clamped to the
/// string, and two negative indexes in the wrong order select nothing.
fn byte_range(bytes: &[u8], start: i64, end: i64) -> &[u8] {
    if start < 0 && end < 0 && start > end {
        return &[];
    }
    let len = bytes.len() as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 {
        (len + end).max(0)
    } else {
        end.min(len - 1)
    };
    if bytes.is_empty() || start > end {
        return &[];
    }
    &bytes[start as usize..=end as usize]
}

pub fn setrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, patch) = (&args[1], &args[3]);
    let offset = int(&args[2])?;
    let offset = usize::try_from(offset).map_err(|_| CmdError::from(OFFSET_OUT_OF_RANGE))?;
    let max = max_string_len(ctx);
    let (db, out) = db_and_out(ctx);
    let len = match write_string(db, key)? {
        Some(value) if patch.is_empty() => value.len(),
        Some(value) => {
            let end = check_length(offset, patch.len(), max)?;
            let bytes = value.make_raw();
            write_at(bytes, offset, patch, end);
            let len = bytes.len();
            db.dirty += 1;
            len
        }
        None if patch.is_empty() => 0,
        None => {
            let end = check_length(offset, patch.len(), max)?;
            let mut bytes = Vec::new();
            write_at(&mut bytes, offset, patch, end);
            db.insert(key, Value::Str(StringValue::raw(bytes)), 0);
            end
        }
    };
    out.integer(len as i64);
    if !patch.is_empty() {
        ctx.notify(crate::pubsub::notify::STRING, "setrange", key);
    }
    Ok(())
}

/// Copies `patch` to `offset`, growing `bytes` with zeros up to `end` if needed.
fn write_at(bytes: &mut Vec<u8>, offset: usize, patch: &[u8], end: usize) {
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(patch);
}
