//! Taking over pending entries.
//!
//! - `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms]
//!   [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]` → the claimed entries (only their ids
//!   with JUSTID). An id is claimed if it is pending and idle at least `min-idle-time` ms
//!   (FORCE: also if it is not pending but is an entry). Its delivery time becomes now (or
//!   as IDLE / TIME say; a time in the future or before 1970 counts as now), its count goes
//!   up by one (not with JUSTID; RETRYCOUNT sets it). A pending id whose entry was deleted
//!   leaves the PEL. LASTID moves the group's last-delivered id forward.
//! - `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]` → `[cursor,
//!   claimed entries, deleted ids]`: claims up to COUNT (default 100) pending entries from
//!   `start` on idle long enough, looking at no more than ten times as many; pending ids
//!   whose entry was deleted leave the PEL and are listed third. The cursor is the next
//!   pending id to look at, 0-0 at the end.
//!
//! Errors: `NOGROUP No such key '<key>' or consumer group '<group>'`, `ERR Invalid
//! min-idle-time argument for XCLAIM` (and for XAUTOCLAIM), `ERR Invalid IDLE option
//! argument for XCLAIM` (TIME, RETRYCOUNT alike), `ERR Unrecognized XCLAIM option '<opt>'`,
//! `ERR COUNT must be > 0`. The consumer is created by the first entry it claims.
//!
//! Each change to the PEL is propagated as `XCLAIM key group consumer 0 id TIME t RETRYCOUNT
//! n FORCE JUSTID LASTID id` (Redis's `streamPropagateXCLAIM`), and a LASTID that moved the
//! group with nothing claimed as `XGROUP SETID ... ENTRIESREAD n`.

use bytes::Bytes;
use slotproxy::protocol::errors::c_string;

use super::range::interval_bound;
use super::{reply_entry, reply_id, strict_id, write_stream};
use crate::cmd::args::{int_in_range_or, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::Db;
use crate::pubsub::notify;
use crate::types::stream::group::{ConsumerGroup, Pending};
use crate::types::stream::StreamId;
use crate::types::StreamValue;

/// What Redis propagates for a pending entry's new state: `XCLAIM key group <owner> 0 <id>
/// TIME <t> RETRYCOUNT <n> FORCE JUSTID LASTID <group last id>`.
pub(super) fn propagate_pending(
    key: &[u8],
    group: &[u8],
    id_arg: &[u8],
    pending: &Pending,
    last_id: StreamId,
) -> Vec<Bytes> {
    let text = |s: &'static str| Bytes::from_static(s.as_bytes());
    vec![
        text("XCLAIM"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group),
        Bytes::copy_from_slice(&pending.consumer),
        text("0"),
        Bytes::copy_from_slice(id_arg),
        text("TIME"),
        number(pending.delivery_time),
        text("RETRYCOUNT"),
        number(pending.delivery_count),
        text("FORCE"),
        text("JUSTID"),
        text("LASTID"),
        super::id_arg(last_id),
    ]
}

/// A counter as a propagated argument (on the stack unless past `i64`: these go out with
/// every entry a group delivers).
fn number(n: u64) -> Bytes {
    match i64::try_from(n) {
        Ok(v) => Bytes::copy_from_slice(slotproxy::numbers::IntegerText::new(v).as_bytes()),
        Err(_) => Bytes::from(n.to_string()),
    }
}

/// What Redis propagates for a group's position: `XGROUP SETID key group <last id>
/// ENTRIESREAD <n>`.
pub(super) fn propagate_group_position(key: &[u8], group: &[u8], cg: &ConsumerGroup) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(b"SETID"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group),
        Bytes::from(cg.last_id.to_string()),
        Bytes::from_static(b"ENTRIESREAD"),
        Bytes::from(cg.entries_read.to_string()),
    ]
}

/// The stream and group a claim works on, or Redis's NOGROUP error.
fn stream_and_group<'d>(
    db: &'d mut Db,
    key: &[u8],
    group: &[u8],
) -> Result<&'d mut StreamValue, CmdError> {
    match write_stream(db, key)? {
        Some(stream) if stream.groups.contains_key(group) => Ok(stream),
        _ => Err(format!(
            "NOGROUP No such key '{}' or consumer group '{}'",
            c_string(key),
            c_string(group)
        )
        .into()),
    }
}

