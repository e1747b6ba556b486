//! Hash commands.
//!
//! - [`fields`]: HSET HMSET HSETNX HGET HMGET HDEL HEXISTS HLEN HSTRLEN.
//! - [`counters`]: HINCRBY HINCRBYFLOAT.
//! - [`whole`]: HKEYS HVALS HGETALL HRANDFIELD HSCAN.
//!
//! A key never holds an empty hash: HDEL of the last field deletes the key. Replies list
//! pairs in the hash's order: insertion order while it is `listpack`-encoded (as Redis),
//! this node's own order once it is `hashtable`-encoded (Redis's dict order cannot be
//! reproduced). Encoding thresholds come from `hash-max-listpack-entries` and
//! `hash-max-listpack-value` (see `types::hash`).

mod counters;
mod fields;
mod whole;

use slotproxy::resp::ReplyBuf;

use super::errors::{CmdError, WRONGTYPE};
use super::{Ctx, Handler};
use crate::keyspace::Db;
use crate::types::{HashLimits, HashValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("hset", fields::hset),
    ("hmset", fields::hmset),
    ("hsetnx", fields::hsetnx),
    ("hget", fields::hget),
    ("hmget", fields::hmget),
    ("hdel", fields::hdel),
    ("hexists", fields::hexists),
    ("hlen", fields::hlen),
    ("hstrlen", fields::hstrlen),
    ("hincrby", counters::hincrby),
    ("hincrbyfloat", counters::hincrbyfloat),
    ("hkeys", whole::hkeys),
    ("hvals", whole::hvals),
    ("hgetall", whole::hgetall),
    ("hrandfield", whole::hrandfield),
    ("hscan", whole::hscan),
];

/// The client's database and the reply buffer at once.
fn db_and_out<'c, 'a>(ctx: &'c mut Ctx<'a>) -> (&'c mut Db, &'c mut ReplyBuf<'a>) {
    (ctx.keyspace.db(ctx.client.db), &mut ctx.out)
}

fn limits(ctx: &Ctx<'_>) -> HashLimits {
    ctx.shared.config().hash_limits()
}

/// Looks a key up for reading: None if missing, WRONGTYPE if it is not a hash.
fn read_hash<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d HashValue>, CmdError> {
    match db.get(key).map(|entry| &entry.value) {
        None => Ok(None),
        Some(Value::Hash(hash)) => Ok(Some(hash)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Looks a key up for writing: None if missing, WRONGTYPE if it is not a hash.
fn write_hash<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d mut HashValue>, CmdError> {
    match db.get_mut(key).map(|entry| &mut entry.value) {
        None => Ok(None),
        Some(Value::Hash(hash)) => Ok(Some(hash)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// The hash at `key` for writing, created empty if missing (the caller adds a field before
/// the command ends, so no empty hash stays behind).
fn hash_or_create<'d>(db: &'d mut Db, key: &[u8]) -> Result<&'d mut HashValue, CmdError> {
    if write_hash(db, key)?.is_none() {
        db.insert(key, Value::Hash(Box::default()), 0);
    }
    write_hash(db, key)?.ok_or_else(|| "ERR internal error: hash vanished".into())
}

/// Deletes `key` if its hash became empty (also undoes a [`hash_or_create`] whose write
/// failed).
fn remove_if_empty(db: &mut Db, key: &[u8]) -> bool {
    if let Ok(Some(hash)) = write_hash(db, key) {
        if hash.is_empty() {
            db.remove(key);
            return true;
        }
    }
    false
}
