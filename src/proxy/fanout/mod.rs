//! Requests that touch several slots or every master, split into one child request per slot
//! (or per master) and merged as if one server had answered. `split.rs` holds the split-key
//! commands (MGET, MSET, DEL, ...); this file the ones sent to every master, with the longer
//! merges in `merge.rs` and SCRIPT KILL / FUNCTION KILL in `kill.rs`.
//!
//! All children are queued before any reply is awaited, so they run concurrently, and each
//! child follows its own redirects. The whole fan-out is one future owned by the client's
//! session: a client that disconnects drops it, and with it every child still waiting.
//! Cross-slot MSET is therefore not atomic, and MSETNX (which must be) is not split.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::forward::{error_reply, send_to_node, Pending};
use super::router::Merge;
use super::Proxy;
use crate::backend::Lane;
use crate::resp::{parse_frame, request_bytes, Frame, Proto, ReplyBuf};

mod kill;
mod merge;
mod split;
pub(super) use split::array_elements;
pub use split::split_keys;

/// Bits of a proxy SCAN cursor that name the master; the rest is that master's cursor.
const SCAN_NODE_BITS: u32 = 10;

fn parse(reply: &[u8]) -> Frame {
    match parse_frame(reply) {
        Ok(Some((frame, _))) => frame,
        _ => Frame::Error(Bytes::from_static(
            b"ERR slotproxy: unreadable reply from node",
        )),
    }
}

fn write(frame_writer: impl FnOnce(&mut ReplyBuf<'_>), proto: Proto) -> Bytes {
    let mut buf = BytesMut::new();
    frame_writer(&mut ReplyBuf::new(&mut buf, proto));
    buf.freeze()
}

/// Every child's reply, in order; or the first error reply among them, which then answers
/// for the whole request.
pub(super) async fn gather(
    proxy: &Arc<Proxy>,
    children: Vec<Pending>,
) -> Result<Vec<Bytes>, Bytes> {
    let mut replies = Vec::with_capacity(children.len());
    for child in children {
        replies.push(child.reply(proxy).await);
    }
    match replies.iter().find(|r| r.first() == Some(&b'-')) {
        Some(error) => Err(error.clone()),
        None => Ok(replies),
    }
}

/// The masters, in a stable order (SCAN cursors index into it).
fn masters(proxy: &Proxy) -> Vec<String> {
    proxy.topology.load().master_addrs()
}

/// A keyless command every master must answer (see [`Merge`] for each way of merging).
/// Sent to every master now; merged when all have answered.
pub fn all_masters(
    proxy: &Arc<Proxy>,
    args: Vec<Bytes>,
    merge: Merge,
    proto: Proto,
    lane: Lane,
) -> Pending {
    let addrs = masters(proxy);
    if addrs.is_empty() {
        return Pending::Ready(error_reply("CLUSTERDOWN The cluster is down"));
    }
    proxy.metrics.worker(lane.worker).fanout(addrs.len());
    match merge {
        Merge::Scan => Pending::Future(Box::pin(scan(proxy.clone(), args, addrs, proto, lane))),
        Merge::Kill => Pending::Future(Box::pin(kill::kill(proxy.clone(), args, addrs, proto))),
        _ => {
            let request = request_bytes(&args);
            let children: Vec<Pending> = addrs
                .into_iter()
                .map(|addr| send_to_node(proxy, addr, request.clone(), proto, lane))
                .collect();
            Pending::Future(Box::pin(merge_all(
                proxy.clone(),
                merge,
                args,
                children,
                proto,
            )))
        }
    }
}

async fn merge_all(
    proxy: Arc<Proxy>,
    merge: Merge,
    args: Vec<Bytes>,
    children: Vec<Pending>,
    proto: Proto,
) -> Bytes {
    let replies = match gather(&proxy, children).await {
        Ok(replies) => replies,
        Err(error) => return error,
    };
    let frames = || replies.iter().map(|r| parse(r));
    match merge {
        Merge::Sum => {
            let total: i64 = frames().filter_map(|f| f.as_integer()).sum();
            write(|out| out.integer(total), proto)
        }
        Merge::Concat => {
            let items: Vec<Frame> = frames().flat_map(array_items).collect();
            write(|out| Frame::Array(items).write(out), proto)
        }
        Merge::Union => {
            let mut items: Vec<Frame> = Vec::new();
            for item in frames().flat_map(array_items) {
                if !items.contains(&item) {
                    items.push(item);
                }
            }
            write(|out| Frame::Array(items).write(out), proto)
        }
        Merge::RandomKey => {
            let mut found: Vec<Bytes> = replies
                .into_iter()
                .filter(|r| r.first() == Some(&b'$') && !r.starts_with(b"$-1"))
                .collect();
            if found.is_empty() {
                return write(|out| out.null(), proto);
            }
            use rand::Rng;
            let i = rand::thread_rng().gen_range(0..found.len());
            found.swap_remove(i)
        }
        Merge::And => {
            let mut all: Option<Vec<i64>> = None;
            for frame in frames() {
                let flags: Vec<i64> = array_items(frame)
                    .iter()
                    .map(|f| f.as_integer().unwrap_or(0))
                    .collect();
                all = Some(match all {
                    None => flags,
                    Some(prev) => prev.iter().zip(&flags).map(|(a, b)| a & b).collect(),
                });
            }
            let flags = all.unwrap_or_default();
            write(
                |out| {
                    out.array(flags.len());
                    flags.iter().for_each(|&f| out.integer(f));
                },
                proto,
            )
        }
        Merge::Identical => match replies.iter().all(|r| *r == replies[0]) {
            true => replies[0].clone(),
            false => error_reply(&format!(
                "ERR slotproxy: the masters answer {} differently; ask the nodes directly",
                shown_name(&args)
            )),
        },
        Merge::SumPairs => merge::sum_pairs(frames(), proto),
        Merge::SlowlogGet => merge::slowlog_get(frames(), &args, proto),
        Merge::Min => match frames().filter_map(|f| f.as_integer()).min() {
            Some(min) => write(|out| out.integer(min), proto),
            None => error_reply("ERR slotproxy: no master answered with an integer"),
        },
        Merge::Latest => merge::latest_time(&replies),
        // FLUSHALL, FLUSHDB, SCRIPT LOAD/FLUSH, FUNCTION LOAD/DELETE/FLUSH/RESTORE, MEMORY
        // PURGE, SLOWLOG RESET: every master made the change (an error would have answered
        // above); the first reply stands for all.
        Merge::Everywhere | Merge::Scan | Merge::Kill => replies
            .into_iter()
            .next()
            .unwrap_or_else(|| error_reply("CLUSTERDOWN The cluster is down")),
    }
}

/// The items of an array reply (none for anything else).
fn array_items(frame: Frame) -> Vec<Frame> {
    match frame {
        Frame::Array(items) | Frame::Set(items) => items,
        _ => Vec::new(),
    }
}

/// `SCRIPT EXISTS` style: the command and subcommand in upper case, for error texts.
fn shown_name(args: &[Bytes]) -> String {
    let take = if args.len() > 1 { 2 } else { 1 };
    args[..take]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_uppercase())
        .collect::<Vec<_>>()
        .join(" ")
}

