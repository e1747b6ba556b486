//! Moving elements between lists, and popping from the first non-empty of several.
//!
//! - `LMOVE source destination LEFT|RIGHT LEFT|RIGHT` → the element moved from one end of
//!   source to one end of destination (created if missing), or null when source is missing.
//!   Source and destination may be the same list (a rotation). WRONGTYPE if either is not
//!   a list (destination checked only when source has an element).
//! - `RPOPLPUSH source destination` → `LMOVE source destination RIGHT LEFT`.
//! - `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]` → `[key, [elements]]` from the
//!   first key holding a non-empty list, up to count elements (default 1); a null array
//!   when none does. Errors: `ERR numkeys should be greater than 0`, `ERR count should be
//!   greater than 0`, `ERR syntax error`; WRONGTYPE for a non-list met before a list.

use bytes::Bytes;

use super::{
    check_list, db_and_out, notify_change, pop, pop_event, pop_many, push_all, push_event,
    reply_key_and_elements, write_list, End,
};
use crate::cmd::args::{int_in_range_or, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::Db;
use crate::types::CompactBytes;

const NUMKEYS: &str = "ERR numkeys should be greater than 0";
const COUNT: &str = "ERR count should be greater than 0";

pub fn lmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let from = End::parse(&args[3])?;
    let to = End::parse(&args[4])?;
    move_command(ctx, &args[1], &args[2], from, to)
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    move_command(ctx, &args[1], &args[2], End::Right, End::Left)
}

fn move_command(
    ctx: &mut Ctx<'_>,
    source: &Bytes,
    destination: &Bytes,
    from: End,
    to: End,
) -> CmdResult {
    match move_element(ctx.db(), source, destination, from, to)? {
        Some((element, source_deleted)) => {
            ctx.signal_key_ready(destination);
            ctx.out.bulk(&element);
            announce_move(ctx, source, destination, (from, to), source_deleted);
        }
        None => ctx.out.null(),
    }
    Ok(())
}

/// The events of a move, in Redis's order: the push on the destination, the pop on the
/// source, then `del` if the source emptied.
pub(super) fn announce_move(
    ctx: &mut Ctx<'_>,
    source: &[u8],
    destination: &[u8],
    (from, to): (End, End),
    source_deleted: bool,
) {
    ctx.notify(crate::pubsub::notify::LIST, push_event(to), destination);
    notify_change(ctx, pop_event(from), source, source_deleted);
}

/// Moves one element, as LMOVE does, and tells whether the source was deleted (emptied).
/// None when the source is missing.
pub(super) fn move_element(
    db: &mut Db,
    source: &[u8],
    destination: &[u8],
    from: End,
    to: End,
) -> Result<Option<(CompactBytes, bool)>, CmdError> {
    if write_list(db, source)?.is_none() {
        return Ok(None);
    }
    check_list(db, destination)?;
    if source == destination {
        // A rotation: the list never empties.
        let Some(list) = write_list(db, source)? else {
            return Ok(None);
        };
        let Some(element) = pop(list, from) else {
            return Ok(None);
        };
        super::push(list, to, &element);
        db.dirty += 2;
        return Ok(Some((element, false)));
    }
    let (mut popped, source_deleted) = pop_many(db, source, from, 1);
    let Some(element) = popped.pop() else {
        return Ok(None);
    };
    push_all(db, destination, to, [element.as_slice()])?;
    Ok(Some((element, source_deleted)))
}

/// The parsed arguments of LMPOP / BLMPOP after the numkeys position.
pub(super) struct MultiPop<'a> {
    pub keys: &'a [Bytes],
    pub end: End,
    pub count: usize,
}

/// Parses `numkeys key [key ...] LEFT|RIGHT [COUNT count]` starting at `args[at]`.
pub(super) fn parse_multi_pop(args: &[Bytes], at: usize) -> Result<MultiPop<'_>, CmdError> {
    let numkeys = int_in_range_or(&args[at], 1, i64::MAX, NUMKEYS)? as usize;
    let end_at = numkeys
        .checked_add(at + 1)
        .filter(|&i| i < args.len())
        .ok_or(CmdError::from(SYNTAX))?;
    let end = End::parse(&args[end_at])?;
    let mut count = None;
    let mut i = end_at + 1;
    while i < args.len() {
        if count.is_none() && is(&args[i], "count") && i + 1 < args.len() {
            i += 1;
            count = Some(int_in_range_or(&args[i], 1, i64::MAX, COUNT)? as usize);
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    Ok(MultiPop {
        keys: &args[at + 1..end_at],
        end,
        count: count.unwrap_or(1),
    })
}

/// How a multi-key pop replies.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PopReply {
    /// `[key, [elements]]` (LMPOP, BLMPOP).
    Nested,
    /// `[key, element]` (BLPOP, BRPOP).
    Flat,
}

/// Pops from the first non-empty list and replies. Returns false (and writes nothing)
/// when every key is missing.
pub(super) fn pop_first_non_empty(
    ctx: &mut Ctx<'_>,
    request: &MultiPop<'_>,
    reply: PopReply,
) -> Result<bool, CmdError> {
    let (db, out) = db_and_out(ctx);
    for key in request.keys {
        if write_list(db, key)?.is_none() {
            continue;
        }
        let (popped, deleted) = pop_many(db, key, request.end, request.count);
        match reply {
            PopReply::Nested => reply_key_and_elements(out, key, &popped),
            PopReply::Flat => {
                out.array(2);
                out.bulk(key);
                match popped.first() {
                    Some(element) => out.bulk(element),
                    None => out.null(),
                }
            }
        }
        notify_change(ctx, pop_event(request.end), key, deleted);
        // Propagated in the non-blocking, one-key form (Redis 7.0's LPOP/RPOP
        // [count]), whichever key and however many the command found.
        let pop = match request.end {
            End::Left => &b"LPOP"[..],
            End::Right => &b"RPOP"[..],
        };
        let mut rewritten = vec![Bytes::from_static(pop), key.clone()];
        if reply == PopReply::Nested {
            rewritten.push(Bytes::from(popped.len().to_string()));
        }
        ctx.propagate_as(rewritten);
        return Ok(true);
    }
    Ok(false)
}

pub fn lmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let request = parse_multi_pop(args, 1)?;
    if !pop_first_non_empty(ctx, &request, PopReply::Nested)? {
        ctx.out.null_array();
    }
    Ok(())
}
