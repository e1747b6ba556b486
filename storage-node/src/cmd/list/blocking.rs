//! Blocking pops and moves.
//!
//! - `BLPOP key [key ...] timeout` / `BRPOP ...` → `[key, element]` from the first key
//!   holding a non-empty list; otherwise the client waits until one of the keys gets
//!   elements, and gets a null array if `timeout` seconds (decimals allowed, 0 = forever)
//!   pass first.
//! - `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]` → like LMPOP, waiting
//!   like BLPOP.
//! - `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout` → like LMOVE, waiting on
//!   source; a null array on timeout (but a null bulk where it may not wait, as Redis).
//! - `BRPOPLPUSH source destination timeout` → `BLMOVE source destination RIGHT LEFT`.
//!
//! Timeout errors: `ERR timeout is not a float or out of range`, `ERR timeout is negative`.
//! Inside MULTI/EXEC or a script nothing may wait, so an empty result answers at once as a
//! timeout would.
//!
//! Waiting clients are served first come, first served per key. A waiting command is
//! registered with `Ctx::block_on` and runs again whole when a key it waits on is
//! signalled; if it still finds nothing it keeps its place (see `keyspace::blocking`).

use bytes::Bytes;

use super::moves::{
    announce_move, move_element, parse_multi_pop, pop_first_non_empty, MultiPop, PopReply,
};
use super::End;
use crate::cmd::args::timeout_seconds;
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::blocking::{TimeoutReply, Wants};

pub fn blpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    blocking_pop(ctx, args, End::Left)
}

pub fn brpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    blocking_pop(ctx, args, End::Right)
}

fn blocking_pop(ctx: &mut Ctx<'_>, args: &[Bytes], end: End) -> CmdResult {
    let last = args.len() - 1;
    let timeout = timeout_seconds(&args[last])?;
    let request = MultiPop {
        keys: &args[1..last],
        end,
        count: 1,
    };
    if !pop_first_non_empty(ctx, &request, PopReply::Flat)? {
        wait_or_answer(ctx, request.keys.to_vec(), timeout, TimeoutReply::NullArray);
    }
    Ok(())
}

pub fn blmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // The keys and options are checked before the timeout, as in Redis.
    let request = parse_multi_pop(args, 2)?;
    let timeout = timeout_seconds(&args[1])?;
    if !pop_first_non_empty(ctx, &request, PopReply::Nested)? {
        wait_or_answer(ctx, request.keys.to_vec(), timeout, TimeoutReply::NullArray);
    }
    Ok(())
}

pub fn blmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let from = End::parse(&args[3])?;
    let to = End::parse(&args[4])?;
    blocking_move(ctx, args, from, to, &args[5])
}

pub fn brpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    blocking_move(ctx, args, End::Right, End::Left, &args[3])
}

fn blocking_move(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    from: End,
    to: End,
    timeout: &[u8],
) -> CmdResult {
    let timeout = timeout_seconds(timeout)?;
    let (source, destination) = (&args[1], &args[2]);
    match move_element(ctx.db(), source, destination, from, to)? {
        Some((element, source_deleted)) => {
            ctx.signal_key_ready(destination);
            ctx.out.bulk(&element);
            announce_move(ctx, source, destination, (from, to), source_deleted);
            // Propagated as the non-blocking move (Redis's LMOVE / RPOPLPUSH), with the
            // directions as the client wrote them.
            let rewritten = if args.len() == 4 {
                vec![
                    Bytes::from_static(b"RPOPLPUSH"),
                    source.clone(),
                    destination.clone(),
                ]
            } else {
                vec![
                    Bytes::from_static(b"LMOVE"),
                    source.clone(),
                    destination.clone(),
                    args[3].clone(),
                    args[4].clone(),
                ]
            };
            ctx.propagate_as(rewritten);
        }
        None => wait_or_answer(ctx, vec![source.clone()], timeout, TimeoutReply::NullBulk),
    }
    Ok(())
}

/// Blocks on `keys`, or, where nothing may wait, answers `immediate` at once. A wait that
/// times out (or is ended by CLIENT UNBLOCK) answers a null array whatever the command, as
/// Redis's `replyToBlockedClientTimedOut` does for lists.
fn wait_or_answer(
    ctx: &mut Ctx<'_>,
    keys: Vec<Bytes>,
    timeout: Option<std::time::Duration>,
    immediate: TimeoutReply,
) {
    if ctx.may_block() {
        ctx.block_on(keys, Wants::List, timeout, TimeoutReply::NullArray);
    } else {
        match immediate {
            TimeoutReply::NullArray => ctx.out.null_array(),
            TimeoutReply::NullBulk => ctx.out.null(),
        }
    }
}
