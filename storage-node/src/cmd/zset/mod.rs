//! Sorted set commands, one submodule per theme:
//!
//! - `add`: ZADD, ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK.
//! - `bounds`: score and lex range arguments, and how a range maps to ranks.
//! - `range`: ZRANGE and its legacy forms, ZRANGESTORE, ZCOUNT, ZLEXCOUNT.
//! - `remove`: ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.
//! - `pop`: ZPOPMIN, ZPOPMAX, ZMPOP and the blocking BZPOPMIN, BZPOPMAX, BZMPOP.
//! - `algebra`: ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD.
//! - `random`: ZRANDMEMBER, ZSCAN.
//!
//! An emptied sorted set is deleted. Commands that add members signal blocked clients.

mod add;
mod algebra;
pub mod bounds;
mod pop;
mod random;
mod range;
mod remove;

/// GEOADD runs ZADD itself, as Redis's `geoaddCommand` does.
pub(super) use add::zadd_scored;

use slotproxy::resp::ReplyBuf;

use super::errors::{CmdError, WRONGTYPE};
use super::{Ctx, Handler};
use crate::keyspace::Db;
use crate::pubsub::notify;
use crate::types::zset::ZSetLimits;
use crate::types::{Value, ZSetValue};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("zadd", add::zadd),
    ("zincrby", add::zincrby),
    ("zrem", add::zrem),
    ("zcard", add::zcard),
    ("zscore", add::zscore),
    ("zmscore", add::zmscore),
    ("zrank", add::zrank),
    ("zrevrank", add::zrevrank),
    ("zrange", range::zrange),
    ("zrangestore", range::zrangestore),
    ("zrevrange", range::zrevrange),
    ("zrangebyscore", range::zrangebyscore),
    ("zrevrangebyscore", range::zrevrangebyscore),
    ("zrangebylex", range::zrangebylex),
    ("zrevrangebylex", range::zrevrangebylex),
    ("zcount", range::zcount),
    ("zlexcount", range::zlexcount),
    ("zremrangebyrank", remove::zremrangebyrank),
    ("zremrangebyscore", remove::zremrangebyscore),
    ("zremrangebylex", remove::zremrangebylex),
    ("zpopmin", pop::zpopmin),
    ("zpopmax", pop::zpopmax),
    ("zmpop", pop::zmpop),
    ("bzpopmin", pop::bzpopmin),
    ("bzpopmax", pop::bzpopmax),
    ("bzmpop", pop::bzmpop),
    ("zunion", algebra::zunion),
    ("zinter", algebra::zinter),
    ("zdiff", algebra::zdiff),
    ("zunionstore", algebra::zunionstore),
    ("zinterstore", algebra::zinterstore),
    ("zdiffstore", algebra::zdiffstore),
    ("zintercard", algebra::zintercard),
    ("zrandmember", random::zrandmember),
    ("zscan", random::zscan),
];

/// The client's database and the reply buffer at once.
pub(super) fn db_and_out<'c, 'a>(ctx: &'c mut Ctx<'a>) -> (&'c mut Db, &'c mut ReplyBuf<'a>) {
    (ctx.keyspace.db(ctx.client.db), &mut ctx.out)
}

/// Looks a sorted set up for reading: None if missing, WRONGTYPE if another type.
pub(super) fn read_zset<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d ZSetValue>, CmdError> {
    match db.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(z)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Looks a sorted set up for writing: None if missing, WRONGTYPE if another type.
pub(super) fn write_zset<'d>(
    db: &'d mut Db,
    key: &[u8],
) -> Result<Option<&'d mut ZSetValue>, CmdError> {
    match db.get_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(z)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// The `zset-max-listpack-*` settings.
pub(super) fn limits(ctx: &Ctx<'_>) -> ZSetLimits {
    ctx.shared.config().zset_limits()
}

/// Deletes `key` if its sorted set became empty.
pub(super) fn delete_if_empty(db: &mut Db, key: &[u8]) -> bool {
    if matches!(db.peek(key).map(|e| &e.value), Some(Value::ZSet(z)) if z.is_empty()) {
        db.remove(key);
        return true;
    }
    false
}

/// Announces a sorted set change (`event`), then `del` if it emptied the set, in Redis's
/// order.
pub(super) fn notify_change(ctx: &mut Ctx<'_>, event: &str, key: &[u8], deleted: bool) {
    ctx.notify(notify::ZSET, event, key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

/// Stores a computed sorted set at `destination` (replacing it and its TTL) and announces
/// `event`, or deletes `destination` when the result is empty (announcing `del` if it
/// existed); replies with the result's size.
pub(super) fn store_result(ctx: &mut Ctx<'_>, destination: &[u8], result: ZSetValue, event: &str) {
    let len = result.len();
    let db = ctx.db();
    if len == 0 {
        let existed = db.remove(destination).is_some();
        ctx.out.integer(0);
        if existed {
            ctx.notify(notify::GENERIC, "del", destination);
        }
    } else {
        db.insert(destination, Value::ZSet(Box::new(result)), 0);
        ctx.signal_key_ready(destination);
        ctx.out.integer(len as i64);
        ctx.notify(notify::ZSET, event, destination);
    }
}

/// Writes elements as ZRANGE does: members, or members and scores (flat in RESP2, pairs in
/// RESP3).
pub(super) fn reply_elements<'m>(
    out: &mut ReplyBuf<'_>,
    elements: impl ExactSizeIterator<Item = (&'m [u8], f64)>,
    with_scores: bool,
) {
    let len = elements.len();
    let pairs = with_scores && out.is_resp3();
    out.array(if with_scores && !pairs { len * 2 } else { len });
    for (member, score) in elements {
        if pairs {
            out.array(2);
        }
        out.bulk(member);
        if with_scores {
            out.double(score);
        }
    }
}
