//! String commands, one submodule per theme:
//!
//! - `get_set`: GET, SET, SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX.
//! - `multi`: MGET, MSET, MSETNX.
//! - `counters`: INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT.
//! - `ranges`: APPEND, STRLEN, GETRANGE, SUBSTR, SETRANGE.
//! - `lcs`: LCS.
//!
//! `expiry` reads the SET / GETEX options shared by several of them.

mod counters;
mod expiry;
mod get_set;
mod lcs;
mod multi;
mod ranges;

use slotproxy::resp::ReplyBuf;

use super::errors::{CmdError, WRONGTYPE};
use super::{Ctx, Handler};
use crate::keyspace::Db;
use crate::types::{StringValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("get", get_set::get),
    ("set", get_set::set),
    ("setnx", get_set::setnx),
    ("setex", get_set::setex),
    ("psetex", get_set::psetex),
    ("getset", get_set::getset),
    ("getdel", get_set::getdel),
    ("getex", get_set::getex),
    ("mget", multi::mget),
    ("mset", multi::mset),
    ("msetnx", multi::msetnx),
    ("incr", counters::incr),
    ("decr", counters::decr),
    ("incrby", counters::incrby),
    ("decrby", counters::decrby),
    ("incrbyfloat", counters::incrbyfloat),
    ("append", ranges::append),
    ("strlen", ranges::strlen),
    ("getrange", ranges::getrange),
    ("substr", ranges::getrange),
    ("setrange", ranges::setrange),
    ("lcs", lcs::lcs),
];

/// The client's database and the reply buffer at once, so that a stored value can be
/// written to the reply without copying it first.
fn db_and_out<'c, 'a>(ctx: &'c mut Ctx<'a>) -> (&'c mut Db, &'c mut ReplyBuf<'a>) {
    (ctx.keyspace.db(ctx.client.db), &mut ctx.out)
}

/// Looks a key up for reading (hit/miss statistics, LRU): None if it is missing,
/// WRONGTYPE if it holds another type.
fn read_string<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d StringValue>, CmdError> {
    match db.get(key).map(|entry| &entry.value) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        #[allow(unreachable_patterns)]
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Looks a key up for writing: None if it is missing, WRONGTYPE if it holds another type.
fn write_string<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d mut StringValue>, CmdError> {
    match db.get_mut(key).map(|entry| &mut entry.value) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        #[allow(unreachable_patterns)]
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// The largest string a command may build, `proto-max-bulk-len`.
fn max_string_len(ctx: &Ctx<'_>) -> usize {
    ctx.shared.config().proto_max_bulk_len
}
