//! The split-filter commands that concern every part: BF.RESERVE creates them all,
//! BF.INFO and BF.CARD add them up.
//!
//! - `BF.RESERVE name ε n [EXPANSION e] [NONSCALING]` → `BF.RESERVE name{i} ε m ...` for
//!   every part, `m` = [`part_capacity`]`(n, parts)`; `OK` once every part answered OK,
//!   else the first part's error (`ERR item exists` if the filter was reserved before).
//!   A RESERVE that failed on some parts has still created the others.
//! - `BF.INFO name` → RedisBloom's five figures: Capacity, Size, Number of filters and
//!   Number of items inserted summed over the parts, Expansion rate from the lowest part
//!   that exists (all parts are reserved alike). `BF.INFO name FIELD` the same for one
//!   figure. Parts not created yet (`ERR not found`: no item reached them and the filter
//!   was not reserved) count as empty; `ERR not found` only when no part exists.
//! - `BF.CARD name` → the sum of the parts' counts.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::part::part_capacity;
use super::Split;
use crate::proxy::batch::Batcher;
use crate::proxy::fanout::gather;
use crate::proxy::forward::{error_reply, Pending};
use crate::proxy::Proxy;
use crate::resp::{parse_frame, Frame, ReplyBuf};

/// A missing filter's BF.INFO reply, as the node sends it.
const NOT_FOUND: &[u8] = b"-ERR not found\r\n";

/// The BF.INFO figure that is the same for every part rather than a sum.
const EXPANSION_NAME: &[u8] = b"Expansion rate";

fn every_part(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    split: &Split,
    args: &[&[u8]],
) -> Vec<Pending> {
    proxy
        .metrics
        .worker(split.lane.worker)
        .fanout(split.parts as usize);
    (0..split.parts)
        .map(|n| split.send(proxy, batcher, n, args))
        .collect()
}

pub(super) fn reserve(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    split: Split,
    args: &[Bytes],
) -> Pending {
    let total = args
        .get(3)
        .and_then(|c| crate::numbers::parse_u64(c))
        .filter(|&n| n > 0);
    let mut refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    let (Some(total), 4..=7) = (total, args.len()) else {
        // Arity or capacity the node refuses: one part says why, in RedisBloom's words.
        return split.send(proxy, batcher, 0, &refs);
    };
    let capacity = part_capacity(total, split.parts).to_string();
    refs[3] = capacity.as_bytes();
    let children = every_part(proxy, batcher, &split, &refs);
    proxy
        .metrics
        .worker(split.lane.worker)
        .fanout(children.len());
    let proxy = proxy.clone();
    Pending::Future(Box::pin(async move {
        match gather(&proxy, children).await {
            Ok(mut replies) => replies.swap_remove(0),
            Err(error) => error,
        }
    }))
}

pub(super) fn card(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    split: Split,
    args: &[&[u8]],
) -> Pending {
    let children = every_part(proxy, batcher, &split, args);
    let proxy = proxy.clone();
    let proto = split.proto;
    Pending::Future(Box::pin(async move {
        match gather(&proxy, children).await {
            Ok(replies) => {
                let total: i64 = replies.iter().filter_map(|r| frame(r).as_integer()).sum();
                let mut buf = BytesMut::new();
                ReplyBuf::new(&mut buf, proto).integer(total);
                buf.freeze()
            }
            Err(error) => error,
        }
    }))
}

pub(super) fn info(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    split: Split,
    args: &[&[u8]],
) -> Pending {
    if !(2..=3).contains(&args.len()) {
        return split.send(proxy, batcher, 0, args);
    }
    let expansion_only = args
        .get(2)
        .is_some_and(|f| f.eq_ignore_ascii_case(b"expansion"));
    let children = every_part(proxy, batcher, &split, args);
    let proxy = proxy.clone();
    let proto = split.proto;
    Pending::Future(Box::pin(async move {
        let mut replies = Vec::with_capacity(children.len());
        for child in children {
            replies.push(child.reply(&proxy).await);
        }
        let existing: Vec<&Bytes> = replies.iter().filter(|r| &r[..] != NOT_FOUND).collect();
        if let Some(error) = existing.iter().find(|r| r.first() == Some(&b'-')) {
            return (*error).clone();
        }
        let Some(Frame::Array(mut merged)) = existing.first().map(|r| frame(r)) else {
            // Every part is missing: the filter is.
            return replies
                .into_iter()
                .next()
                .unwrap_or_else(|| error_reply("ERR not found"));
        };
        for other in &existing[1..] {
            let Frame::Array(items) = frame(other) else {
                return error_reply("ERR slotproxy: unexpected BF.INFO reply from a part");
            };
            for (i, (sum, item)) in merged.iter_mut().zip(&items).enumerate() {
                let follows_expansion_name =
                    i > 0 && items.get(i - 1).and_then(Frame::as_bytes) == Some(EXPANSION_NAME);
                if expansion_only || follows_expansion_name {
                    continue;
                }
                if let (Frame::Integer(total), Some(n)) = (sum, item.as_integer()) {
                    *total = total.saturating_add(n);
                }
            }
        }
        let mut buf = BytesMut::new();
        Frame::Array(merged).write(&mut ReplyBuf::new(&mut buf, proto));
        buf.freeze()
    }))
}

fn frame(reply: &[u8]) -> Frame {
    match parse_frame(reply) {
        Ok(Some((frame, _))) => frame,
        _ => Frame::Error(Bytes::from_static(
            b"ERR slotproxy: unreadable reply from node",
        )),
    }
}
