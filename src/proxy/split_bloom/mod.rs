//! Split Bloom filters: `BF.*` on a configured name (`split_bloom: [{prefix: "bf:users",
//! parts: 1024}]`) spread over part filters `bf:users{0}` ... `bf:users{1023}` on every
//! node, so no request touches more than one small filter per item and no node holds the
//! whole filter. [`part`] says which part an item goes to and how large parts are.
//!
//! - `BF.ADD name item`, `BF.EXISTS name item` → the item's part, reply as is.
//! - `BF.MADD name item ...`, `BF.MEXISTS name item ...`, `BF.INSERT name [options] ITEMS
//!   item ...` → one request per part that has items (they join the client's per-node
//!   batches, so they leave together), replies put back in the items' order. A part that
//!   answers an item with an error (`ERR non scaling filter is full`) ends its own list
//!   there, as one filter does; the merged array ends at the first such error too.
//! - `BF.RESERVE name ε n [EXPANSION e] [NONSCALING]` and `BF.INSERT ... CAPACITY n` → the
//!   parts are created with the capacity [`part::part_capacity`] and the same ε; RESERVE
//!   goes to every part and answers `OK` only when every part was created.
//! - `BF.INFO name [field]`, `BF.CARD name` → every part, aggregated ([`whole`]).
//! - `BF.SCANDUMP`, `BF.LOADCHUNK` → refused: a dump is one filter's bits, and the split
//!   name is many filters; dump and load the part keys one by one.
//!
//! Without `BF.RESERVE`, a part is created on its first item with RedisBloom's defaults
//! (capacity 100, ε 0.01), as any key is; `BF.INSERT` creates only the parts its items
//! reach. A part's error answers for the whole request (the first part in part order wins),
//! except where noted in [`whole`]. A malformed request is sent whole to part 0 with the
//! part key in place of the name, so the node answers RedisBloom's own error text.
//! In MULTI the split name is refused at queueing (a transaction runs on one node).

pub mod part;
mod whole;

use std::sync::Arc;

use bytes::Bytes;

use super::batch::Batcher;
use super::fanout::array_elements;
use super::forward::{error_reply, Pending};
use super::Proxy;
use crate::backend::Lane;
use crate::cluster::key_slot;
use crate::config::SplitBloom;
use crate::resp::{request_bytes, write_integer_decimal, Proto};

/// What a request on a split name needs, built once per request.
pub(super) struct Split {
    pub name: Bytes,
    pub parts: u32,
    pub proto: Proto,
    pub lane: Lane,
}

impl Split {
    /// Sends `args` (its argument 1 replaced by part `n`'s key) to part `n`'s node.
    fn send(&self, proxy: &Arc<Proxy>, batcher: &mut Batcher, n: u32, args: &[&[u8]]) -> Pending {
        let key = part::part_key(&self.name, n);
        let mut child: Vec<&[u8]> = Vec::with_capacity(args.len());
        child.push(args[0]);
        child.push(&key);
        child.extend_from_slice(&args[2..]);
        batcher.add(
            proxy,
            Some(key_slot(&key)),
            request_bytes(&child),
            self.proto,
            self.lane,
        )
    }
}

/// The split filter a request names, if it names one.
pub fn configured(proxy: &Proxy, name: &[u8], args: &[Bytes]) -> Option<SplitBloom> {
    if !name.starts_with(b"bf.") {
        return None;
    }
    let key = args.get(1)?;
    proxy.config.load().split_bloom_for(key).cloned()
}

/// Serves a `BF.*` request on a configured split name; `None` for any other request.
/// `name` is the command name in lower case.
pub fn route(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    name: &[u8],
    args: &[Bytes],
    proto: Proto,
    lane: Lane,
) -> Option<Pending> {
    let config = configured(proxy, name, args)?;
    let split = Split {
        name: args[1].clone(),
        parts: config.parts,
        proto,
        lane,
    };
    let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    Some(match name {
        b"bf.add" | b"bf.exists" if args.len() == 3 => {
            split.send(proxy, batcher, part::part_of(&args[2], split.parts), &refs)
        }
        b"bf.madd" | b"bf.mexists" if args.len() >= 3 => {
            items(proxy, batcher, split, &refs[..2], &refs[2..])
        }
        b"bf.insert" => match insert_items_at(args) {
            Some(at) => {
                let per_part = per_part_options(&refs[..at], split.parts);
                let head: Vec<&[u8]> = per_part.iter().map(|a| &a[..]).collect();
                items(proxy, batcher, split, &head, &refs[at..])
            }
            None => split.send(proxy, batcher, 0, &refs),
        },
        b"bf.reserve" => whole::reserve(proxy, batcher, split, args),
        b"bf.info" => whole::info(proxy, batcher, split, &refs),
        b"bf.card" if args.len() == 2 => whole::card(proxy, batcher, split, &refs),
        b"bf.scandump" | b"bf.loadchunk" => Pending::Ready(error_reply(&format!(
            "ERR slotproxy: '{}' is a split Bloom filter of {} parts; {} works on one filter: use the part keys {}{{0}} to {}{{{}}}",
            String::from_utf8_lossy(&split.name),
            split.parts,
            String::from_utf8_lossy(name).to_uppercase(),
            String::from_utf8_lossy(&split.name),
            String::from_utf8_lossy(&split.name),
            split.parts - 1,
        ))),
        // Wrong arity, or a BF command the proxy does not split: part 0's node answers
        // (RedisBloom's arity error, or unknown command), as one filter's node would.
        _ => split.send(proxy, batcher, 0, &refs),
    })
}

