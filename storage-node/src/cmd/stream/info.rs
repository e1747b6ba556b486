//! `XINFO STREAM key` → a map (a flat array in RESP2): `length`, `radix-tree-keys`,
//! `radix-tree-nodes`, `last-generated-id`, `max-deleted-entry-id`, `entries-added`,
//! `recorded-first-entry-id`, `groups`, `first-entry`, `last-entry` (an entry or null).
//! `XINFO HELP` lists the subcommands.
//!
//! `XINFO STREAM key FULL [COUNT n]` → the same first seven fields, then `entries` (the first
//! `n`, default 10, 0 for all) and `groups`: per group `name`, `last-delivered-id`,
//! `entries-read`, `lag` (null when unknown), `pel-count`, `pending` (the first `n`:
//! `[id, consumer, delivery time, deliveries]`) and `consumers` (`name`, `seen-time`,
//! `pel-count`, `pending`: the first `n` `[id, delivery time, deliveries]`).
//!
//! `XINFO GROUPS key` → per group a map: `name`, `consumers`, `pending`,
//! `last-delivered-id`, `entries-read` (null when unknown), `lag` (null when unknown).
//!
//! `XINFO CONSUMERS key group` → per consumer a map: `name`, `pending`, `idle` (ms since it
//! was last seen), as Redis 7.0 has them. Error: `NOGROUP No such consumer group '<group>'
//! for key name '<key>'`.

use bytes::Bytes;
use slotproxy::resp::ReplyBuf;

use slotproxy::protocol::errors::subcommand_syntax_error;

use super::xgroup::no_group;
use super::{db_and_out, read_stream, reply_entries, reply_entry, reply_id};
use crate::cmd::args::{int, is};
use crate::cmd::command::write_help;
use crate::cmd::errors::{CmdError, NO_SUCH_KEY};
use crate::cmd::{unknown_subcommand, CmdResult, Ctx};
use crate::types::stream::group::{ConsumerGroup, ENTRIES_READ_UNKNOWN};
use crate::types::stream::StreamId;
use crate::types::StreamValue;

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
    let groups = is(sub, "groups");
    let consumers = is(sub, "consumers");
    if !is(sub, "stream") && !groups && !consumers {
        return Err(unknown_subcommand(args));
    }
    let now = ctx.now_ms();
    // The key is looked up before the options are read, as in Redis.
    let (db, out) = db_and_out(ctx);
    let stream = read_stream(db, &args[2])?.ok_or_else(|| CmdError::from(NO_SUCH_KEY))?;
    if groups {
        reply_groups(out, stream);
        return Ok(());
    }
    if consumers {
        let group = stream
            .groups
            .get(&args[3][..])
            .ok_or_else(|| no_group(&args[3], &args[2]))?;
        out.array(group.consumers.len());
        for (name, consumer) in &group.consumers {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"pending");
            out.integer(consumer.pel.len() as i64);
            out.bulk(b"idle");
            out.integer(
                (now as i64)
                    .saturating_sub(consumer.seen_time as i64)
                    .max(0),
            );
        }
        return Ok(());
    }
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
        // FULL: the first `count` entries (all for 0), then the groups.
        let count = usize::try_from(count)
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or(usize::MAX);
        out.bulk(b"entries");
        reply_entries(out, stream.range(StreamId::MIN, StreamId::MAX).take(count));
        out.bulk(b"groups");
        reply_groups_full(out, stream, count);
        return Ok(());
    }
    out.bulk(b"groups");
    out.integer(stream.groups.len() as i64);
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

/// XINFO GROUPS.
fn reply_groups(out: &mut ReplyBuf<'_>, stream: &StreamValue) {
    out.array(stream.groups.len());
    for (name, group) in &stream.groups {
        out.map(6);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"consumers");
        out.integer(group.consumers.len() as i64);
        out.bulk(b"pending");
        out.integer(group.pel.len() as i64);
        out.bulk(b"last-delivered-id");
        reply_id(out, group.last_id);
        reply_position(out, stream, group);
    }
}

/// A group's `entries-read` and `lag`, each null when unknown.
fn reply_position(out: &mut ReplyBuf<'_>, stream: &StreamValue, group: &ConsumerGroup) {
    out.bulk(b"entries-read");
    if group.entries_read == ENTRIES_READ_UNKNOWN {
        out.null();
    } else {
        out.integer(group.entries_read);
    }
    out.bulk(b"lag");
    match stream.group_lag(group) {
        Some(lag) => out.integer(lag),
        None => out.null(),
    }
}

/// XINFO STREAM FULL's `groups`, each PEL shown up to `count` entries (`usize::MAX`: all).
fn reply_groups_full(out: &mut ReplyBuf<'_>, stream: &StreamValue, count: usize) {
    out.array(stream.groups.len());
    for (name, group) in &stream.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        reply_id(out, group.last_id);
        reply_position(out, stream, group);
        out.bulk(b"pel-count");
        out.integer(group.pel.len() as i64);
        out.bulk(b"pending");
        let shown = group.pel.len().min(count);
        out.array(shown);
        for (id, pending) in group.pel.iter().take(shown) {
            out.array(4);
            reply_id(out, *id);
            out.bulk(&pending.consumer);
            out.integer(pending.delivery_time as i64);
            out.integer(pending.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(group.consumers.len());
        for (name, consumer) in &group.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"seen-time");
            out.integer(consumer.seen_time as i64);
            out.bulk(b"pel-count");
            out.integer(consumer.pel.len() as i64);
            out.bulk(b"pending");
            let shown = consumer.pel.len().min(count);
            out.array(shown);
            for id in consumer.pel.iter().take(shown) {
                let (time, deliveries) = group
                    .pel
                    .get(id)
                    .map_or((0, 0), |p| (p.delivery_time, p.delivery_count));
                out.array(3);
                reply_id(out, *id);
                out.integer(time as i64);
                out.integer(deliveries as i64);
            }
        }
    }
}
