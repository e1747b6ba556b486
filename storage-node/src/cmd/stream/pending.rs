//! Acknowledging and listing pending entries.
//!
//! - `XACK key group id [id ...]` → how many of the ids were pending and are no more (0 for
//!   a missing key or group, before the ids are read). Every id is checked before any is
//!   acknowledged.
//! - `XPENDING key group` → `[count, smallest id, largest id, [[consumer, count], ...]]`
//!   (the counts per consumer as bulk strings; nulls when nothing is pending).
//! - `XPENDING key group [IDLE min-idle-time] start end count [consumer]` → up to `count`
//!   pending entries from `start` to `end` (`(` excludes, as in XRANGE), each `[id,
//!   consumer, ms since the last delivery, deliveries]`, only those idle at least
//!   `min-idle-time` ms; the consumer's own only, if one is named (none for an unknown one).
//!
//! Errors: `NOGROUP No such key '<key>' or consumer group '<group>'`, `ERR syntax error`,
//! and id and integer errors, which come before the key is looked up.

use bytes::Bytes;
use slotproxy::protocol::errors::c_string;

use super::range::interval_bound;
use super::{db_and_out, read_stream, reply_id, strict_id, write_stream};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::types::stream::StreamId;

pub fn xack(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, group_name) = (&args[1], &args[2]);
    let db = ctx.db();
    // No key or group: nothing to acknowledge, whatever the ids.
    let Some(group) = write_stream(db, key)?.and_then(|s| s.groups.get_mut(&group_name[..])) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let ids = args[3..]
        .iter()
        .map(|arg| strict_id(arg))
        .collect::<Result<Vec<StreamId>, CmdError>>()?;
    let acknowledged = ids.into_iter().filter(|&id| group.ack(id)).count();
    db.dirty += acknowledged as u64;
    ctx.out.integer(acknowledged as i64);
    Ok(())
}

/// The extended form's arguments.
struct Range {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<Bytes>,
}

fn parse_range(args: &[Bytes]) -> Result<Range, CmdError> {
    let mut at = 3;
    let mut min_idle = 0;
    if is(&args[3], "idle") {
        min_idle = int(&args[4])?;
        if args.len() < 8 {
            return Err(SYNTAX.into());
        }
        at += 2;
    }
    let count = usize::try_from(int(&args[at + 2])?.max(0)).unwrap_or(usize::MAX);
    let (mut start, start_excluded) = interval_bound(&args[at], 0)?;
    if start_excluded {
        start = start
            .next()
            .ok_or_else(|| CmdError::from("ERR invalid start ID for the interval"))?;
    }
    let (mut end, end_excluded) = interval_bound(&args[at + 1], u64::MAX)?;
    if end_excluded {
        end = end
            .prev()
            .ok_or_else(|| CmdError::from("ERR invalid end ID for the interval"))?;
    }
    Ok(Range {
        min_idle,
        start,
        end,
        count,
        consumer: args.get(at + 3).cloned(),
    })
}

pub fn xpending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, group_name) = (&args[1], &args[2]);
    if args.len() != 3 && !(6..=9).contains(&args.len()) {
        return Err(SYNTAX.into());
    }
    let range = if args.len() >= 6 {
        Some(parse_range(args)?)
    } else {
        None
    };
    let now = ctx.now_ms();
    let (db, out) = db_and_out(ctx);
    let group = read_stream(db, key)?
        .and_then(|s| s.groups.get(&group_name[..]))
        .ok_or_else(|| {
            CmdError::from(format!(
                "NOGROUP No such key '{}' or consumer group '{}'",
                c_string(key),
                c_string(group_name)
            ))
        })?;
    let Some(range) = range else {
        out.array(4);
        out.integer(group.pel.len() as i64);
        let (Some(first), Some(last)) = (group.pel.keys().next(), group.pel.keys().next_back())
        else {
            out.null();
            out.null();
            out.null_array();
            return Ok(());
        };
        reply_id(out, *first);
        reply_id(out, *last);
        let owners: Vec<_> = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .collect();
        out.array(owners.len());
        for (name, consumer) in owners {
            out.array(2);
            out.bulk(name);
            out.bulk(consumer.pel.len().to_string().as_bytes());
        }
        return Ok(());
    };
    let ids: Vec<StreamId> = match &range.consumer {
        Some(name) => match group.consumers.get(&name[..]) {
            Some(consumer) => consumer.pel.iter().copied().collect(),
            None => {
                out.array(0);
                return Ok(());
            }
        },
        None => group.pel.keys().copied().collect(),
    };
    let idle = |time: u64| (now as i64).saturating_sub(time as i64);
    let shown: Vec<_> = if range.start > range.end {
        Vec::new()
    } else {
        ids.into_iter()
            .filter(|id| (range.start..=range.end).contains(id))
            .filter_map(|id| group.pel.get(&id).map(|p| (id, p)))
            .filter(|(_, p)| range.min_idle == 0 || idle(p.delivery_time) >= range.min_idle)
            .take(range.count)
            .collect()
    };
    out.array(shown.len());
    for (id, pending) in shown {
        out.array(4);
        reply_id(out, id);
        out.bulk(&pending.consumer);
        out.integer(idle(pending.delivery_time).max(0));
        out.integer(pending.delivery_count as i64);
    }
    Ok(())
}