/// Where BF.INSERT's items start, reading the options as RedisBloom does (by their first
/// letters); `None` when the options do not parse or no item follows (the node says why).
fn insert_items_at(args: &[Bytes]) -> Option<usize> {
    let mut at = 2;
    while at < args.len() {
        let word = &args[at];
        let letter = |i: usize| word.get(i).map(u8::to_ascii_lowercase).unwrap_or(0);
        match letter(0) {
            b'i' => return (at + 1 < args.len()).then_some(at + 1),
            b'e' | b'c' => at += 2,
            b'n' => at += 1,
            _ => return None,
        }
    }
    None
}

/// BF.INSERT's command, name and options with `CAPACITY n` replaced by each part's
/// capacity (a value that is not a positive integer goes as is, for the node to refuse).
fn per_part_options(head: &[&[u8]], parts: u32) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = head.iter().map(|a| a.to_vec()).collect();
    let mut at = 2;
    while at + 1 < out.len() {
        let first = out[at].first().map(u8::to_ascii_lowercase);
        match first {
            Some(b'c') => {
                if let Some(total) = crate::numbers::parse_u64(&out[at + 1]).filter(|&n| n > 0) {
                    out[at + 1] = part::part_capacity(total, parts).to_string().into_bytes();
                }
                at += 2;
            }
            Some(b'e') => at += 2,
            _ => at += 1,
        }
    }
    out
}

/// The items' positions, grouped by part (parts in ascending order).
fn group_by_part(items: &[&[u8]], parts: u32) -> Vec<(u32, Vec<usize>)> {
    let mut groups: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, item) in items.iter().enumerate() {
        groups
            .entry(part::part_of(item, parts))
            .or_default()
            .push(i);
    }
    groups.into_iter().collect()
}

/// Sends `head` (command, name, options) plus each part's items to that part, and merges
/// the per-item replies back into the items' order.
fn items(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    split: Split,
    head: &[&[u8]],
    items: &[&[u8]],
) -> Pending {
    let groups = group_by_part(items, split.parts);
    let children: Vec<Pending> = groups
        .iter()
        .map(|(n, members)| {
            let mut child: Vec<&[u8]> = head.to_vec();
            child.extend(members.iter().map(|&i| items[i]));
            split.send(proxy, batcher, *n, &child)
        })
        .collect();
    proxy
        .metrics
        .worker(split.lane.worker)
        .fanout(children.len());
    let count = items.len();
    Pending::Future(Box::pin(merge_items(
        proxy.clone(),
        count,
        groups,
        children,
    )))
}

async fn merge_items(
    proxy: Arc<Proxy>,
    count: usize,
    groups: Vec<(u32, Vec<usize>)>,
    children: Vec<Pending>,
) -> Bytes {
    let replies = match super::fanout::gather(&proxy, children).await {
        Ok(replies) => replies,
        Err(error) => return error,
    };
    let mut slots: Vec<Option<&[u8]>> = vec![None; count];
    for ((_, members), reply) in groups.iter().zip(&replies) {
        let Some(elements) = array_elements(reply) else {
            return error_reply("ERR slotproxy: unexpected reply from a split Bloom part");
        };
        if elements.len() > members.len() {
            return error_reply("ERR slotproxy: unexpected reply from a split Bloom part");
        }
        for (&i, element) in members.iter().zip(elements) {
            slots[i] = Some(element);
        }
    }
    // One filter stops at an item's error; so does the merged reply (a part's list
    // is only ever short after its own error, which comes first in item order).
    let answered: Vec<&[u8]> = match slots
        .iter()
        .position(|s| s.is_none_or(|e| e.starts_with(b"-")))
    {
        Some(stop) => slots[..=stop].iter().flatten().copied().collect(),
        None => slots.iter().flatten().copied().collect(),
    };
    let mut out =
        bytes::BytesMut::with_capacity(answered.iter().map(|e| e.len()).sum::<usize>() + 16);
    out.extend_from_slice(b"*");
    write_integer_decimal(&mut out, answered.len() as i64);
    out.extend_from_slice(b"\r\n");
    for element in answered {
        out.extend_from_slice(element);
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn insert_options_are_read_as_redisbloom_reads_them() {
        let a = args(&[
            "BF.INSERT",
            "f",
            "CAP",
            "1000",
            "nonscaling",
            "ERROR",
            "0.1",
            "ITEMS",
            "x",
            "y",
        ]);
        assert_eq!(insert_items_at(&a), Some(8));
        assert_eq!(insert_items_at(&args(&["BF.INSERT", "f", "ITEMS"])), None);
        assert_eq!(
            insert_items_at(&args(&["BF.INSERT", "f", "BOGUS", "ITEMS", "x"])),
            None
        );
        let refs: Vec<&[u8]> = a[..7].iter().map(|a| &a[..]).collect();
        let out = per_part_options(&refs, 10);
        assert_eq!(
            out[3],
            part::part_capacity(1000, 10).to_string().into_bytes()
        );
        assert_eq!(out[6], b"0.1");
    }
}