/// SCAN across masters: the low bits of the cursor say which master, the rest is that
/// master's own cursor. A full iteration visits every master in turn, so every key present
/// throughout is returned (while the set of masters does not change).
async fn scan(
    proxy: Arc<Proxy>,
    args: Vec<Bytes>,
    addrs: Vec<String>,
    proto: Proto,
    lane: Lane,
) -> Bytes {
    let Some(cursor) = crate::numbers::parse_cursor(&args[1]) else {
        return error_reply("ERR invalid cursor");
    };
    let mut node = (cursor & ((1 << SCAN_NODE_BITS) - 1)) as usize;
    let mut node_cursor = cursor >> SCAN_NODE_BITS;
    if node >= addrs.len() {
        return error_reply("ERR invalid cursor");
    }
    let mut keys = Vec::new();
    loop {
        let mut child: Vec<Vec<u8>> = vec![b"SCAN".to_vec(), node_cursor.to_string().into_bytes()];
        child.extend(args[2..].iter().map(|a| a.to_vec()));
        let refs: Vec<&[u8]> = child.iter().map(|a| &a[..]).collect();
        let reply = send_to_node(
            &proxy,
            addrs[node].clone(),
            request_bytes(&refs),
            proto,
            lane,
        )
        .reply(&proxy)
        .await;
        if reply.first() == Some(&b'-') {
            return reply;
        }
        let frame = parse(&reply);
        let items = frame.as_array().unwrap_or(&[]);
        let next = items
            .first()
            .and_then(Frame::as_bytes)
            .and_then(crate::numbers::parse_u64)
            .unwrap_or(0);
        keys.extend(
            items
                .get(1)
                .and_then(Frame::as_array)
                .unwrap_or(&[])
                .iter()
                .cloned(),
        );
        if next >= 1 << (64 - SCAN_NODE_BITS) {
            return error_reply("ERR slotproxy: node cursor too large to encode");
        }
        let next_cursor = if next != 0 {
            (next << SCAN_NODE_BITS) | node as u64
        } else if node + 1 < addrs.len() {
            (node + 1) as u64
        } else {
            0
        };
        // Keep going while a node is exhausted and nothing was found, so a client does not
        // get many empty pages for nothing.
        if keys.is_empty() && next == 0 && next_cursor != 0 {
            node += 1;
            node_cursor = 0;
            continue;
        }
        let cursor_text = next_cursor.to_string();
        return write(
            |out| {
                out.array(2);
                out.bulk(cursor_text.as_bytes());
                Frame::Array(keys).write(out);
            },
            proto,
        );
    }
}
