//! Reading ranges, length, deleting.
//!
//! - `XRANGE key start end [COUNT count]` → `[[id, [field, value, ...]], ...]` from `start`
//!   up to `end`; `XREVRANGE key end start [COUNT count]` from `end` down. `-` and `+` are
//!   the smallest and largest ids, `<ms>` alone means `<ms>-0` as a start and
//!   `<ms>-18446744073709551615` as an end, `(` before an id excludes it. COUNT 0 answers a
//!   null array, a negative COUNT counts as 0. Errors: `ERR invalid start ID for the
//!   interval`, `ERR invalid end ID for the interval` (an exclusive bound past the ends).
//! - `XLEN key` → number of entries (0 for no key).
//! - `XDEL key id [id ...]` → how many of the ids were entries and are now deleted. Every id
//!   is checked before anything is deleted.

use bytes::Bytes;

use super::{
    db_and_out, parse_id, read_stream, reply_entries, strict_id, write_stream, INVALID_ID,
};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::pubsub::notify;
use crate::types::stream::{IdSyntax, StreamId};

pub fn xrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, false)
}

pub fn xrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_command(ctx, args, true)
}

/// An interval bound (`streamParseIntervalIDOrReply`): `(id` is exclusive, and then strict.
pub(super) fn interval_bound(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let syntax = IdSyntax {
            missing_seq,
            strict: true,
            auto_seq: false,
        };
        return Ok((parse_id(&arg[1..], syntax)?.id, true));
    }
    let syntax = IdSyntax {
        missing_seq,
        strict: false,
        auto_seq: false,
    };
    Ok((parse_id(arg, syntax)?.id, false))
}

fn range_command(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let (mut start, start_excluded) = interval_bound(start_arg, 0)?;
    if start_excluded {
        start = start
            .next()
            .ok_or_else(|| CmdError::from("ERR invalid start ID for the interval"))?;
    }
    let (mut end, end_excluded) = interval_bound(end_arg, u64::MAX)?;
    if end_excluded {
        end = end
            .prev()
            .ok_or_else(|| CmdError::from("ERR invalid end ID for the interval"))?;
    }
    let mut count: Option<u64> = None;
    let mut j = 4;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            count = Some(int(&args[j + 1])?.max(0) as u64);
            j += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    let (db, out) = db_and_out(ctx);
    let Some(stream) = read_stream(db, &args[1])? else {
        out.array(0);
        return Ok(());
    };
    let limit = match count {
        Some(0) => {
            out.null_array();
            return Ok(());
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => usize::MAX,
    };
    if rev {
        reply_entries(out, stream.range_rev(start, end).take(limit));
    } else {
        reply_entries(out, stream.range(start, end).take(limit));
    }
    Ok(())
}

pub fn xlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let len = read_stream(db, &args[1])?.map_or(0, |s| s.length);
    out.integer(len as i64);
    Ok(())
}

pub fn xdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let db = ctx.db();
    let Some(stream) = write_stream(db, key)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let ids = args[2..]
        .iter()
        .map(|arg| strict_id(arg))
        .collect::<Result<Vec<StreamId>, CmdError>>()
        .map_err(|_| CmdError::from(INVALID_ID))?;
    let mut deleted: u64 = 0;
    let mut first_deleted = false;
    for id in ids {
        if stream.delete(id) {
            if id == stream.first_id {
                first_deleted = true;
            }
            if id > stream.max_deleted_id {
                stream.max_deleted_id = id;
            }
            deleted += 1;
        }
    }
    if deleted > 0 {
        if stream.length == 0 {
            stream.first_id = StreamId::MIN;
        } else if first_deleted {
            stream.first_id = stream.edge_id(true, true);
        }
        db.dirty += deleted;
    }
    ctx.out.integer(deleted as i64);
    if deleted > 0 {
        ctx.notify(notify::STREAM, "xdel", key);
    }
    Ok(())
}
