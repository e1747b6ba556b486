//! Merges of every master's reply that need more than a sum or a concatenation.
//!
//! - `PUBSUB SHARDNUMSUB [channel ...]` → `channel count` pairs, counts added per channel (a
//!   shard channel lives on its slot's master, so the sum is the one true count).
//! - `SLOWLOG GET [count]` → every master's entries, newest first (by the entry's Unix time,
//!   then id), cut to `count` (default 10, `-1` all). Ids stay the nodes' own, so two entries
//!   may share an id; the client-address field names the proxy's connection to the node.
//! - `TIME` → the latest of the masters' clocks, so time read through the proxy never runs
//!   behind any node's.

use bytes::Bytes;

use super::{array_items, error_reply, write};
use crate::resp::{parse_frame, Frame, Proto};

/// Redis's default SLOWLOG GET count.
const SLOWLOG_DEFAULT_COUNT: i64 = 10;

/// `name count` pairs (a flat array; a map is read too), counts added per name, in the
/// order names first appear.
pub fn sum_pairs(frames: impl Iterator<Item = Frame>, proto: Proto) -> Bytes {
    // Every master answers the channels asked, in the order asked (a channel asked twice is
    // answered twice, as one server does): the counts add up position by position.
    let mut totals: Vec<(Frame, i64)> = Vec::new();
    for (i, frame) in frames.enumerate() {
        let pairs: Vec<(Frame, Frame)> = match frame {
            Frame::Map(pairs) => pairs,
            Frame::Array(items) => {
                let mut items = items.into_iter();
                let mut pairs = Vec::new();
                while let (Some(name), Some(count)) = (items.next(), items.next()) {
                    pairs.push((name, count));
                }
                pairs
            }
            _ => Vec::new(),
        };
        if i == 0 {
            totals = pairs
                .into_iter()
                .map(|(name, count)| (name, count.as_integer().unwrap_or(0)))
                .collect();
            continue;
        }
        for ((name, total), (other, count)) in totals.iter_mut().zip(pairs) {
            if *name == other {
                *total += count.as_integer().unwrap_or(0);
            }
        }
    }
    write(
        |out| {
            // A flat array in RESP3 too, as Redis 7.0 answers SHARDNUMSUB.
            out.array(totals.len() * 2);
            for (name, total) in &totals {
                name.write(out);
                out.integer(*total);
            }
        },
        proto,
    )
}

/// SLOWLOG GET across masters.
pub fn slowlog_get(frames: impl Iterator<Item = Frame>, args: &[Bytes], proto: Proto) -> Bytes {
    // The nodes validated the count already (an error would have answered for all).
    let count = args
        .get(2)
        .and_then(|c| crate::numbers::parse_i64(c))
        .unwrap_or(SLOWLOG_DEFAULT_COUNT);
    let mut entries: Vec<Frame> = frames.flat_map(array_items).collect();
    let key = |entry: &Frame| {
        let items = entry.as_array().unwrap_or(&[]);
        let field = |i: usize| items.get(i).and_then(Frame::as_integer).unwrap_or(0);
        (field(1), field(0))
    };
    entries.sort_by_key(|entry| std::cmp::Reverse(key(entry)));
    if count >= 0 {
        entries.truncate(usize::try_from(count).unwrap_or(usize::MAX));
    }
    write(|out| Frame::Array(entries).write(out), proto)
}

/// The latest of the masters' `TIME` replies, passed on as that master wrote it.
pub fn latest_time(replies: &[Bytes]) -> Bytes {
    let time_of = |reply: &Bytes| -> Option<(i64, i64)> {
        let (frame, _) = parse_frame(reply).ok()??;
        let items = frame.as_array()?;
        let number = |i: usize| {
            items
                .get(i)
                .and_then(Frame::as_bytes)
                .and_then(crate::numbers::parse_i64)
        };
        Some((number(0)?, number(1)?))
    };
    replies
        .iter()
        .filter_map(|reply| Some((time_of(reply)?, reply)))
        .max_by_key(|(time, _)| *time)
        .map(|(_, reply)| reply.clone())
        .unwrap_or_else(|| error_reply("ERR slotproxy: no master answered TIME"))
}
