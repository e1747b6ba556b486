//! Set commands, one submodule per theme:
//!
//! - `basic`: SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SMOVE, SSCAN.
//! - `random`: SPOP, SRANDMEMBER.
//! - `algebra`: SINTER, SINTERCARD, SUNION, SDIFF, SINTERSTORE, SUNIONSTORE, SDIFFSTORE.
//!
//! A set emptied by a command is deleted. Members come back in Redis's order while the set
//! is an `intset` (ascending); a `hashtable` set's order is this node's own, as it is
//! Redis's dict order there.

mod algebra;
mod basic;
mod random;

use slotproxy::resp::ReplyBuf;

use super::errors::{CmdError, WRONGTYPE};
use super::{Ctx, Handler};
use crate::keyspace::Db;
use crate::pubsub::notify;
use crate::types::{SetValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("sadd", basic::sadd),
    ("srem", basic::srem),
    ("scard", basic::scard),
    ("sismember", basic::sismember),
    ("smismember", basic::smismember),
    ("smembers", basic::smembers),
    ("smove", basic::smove),
    ("sscan", basic::sscan),
    ("spop", random::spop),
    ("srandmember", random::srandmember),
    ("sinter", algebra::sinter),
    ("sintercard", algebra::sintercard),
    ("sunion", algebra::sunion),
    ("sdiff", algebra::sdiff),
    ("sinterstore", algebra::sinterstore),
    ("sunionstore", algebra::sunionstore),
    ("sdiffstore", algebra::sdiffstore),
];

/// The client's database and the reply buffer at once.
pub(super) fn db_and_out<'c, 'a>(ctx: &'c mut Ctx<'a>) -> (&'c mut Db, &'c mut ReplyBuf<'a>) {
    (ctx.keyspace.db(ctx.client.db), &mut ctx.out)
}

/// Looks a set up for reading: None if missing, WRONGTYPE if another type.
pub(super) fn read_set<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d SetValue>, CmdError> {
    match db.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Set(s)) => Ok(Some(s)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Looks a set up for writing: None if missing, WRONGTYPE if another type.
pub(super) fn write_set<'d>(
    db: &'d mut Db,
    key: &[u8],
) -> Result<Option<&'d mut SetValue>, CmdError> {
    match db.get_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::Set(s)) => Ok(Some(s)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// `set-max-intset-entries`.
pub(super) fn max_intset(ctx: &Ctx<'_>) -> usize {
    ctx.shared.config().set_max_intset_entries
}

/// Deletes `key` if its set became empty. True if it did.
pub(super) fn delete_if_empty(db: &mut Db, key: &[u8]) -> bool {
    if matches!(db.peek(key).map(|e| &e.value), Some(Value::Set(s)) if s.is_empty()) {
        db.remove(key);
        return true;
    }
    false
}

/// Announces a set change (`event`), then `del` if it emptied the set, in Redis's order.
pub(super) fn notify_change(ctx: &mut Ctx<'_>, event: &str, key: &[u8], deleted: bool) {
    ctx.notify(notify::SET, event, key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

/// Writes members as a set reply (an array in RESP2).
pub(super) fn reply_set(out: &mut ReplyBuf<'_>, set: &SetValue) {
    out.set(set.len());
    set.for_each(|m| out.bulk(m));
}
