//! Stream commands.
//!
//! - [`add`]: XADD XTRIM, and the MAXLEN / MINID trimming options they share.
//! - [`range`]: XRANGE XREVRANGE XLEN XDEL.
//! - [`read`]: XREAD, blocking with BLOCK.
//! - [`setid`]: XSETID, which sets the last id and the counters.
//! - [`info`]: XINFO STREAM, GROUPS, CONSUMERS.
//! - [`xgroup`]: XGROUP CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER.
//! - [`readgroup`]: XREADGROUP, blocking with BLOCK.
//! - [`pending`]: XACK XPENDING.
//! - [`claim`]: XCLAIM XAUTOCLAIM.
//!
//! A stream key stays when its last entry goes (unlike lists). Every command that adds
//! entries signals the key ready for blocked XREAD / XREADGROUP clients.

mod add;
mod claim;
mod info;
mod pending;
mod range;
mod read;
mod readgroup;
mod setid;
mod xgroup;

use bytes::Bytes;
use slotproxy::resp::ReplyBuf;

use super::errors::{CmdError, WRONGTYPE};
use super::{Ctx, Handler};
use crate::keyspace::Db;
use crate::types::stream::{Entry, IdSyntax, IdText, ParsedId, StreamId, StreamLimits};
use crate::types::{StreamValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("xadd", add::xadd),
    ("xtrim", add::xtrim),
    ("xrange", range::xrange),
    ("xrevrange", range::xrevrange),
    ("xlen", range::xlen),
    ("xdel", range::xdel),
    ("xread", read::xread),
    ("xsetid", setid::xsetid),
    ("xinfo", info::xinfo),
    ("xgroup", xgroup::xgroup),
    ("xreadgroup", readgroup::xreadgroup),
    ("xack", pending::xack),
    ("xpending", pending::xpending),
    ("xclaim", claim::xclaim),
    ("xautoclaim", claim::xautoclaim),
];

pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// Ids as most arguments take them: `-` and `+` refused, `<ms>` means `<ms>-0`.
const STRICT: IdSyntax = IdSyntax {
    missing_seq: 0,
    strict: true,
    auto_seq: false,
};

/// A strict id argument (`streamParseStrictIDOrReply`).
fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    crate::types::stream::id::parse(arg, STRICT)
        .map(|p| p.id)
        .ok_or_else(|| INVALID_ID.into())
}

/// An id argument with the given syntax.
fn parse_id(arg: &[u8], syntax: IdSyntax) -> Result<ParsedId, CmdError> {
    crate::types::stream::id::parse(arg, syntax).ok_or_else(|| INVALID_ID.into())
}

/// The node limits from `stream-node-max-bytes` / `stream-node-max-entries`.
fn limits(ctx: &Ctx<'_>) -> StreamLimits {
    ctx.shared.config().stream_limits()
}

/// Looks a key up for reading: None if missing, WRONGTYPE if it is not a stream.
fn read_stream<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d StreamValue>, CmdError> {
    match db.get(key).map(|entry| &entry.value) {
        None => Ok(None),
        Some(Value::Stream(stream)) => Ok(Some(stream)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// Looks a key up for writing: None if missing, WRONGTYPE if it is not a stream.
fn write_stream<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d mut StreamValue>, CmdError> {
    match db.get_mut(key).map(|entry| &mut entry.value) {
        None => Ok(None),
        Some(Value::Stream(stream)) => Ok(Some(stream)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// The client's database and the reply buffer at once.
fn db_and_out<'c, 'a>(ctx: &'c mut Ctx<'a>) -> (&'c mut Db, &'c mut ReplyBuf<'a>) {
    (ctx.keyspace.db(ctx.client.db), &mut ctx.out)
}

/// An id as a bulk string.
fn reply_id(out: &mut ReplyBuf<'_>, id: StreamId) {
    out.bulk(IdText::new(id).as_bytes());
}

/// One entry: `[id, [field, value, ...]]`.
fn reply_entry(out: &mut ReplyBuf<'_>, entry: &Entry) {
    out.array(2);
    reply_id(out, entry.id);
    out.array(entry.fields.len());
    for element in entry.fields.iter() {
        out.bulk(element.as_slice());
    }
}

/// Entries as an array.
fn reply_entries(out: &mut ReplyBuf<'_>, entries: impl Iterator<Item = Entry>) {
    let entries: Vec<Entry> = entries.collect();
    out.array(entries.len());
    for entry in &entries {
        reply_entry(out, entry);
    }
}

/// An id as the argument Redis propagates.
fn id_arg(id: StreamId) -> Bytes {
    Bytes::copy_from_slice(IdText::new(id).as_bytes())
}
