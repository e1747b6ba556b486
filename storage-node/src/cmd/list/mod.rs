//! List commands.
//!
//! - [`push_pop`]: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN.
//! - [`range`]: LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS.
//! - [`moves`]: LMOVE RPOPLPUSH LMPOP.
//! - [`blocking`]: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP.
//!
//! A key never holds an empty list: the command that removes the last element deletes the
//! key. Every command that adds elements signals the key ready for blocked clients. Reads
//! use the read lookup (hit/miss statistics), writes the write lookup, as Redis does.

mod blocking;
mod moves;
mod push_pop;
mod range;

use bytes::Bytes;
use slotproxy::resp::ReplyBuf;

use super::args::is;
use super::errors::{CmdError, SYNTAX, WRONGTYPE};
use super::{Ctx, Handler};
use crate::keyspace::Db;
use crate::pubsub::notify;
use crate::types::{CompactBytes, ListValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("lpush", push_pop::lpush),
    ("rpush", push_pop::rpush),
    ("lpushx", push_pop::lpushx),
    ("rpushx", push_pop::rpushx),
    ("lpop", push_pop::lpop),
    ("rpop", push_pop::rpop),
    ("llen", push_pop::llen),
    ("lrange", range::lrange),
    ("lindex", range::lindex),
    ("lset", range::lset),
    ("linsert", range::linsert),
    ("lrem", range::lrem),
    ("ltrim", range::ltrim),
    ("lpos", range::lpos),
    ("lmove", moves::lmove),
    ("rpoplpush", moves::rpoplpush),
    ("lmpop", moves::lmpop),
    ("blpop", blocking::blpop),
    ("brpop", blocking::brpop),
    ("blmove", blocking::blmove),
    ("brpoplpush", blocking::brpoplpush),
    ("blmpop", blocking::blmpop),
];

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

impl End {
    /// `LEFT` or `RIGHT` (any case), else `ERR syntax error`.
    fn parse(arg: &[u8]) -> Result<End, CmdError> {
        if is(arg, "left") {
            Ok(End::Left)
        } else if is(arg, "right") {
            Ok(End::Right)
        } else {
            Err(SYNTAX.into())
        }
    }
}

fn push(list: &mut ListValue, end: End, element: &[u8]) {
    let element = CompactBytes::new(element);
    match end {
        End::Left => list.items.push_front(element),
        End::Right => list.items.push_back(element),
    }
}

fn pop(list: &mut ListValue, end: End) -> Option<CompactBytes> {
    match end {
        End::Left => list.items.pop_front(),
        End::Right => list.items.pop_back(),
    }
}

/// The client's database and the reply buffer at once.
fn db_and_out<'c, 'a>(ctx: &'c mut Ctx<'a>) -> (&'c mut Db, &'c mut ReplyBuf<'a>) {
    (ctx.keyspace.db(ctx.client.db), &mut ctx.out)
}

/// Looks a key up for reading: None if missing, WRONGTYPE if it is not a list.
fn read_list<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d ListValue>, CmdError> {
    match db.get(key).map(|entry| &entry.value) {
        None => Ok(None),
        Some(Value::List(list)) => Ok(Some(list)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Looks a key up for writing: None if missing, WRONGTYPE if it is not a list.
fn write_list<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d mut ListValue>, CmdError> {
    match db.get_mut(key).map(|entry| &mut entry.value) {
        None => Ok(None),
        Some(Value::List(list)) => Ok(Some(list)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Checks that a key is missing or a list, with a write lookup (no statistics).
fn check_list(db: &mut Db, key: &[u8]) -> Result<(), CmdError> {
    write_list(db, key).map(|_| ())
}

/// Deletes `key` if its list became empty. True if it did.
fn remove_if_empty(db: &mut Db, key: &[u8]) -> bool {
    if let Ok(Some(list)) = write_list(db, key) {
        if list.is_empty() {
            db.remove(key);
            return true;
        }
    }
    false
}

/// The keyspace event of a push at `end`.
fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// The keyspace event of a pop at `end`.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// Announces a list change (`event`), then `del` if it emptied the list, in Redis's order.
fn notify_change(ctx: &mut Ctx<'_>, event: &str, key: &[u8], deleted: bool) {
    ctx.notify(notify::LIST, event, key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

/// Pushes elements to `key`, creating the list if needed. Returns the new length.
fn push_all<'e>(
    db: &mut Db,
    key: &[u8],
    end: End,
    elements: impl IntoIterator<Item = &'e [u8]>,
) -> Result<usize, CmdError> {
    let mut added = 0;
    let len = match write_list(db, key)? {
        Some(list) => {
            for element in elements {
                push(list, end, element);
                added += 1;
            }
            list.len()
        }
        None => {
            let mut list = ListValue::new();
            for element in elements {
                push(&mut list, end, element);
                added += 1;
            }
            let len = list.len();
            if len > 0 {
                db.insert(key, Value::List(Box::new(list)), 0);
            }
            len
        }
    };
    db.dirty += added;
    Ok(len)
}

/// Pops up to `count` elements from one end of `key`'s list, deleting the key if it
/// empties (then the flag is true). The list must exist.
fn pop_many(db: &mut Db, key: &[u8], end: End, count: usize) -> (Vec<CompactBytes>, bool) {
    let mut popped = Vec::new();
    if let Ok(Some(list)) = write_list(db, key) {
        let count = count.min(list.len());
        popped.reserve(count);
        for _ in 0..count {
            if let Some(element) = pop(list, end) {
                popped.push(element);
            }
        }
    }
    db.dirty += popped.len() as u64;
    let deleted = remove_if_empty(db, key);
    (popped, deleted)
}

/// `[key, [elements...]]`, the reply of LMPOP and BLMPOP.
fn reply_key_and_elements(out: &mut ReplyBuf<'_>, key: &Bytes, elements: &[CompactBytes]) {
    out.array(2);
    out.bulk(key);
    out.array(elements.len());
    for element in elements {
        out.bulk(element);
    }
}
