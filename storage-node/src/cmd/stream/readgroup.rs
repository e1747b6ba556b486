//! Reading as a consumer of a group.
//!
//! `XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key
//! [key ...] id [id ...]` → per stream `[key, entries]` (RESP3: a map of key → entries).
//! With `>` a stream answers the entries past the group's last-delivered id, which moves
//! to the last one given; each goes into the group's PEL, owned by the consumer (not with
//! NOACK). Only streams with such entries answer; when none has any, a null array, or with
//! BLOCK the client waits for one. With an id, a stream answers the consumer's own pending
//! entries after that id (`[id, null]` for an entry deleted since), each delivered once
//! more; such a read never waits. The consumer is created by the first read that serves it.
//!
//! Errors: `NOGROUP No such key '<key>' or consumer group '<group>' in XREADGROUP with GROUP
//! option`, `ERR The $ ID is meaningless in the context of XREADGROUP: ...`, `ERR Missing
//! GROUP option for XREADGROUP`, and XREAD's. A waiting reader whose stream goes answers
//! `UNBLOCKED the stream key no longer exists`, one whose group is destroyed `NOGROUP the
//! consumer group this client was blocked on no longer exists`.
//!
//! Propagated as Redis 7.0 does: an `XCLAIM ... FORCE JUSTID LASTID <id>` per entry added to
//! the PEL, and `XGROUP SETID ... ENTRIESREAD n` after a NOACK read moved the group
//! (preceded by `XGROUP CREATECONSUMER` when that read created the consumer); reading
//! history writes nothing.

use bytes::Bytes;
use slotproxy::protocol::errors::c_string;

use super::claim::{propagate_group_position, propagate_pending};
use super::read::{parse_read, ReadArgs};
use super::{read_stream, reply_entry, reply_id, strict_id, write_stream};
use crate::cmd::errors::CmdError;
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::blocking::{TimeoutReply, Wants};
use crate::pubsub::notify;
use crate::types::stream::StreamId;
use crate::types::Value;

/// The count a woken reader without COUNT is served at most (`XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// What a stream of the command asks for: new entries (`>`) or the consumer's history
/// after an id.
#[derive(Clone, Copy)]
enum Want {
    New,
    HistoryAfter(StreamId),
}

pub fn xreadgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_read(ctx, args, true)?;
    let Some((group, _)) = parsed.group.clone() else {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    };
    // Whatever is delivered is propagated as XCLAIM / XGROUP SETID, never as the read.
    ctx.keyspace.propagation.prevent();
    if let Some(woken_by) = ctx.client.woken_by.clone() {
        return serve_woken(ctx, args, &parsed, &woken_by);
    }
    let keys = parsed.keys(args);
    let mut wants = Vec::with_capacity(keys.len());
    for (key, id_arg) in keys.iter().zip(parsed.ids(args)) {
        let has_group =
            read_stream(ctx.db(), key)?.is_some_and(|s| s.groups.contains_key(&group[..]));
        if !has_group {
            return Err(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                c_string(key),
                c_string(&group)
            )
            .into());
        }
        wants.push(match &id_arg[..] {
            b"$" => return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.".into()),
            b">" => Want::New,
            // Redis marks `>` internally as the largest id, so that id reads as `>` too.
            text => match strict_id(text)? {
                StreamId::MAX => Want::New,
                id => Want::HistoryAfter(id),
            },
        });
    }
    // Which streams answer now: history always, `>` when an entry lies past the group.
    let db = ctx.db();
    let mut served = Vec::new();
    for (key, want) in keys.iter().zip(&wants) {
        let Ok(Some(stream)) = read_stream(db, key) else {
            continue;
        };
        let ready = match want {
            Want::HistoryAfter(_) => true,
            Want::New => stream
                .groups
                .get(&group[..])
                .is_some_and(|g| stream.edge_id(false, true) > g.last_id),
        };
        if ready {
            served.push((key.clone(), *want));
        }
    }
    if served.is_empty() {
        match parsed.block_ms {
            Some(ms) if ctx.may_block() => {
                let timeout = (ms > 0).then(|| std::time::Duration::from_millis(ms));
                ctx.block_on(
                    keys.to_vec(),
                    Wants::StreamGroup,
                    timeout,
                    TimeoutReply::NullArray,
                );
            }
            _ => ctx.out.null_array(),
        }
        return Ok(());
    }
    reply_header(ctx, served.len());
    for (key, want) in served {
        serve_stream(ctx, &parsed, &key, want, parsed.limit())?;
    }
    Ok(())
}

/// The outer reply for `streams` streams: an array of pairs, or a RESP3 map.
fn reply_header(ctx: &mut Ctx<'_>, streams: usize) {
    if ctx.out.is_resp3() {
        ctx.out.map(streams);
    } else {
        ctx.out.array(streams);
    }
}