/// A millisecond count; `what` names it in the error.
fn millis(arg: &[u8], what: &'static str) -> Result<i64, CmdError> {
    int_in_range_or(arg, i64::MIN, i64::MAX, what)
}

/// XCLAIM's options after the ids.
struct ClaimOptions {
    /// Unix ms of the new delivery time (IDLE / TIME), None for now.
    delivery_time: Option<i64>,
    retry_count: Option<i64>,
    force: bool,
    justid: bool,
    last_id: StreamId,
}

fn parse_claim_options(args: &[Bytes], now: i64) -> Result<ClaimOptions, CmdError> {
    let mut options = ClaimOptions {
        delivery_time: None,
        retry_count: None,
        force: false,
        justid: false,
        last_id: StreamId::MIN,
    };
    let mut j = 0;
    while j < args.len() {
        let more = j + 1 < args.len();
        let opt = &args[j];
        if is(opt, "force") {
            options.force = true;
        } else if is(opt, "justid") {
            options.justid = true;
        } else if is(opt, "idle") && more {
            j += 1;
            let idle = millis(&args[j], "ERR Invalid IDLE option argument for XCLAIM")?;
            options.delivery_time = Some(now.wrapping_sub(idle));
        } else if is(opt, "time") && more {
            j += 1;
            options.delivery_time = Some(millis(
                &args[j],
                "ERR Invalid TIME option argument for XCLAIM",
            )?);
        } else if is(opt, "retrycount") && more {
            j += 1;
            options.retry_count = Some(millis(
                &args[j],
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?);
        } else if is(opt, "lastid") && more {
            j += 1;
            options.last_id = strict_id(&args[j])?;
        } else {
            return Err(format!("ERR Unrecognized XCLAIM option '{}'", c_string(opt)).into());
        }
        j += 1;
    }
    Ok(options)
}

pub fn xclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, group_name, consumer) = (&args[1], &args[2], &args[3]);
    let now = ctx.now_ms();
    let db = ctx.keyspace.db(ctx.client.db);
    let stream = stream_and_group(db, key, group_name)?;
    let min_idle = millis(&args[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    // The ids run up to the first argument that is not one; options follow.
    let ids_end = 5 + args[5..]
        .iter()
        .take_while(|arg| strict_id(arg).is_ok())
        .count();
    let now_i = i64::try_from(now).unwrap_or(i64::MAX);
    let options = parse_claim_options(&args[ids_end..], now_i)?;
    let delivery_time = match options.delivery_time {
        Some(t) if (0..=now_i).contains(&t) => t as u64,
        _ => now,
    };
    let Some(group) = stream.groups.get_mut(&group_name[..]) else {
        return Ok(());
    };
    let mut propagate_position = options.last_id > group.last_id;
    if propagate_position {
        group.last_id = options.last_id;
    }
    let mut propagated: Vec<Vec<Bytes>> = Vec::new();
    let mut claimed: Vec<StreamId> = Vec::new();
    let mut created = false;
    for id_arg in &args[5..ids_end] {
        let id = strict_id(id_arg)?;
        let exists = stream.entry_exists(id);
        let Some(group) = stream.groups.get_mut(&group_name[..]) else {
            break;
        };
        let last_id = group.last_id;
        // Propagated with the id as the client wrote it, as Redis does.
        let id_text = String::from_utf8_lossy(id_arg);
        if !exists {
            // A pending entry whose stream entry is gone leaves the PEL.
            if let Some(pending) = group.pel.get(&id) {
                propagated.push(propagate_pending(
                    key,
                    group_name,
                    id_text.as_bytes(),
                    pending,
                    last_id,
                ));
                propagate_position = false;
                group.ack(id);
            }
            continue;
        }
        match group.pel.get(&id) {
            None if !options.force => continue,
            Some(pending)
                if min_idle > 0
                    && (now as i64).saturating_sub(pending.delivery_time as i64) < min_idle =>
            {
                continue
            }
            _ => {}
        }
        created |= group.see_consumer(consumer, now);
        let pending = group.assign(id, consumer, now);
        pending.delivery_time = delivery_time;
        match options.retry_count {
            Some(n) if n >= 0 => pending.delivery_count = n as u64,
            _ if !options.justid => pending.delivery_count += 1,
            _ => {}
        }
        propagated.push(propagate_pending(
            key,
            group_name,
            id_text.as_bytes(),
            pending,
            last_id,
        ));
        propagate_position = false;
        claimed.push(id);
    }
    let out = &mut ctx.out;
    out.array(claimed.len());
    for id in &claimed {
        if options.justid {
            reply_id(out, *id);
        } else if let Some(entry) = stream.range(*id, *id).next() {
            reply_entry(out, &entry);
        }
    }
    if propagate_position {
        if let Some(group) = stream.groups.get(&group_name[..]) {
            propagated.push(propagate_group_position(key, group_name, group));
        }
    }
    finish(ctx, key, propagated, created);
    Ok(())
}

/// Propagates what a claim changed (nothing else), and announces a created consumer.
fn finish(ctx: &mut Ctx<'_>, key: &[u8], propagated: Vec<Vec<Bytes>>, created: bool) {
    ctx.keyspace.propagation.prevent();
    let db = ctx.db();
    db.dirty += propagated.len() as u64 + u64::from(created);
    for command in propagated {
        ctx.propagate_as(command);
    }
    if created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
}

pub fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, group_name, consumer) = (&args[1], &args[2], &args[3]);
    let min_idle = millis(
        &args[4],
        "ERR Invalid min-idle-time argument for XAUTOCLAIM",
    )?
    .max(0);
    let (mut start, excluded) = interval_bound(&args[5], 0)?;
    if excluded {
        start = start
            .next()
            .ok_or_else(|| CmdError::from("ERR invalid start ID for the interval"))?;
    }
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            count = int_in_range_or(&args[j + 1], 1, i64::MAX / 16, "ERR COUNT must be > 0")?;
            j += 1;
        } else if is(&args[j], "justid") {
            justid = true;
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    let now = ctx.now_ms();
    let db = ctx.keyspace.db(ctx.client.db);
    let stream = stream_and_group(db, key, group_name)?;
    let mut attempts = count.saturating_mul(10);
    let mut remaining = count;
    let mut claimed: Vec<StreamId> = Vec::new();
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut propagated: Vec<Vec<Bytes>> = Vec::new();
    let mut created = false;
    // The next pending id to look at is the first at or after `cursor` (None: past the
    // last possible id).
    let mut cursor = Some(start);
    let first_from = |stream: &StreamValue, from: Option<StreamId>| {
        let from = from?;
        let group = stream.groups.get(&group_name[..])?;
        group.pel.range(from..).next().map(|(id, _)| *id)
    };
    while attempts > 0 && remaining > 0 {
        attempts -= 1;
        let Some(id) = first_from(stream, cursor) else {
            break;
        };
        cursor = id.next();
        let exists = stream.entry_exists(id);
        let Some(group) = stream.groups.get_mut(&group_name[..]) else {
            break;
        };
        let last_id = group.last_id;
        let propagate = |pending: &Pending| {
            propagate_pending(key, group_name, &super::id_arg(id), pending, last_id)
        };
        let Some(pending) = group.pel.get(&id) else {
            continue;
        };
        if !exists {
            propagated.push(propagate(pending));
            group.ack(id);
            deleted.push(id);
            remaining -= 1;
            continue;
        }
        if min_idle > 0 && (now as i64).saturating_sub(pending.delivery_time as i64) < min_idle {
            continue;
        }
        created |= group.see_consumer(consumer, now);
        let pending = group.assign(id, consumer, now);
        pending.delivery_time = now;
        if !justid {
            pending.delivery_count += 1;
        }
        propagated.push(propagate(pending));
        claimed.push(id);
        remaining -= 1;
    }
    let next = first_from(stream, cursor);
    let out = &mut ctx.out;
    out.array(3);
    reply_id(out, next.unwrap_or(StreamId::MIN));
    out.array(claimed.len());
    for id in &claimed {
        if justid {
            reply_id(out, *id);
        } else if let Some(entry) = stream.range(*id, *id).next() {
            reply_entry(out, &entry);
        }
    }
    out.array(deleted.len());
    for id in &deleted {
        reply_id(out, *id);
    }
    finish(ctx, key, propagated, created);
    Ok(())
}
