//! `XINFO STREAM key` → a map (a flat array in RESP2): `length`, `radix-tree-keys`,
//! `radix-tree-nodes`, `last-generated-id`, `max-deleted-entry-id`, `entries-added`,
//! `recorded-first-entry-id`, `groups`, `first-entry`, `last-entry` (an entry or null).
//! `XINFO HELP` lists the subcommands.
//!
//! `XINFO STREAM key FULL [COUNT n]` → the same first seven fields, then `entries` (the first
//! `n`, default 10, 0 for all) and `groups` (empty until consumer groups exist).
//!
//! Not yet: `XINFO GROUPS`, `XINFO CONSUMERS` (they come with consumer groups); they answer
//! Redis's unknown-subcommand error meanwhile.

use bytes::Bytes;

use slotproxy::protocol::errors::subcommand_syntax_error;

use super::{db_and_out, read_stream, reply_entries, reply_entry, reply_id};
use crate::cmd::args::{int, is};
use crate::cmd::command::write_help;
use crate::cmd::errors::{CmdError, NO_SUCH_KEY};
use crate::cmd::{unknown_subcommand, CmdResult, Ctx};
use crate::types::stream::StreamId;

const HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

pub fn xinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "help") {
        write_help(&mut ctx.out, "XINFO", HELP);
        return Ok(());
    }
    if !is(sub, "stream") {
        return Err(unknown_subcommand(args));
    }
    // The key is looked up before the options are read, as in Redis.
    let (db, out) = db_and_out(ctx);
    let stream = read_stream(db, &args[2])?.ok_or_else(|| CmdError::from(NO_SUCH_KEY))?;
    let full = match args.len() {
        3 => None,
        4 if is(&args[3], "full") => Some(10),
        6 if is(&args[3], "full") && is(&args[4], "count") => {
            let n = int(&args[5])?;
            Some(if n < 0 { 10 } else { n as u64 })
        }
        _ => return Err(subcommand_syntax_error(args).into()),
    };
    out.map(if full.is_some() { 9 } else { 10 });
    out.bulk(b"length");
    out.integer(stream.length as i64);
    out.bulk(b"radix-tree-keys");
    out.integer(stream.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.integer(stream.radix_tree_nodes() as i64);
    out.bulk(b"last-generated-id");
    reply_id(out, stream.last_id);
    out.bulk(b"max-deleted-entry-id");
    reply_id(out, stream.max_deleted_id);
    out.bulk(b"entries-added");
    out.integer(stream.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    reply_id(out, stream.first_id);
    if let Some(count) = full {
        // FULL: the first `count` entries (all for 0), then the groups (none yet).
        let count = usize::try_from(count)
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or(usize::MAX);
        out.bulk(b"entries");
        reply_entries(out, stream.range(StreamId::MIN, StreamId::MAX).take(count));
        out.bulk(b"groups");
        out.array(0);
        return Ok(());
    }
    out.bulk(b"groups");
    out.integer(0);
    out.bulk(b"first-entry");
    match stream.range(StreamId::MIN, StreamId::MAX).next() {
        Some(entry) => reply_entry(out, &entry),
        None => out.null(),
    }
    out.bulk(b"last-entry");
    match stream.range_rev(StreamId::MIN, StreamId::MAX).next() {
        Some(entry) => reply_entry(out, &entry),
        None => out.null(),
    }
    Ok(())
}