/// Answers one stream (`key`, then its entries) for the consumer, updating the group.
fn serve_stream(
    ctx: &mut Ctx<'_>,
    parsed: &ReadArgs,
    key: &Bytes,
    want: Want,
    count: usize,
) -> CmdResult {
    let Some((group_name, consumer)) = parsed.group.clone() else {
        return Ok(());
    };
    let now = ctx.now_ms();
    let resp3 = ctx.out.is_resp3();
    let db = ctx.keyspace.db(ctx.client.db);
    let Some(stream) = write_stream(db, key)? else {
        return Ok(());
    };
    let Some(group) = stream.groups.get_mut(&group_name[..]) else {
        return Ok(());
    };
    let created = group.see_consumer(&consumer, now);
    let mut propagated: Vec<Vec<Bytes>> = Vec::new();
    if created && parsed.noack {
        propagated.push(propagate_consumer(key, &group_name, &consumer));
    }
    let out = &mut ctx.out;
    if !resp3 {
        out.array(2);
    }
    out.bulk(key);
    match want {
        Want::HistoryAfter(after) => {
            let Some(group) = stream.groups.get_mut(&group_name[..]) else {
                return Ok(());
            };
            let start = after.next().unwrap_or(StreamId::MIN);
            let ids: Vec<StreamId> = group
                .consumers
                .get(&consumer[..])
                .map(|c| c.pel.range(start..).take(count).copied().collect())
                .unwrap_or_default();
            out.array(ids.len());
            for id in ids {
                let found = stream.range(id, id).next();
                match found {
                    Some(entry) => {
                        reply_entry(out, &entry);
                        if let Some(pending) = stream
                            .groups
                            .get_mut(&group_name[..])
                            .and_then(|g| g.pel.get_mut(&id))
                        {
                            pending.delivery_time = now;
                            pending.delivery_count += 1;
                        }
                    }
                    None => {
                        out.array(2);
                        reply_id(out, id);
                        out.null_array();
                    }
                }
            }
        }
        Want::New => {
            let Some(group) = stream.groups.get(&group_name[..]) else {
                return Ok(());
            };
            let start = group.last_id.next().unwrap_or(StreamId::MAX);
            let entries: Vec<_> = stream.range(start, StreamId::MAX).take(count).collect();
            // The group's position after each entry, from the stream's counters.
            let mut entries_read = group.entries_read;
            let mut positions = Vec::with_capacity(entries.len());
            for entry in &entries {
                entries_read = stream.entries_read_after(entries_read, entry.id);
                positions.push(entries_read);
            }
            let Some(group) = stream.groups.get_mut(&group_name[..]) else {
                return Ok(());
            };
            out.array(entries.len());
            for (entry, entries_read) in entries.iter().zip(positions) {
                group.last_id = entry.id;
                group.entries_read = entries_read;
                reply_entry(out, entry);
                if !parsed.noack {
                    let pending = group.deliver(entry.id, &consumer, now);
                    propagated.push(propagate_pending(
                        key,
                        &group_name,
                        &super::id_arg(entry.id),
                        pending,
                        entry.id,
                    ));
                }
            }
            if parsed.noack && !entries.is_empty() {
                propagated.push(propagate_group_position(key, &group_name, group));
            }
        }
    }
    db.dirty += 1;
    for command in propagated {
        ctx.propagate_as(command);
    }
    if created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    Ok(())
}

/// A consumer created by a NOACK read is propagated on its own (with an ack the XCLAIMs
/// create it), as Redis's `streamPropagateConsumerCreation`.
fn propagate_consumer(key: &[u8], group: &[u8], consumer: &[u8]) -> Vec<Bytes> {
    [b"XGROUP" as &[u8], b"CREATECONSUMER", key, group, consumer]
        .iter()
        .map(|arg| Bytes::copy_from_slice(arg))
        .collect()
}

/// A blocked reader run again because `key` was signalled: as Redis's
/// `serveClientsBlockedOnStreamKey`, an error if the stream or the group went, the new
/// entries for that stream alone once the stream's last id passed the group's (no entries
/// if they were deleted since), and otherwise it keeps waiting.
fn serve_woken(ctx: &mut Ctx<'_>, args: &[Bytes], parsed: &ReadArgs, key: &Bytes) -> CmdResult {
    let keys = parsed.keys(args);
    if !keys.contains(key) {
        return wait_again(ctx, keys);
    }
    let Some((group_name, _)) = &parsed.group else {
        return wait_again(ctx, keys);
    };
    let stream = match ctx.db().peek(key).map(|entry| &entry.value) {
        Some(Value::Stream(stream)) => stream,
        _ => return Err(CmdError::from("UNBLOCKED the stream key no longer exists")),
    };
    let Some(group) = stream.groups.get(&group_name[..]) else {
        return Err(
            "NOGROUP the consumer group this client was blocked on no longer exists".into(),
        );
    };
    if stream.last_id <= group.last_id {
        return wait_again(ctx, keys);
    }
    let count = if parsed.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        parsed.count
    };
    reply_header(ctx, 1);
    serve_stream(ctx, parsed, key, Want::New, count)
}

/// Keeps a woken reader waiting (its registration stays as it was).
fn wait_again(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> CmdResult {
    ctx.block_on(
        keys.to_vec(),
        Wants::StreamGroup,
        None,
        TimeoutReply::NullArray,
    );
    Ok(())
}
