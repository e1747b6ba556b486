//! Introspection of single keys: `OBJECT` (MEMORY USAGE, in `super::memory`, uses
//! [`memory_usage`]).
//!
//! - `OBJECT ENCODING key` → `int`, `embstr` or `raw` for strings; null if the key is missing.
//! - `OBJECT REFCOUNT key` → 2147483647 for the integers 0..9999 Redis shares, else 1; null
//!   if missing.
//! - `OBJECT IDLETIME key` → seconds since the key was last read or written (Redis's 24-bit
//!   LRU clock arithmetic); null if missing; an error under an LFU `maxmemory-policy`.
//! - `OBJECT FREQ key` → the key's logarithmic access counter under an LFU
//!   `maxmemory-policy` (see `keyspace::lfu`), else an error; null if missing.
//! - `OBJECT HELP` → the list of subcommands.
//!
//! None of these touch the key's LRU clock or the hit/miss counters.

use bytes::Bytes;
use slotproxy::resp::ReplyBuf;

use super::args::is;
use super::{unknown_subcommand, CmdResult, Ctx, Handler};
use crate::keyspace::access::idle_seconds;
use crate::keyspace::Entry;
use crate::types::Value;

pub const COMMANDS: &[(&str, Handler)] = &[("object", object)];

const LFU_NOT_SELECTED: &str = "ERR An LFU maxmemory policy is not selected, access frequency \
    not tracked. Please note that when switching between policies at runtime LRU and LFU data \
    will take some time to adjust.";

const LRU_NOT_SELECTED: &str = "ERR An LFU maxmemory policy is selected, idle time not \
    tracked. Please note that when switching between policies at runtime LRU and LFU data will \
    take some time to adjust.";

/// The refcount Redis reports for its shared objects (`OBJ_SHARED_REFCOUNT`).
const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Redis shares the integer objects 0..10000 (`OBJ_SHARED_INTEGERS`).
const SHARED_INTEGERS: i64 = 10_000;

/// The refcount OBJECT REFCOUNT and DEBUG OBJECT show for a value.
pub(super) fn refcount(value: &Value) -> i64 {
    match value {
        Value::Str(s) if s.encoding_name() == "int" => match s.as_integer() {
            Some(n) if (0..SHARED_INTEGERS).contains(&n) => SHARED_REFCOUNT,
            _ => 1,
        },
        _ => 1,
    }
}

/// A HELP reply for `container` (as the client typed it), via the one shared writer.
pub(super) fn reply_help(out: &mut ReplyBuf<'_>, container: &[u8], lines: &[&str]) {
    let container = String::from_utf8_lossy(container).to_uppercase();
    super::command::write_help(out, &container, lines);
}

const OBJECT_HELP: &[&str] = &[
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
];

fn object(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "help") {
        reply_help(&mut ctx.out, &args[0], OBJECT_HELP);
        return Ok(());
    }
    if !["encoding", "refcount", "idletime", "freq"]
        .iter()
        .any(|name| is(sub, name))
    {
        return Err(unknown_subcommand(args));
    }
    let now = ctx.now_ms();
    let db = ctx.db();
    let lfu = db.lfu;
    let Some((entry, access)) = db.peek_with_access(&args[2]) else {
        ctx.out.null();
        return Ok(());
    };
    if is(sub, "encoding") {
        let encoding = entry.value.encoding_name();
        ctx.out.bulk(encoding.as_bytes());
    } else if is(sub, "refcount") {
        let count = refcount(&entry.value);
        ctx.out.integer(count);
    } else if is(sub, "idletime") {
        if lfu.is_some() {
            return Err(LRU_NOT_SELECTED.into());
        }
        let idle = idle_seconds(access, now);
        ctx.out.integer(idle as i64);
    } else {
        let Some(lfu) = lfu else {
            return Err(LFU_NOT_SELECTED.into());
        };
        let frequency = lfu.frequency(access, now);
        ctx.out.integer(i64::from(frequency));
    }
    Ok(())
}

/// Bytes one key costs in this node (see [`Entry::memory_usage`]).
pub(super) fn memory_usage(entry: &Entry) -> usize {
    entry.memory_usage()
}
