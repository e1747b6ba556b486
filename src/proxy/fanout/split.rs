//! MGET, MSET, DEL, UNLINK, EXISTS and TOUCH over several slots: one child command per slot
//! (a cluster node refuses a multi-key command across slots), merged in key order.
//!
//! The children join the client's per-node batches ([`super::super::batch`]): the children
//! for one node leave as one request and come back as one reply, so a fan-out over three
//! nodes costs three channel round trips, not one per slot. Each child follows its own
//! redirects, as any request does.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::super::batch::Batcher;
use super::super::forward::{error_reply, Pending};
use super::super::Proxy;
use crate::backend::Lane;
use crate::cluster::key_slot;
use crate::resp::{encode_request, request_bytes, write_integer_decimal, Proto, ReplyScanner};

/// How the children's replies merge.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// MSET: `+OK` once every child said so.
    Ok,
    /// MGET: the values, in the order of the keys.
    Values,
    /// DEL, UNLINK, EXISTS, TOUCH: the sum of the counts.
    Sum,
}

impl Merge {
    fn of(name: &[u8]) -> Merge {
        if name.eq_ignore_ascii_case(b"mset") {
            Merge::Ok
        } else if name.eq_ignore_ascii_case(b"mget") {
            Merge::Values
        } else {
            Merge::Sum
        }
    }

    /// Arguments per key: a key, or a key and its value.
    fn stride(self) -> usize {
        if self == Merge::Ok {
            2
        } else {
            1
        }
    }
}

/// The keys of one slot: their positions among all the keys, in order.
struct Group {
    slot: u16,
    /// The first key's position.
    first: usize,
    /// The positions of the group's other keys: usually none (random keys rarely share a
    /// slot), and an empty vector allocates nothing.
    more: Vec<usize>,
}

impl Group {
    fn new(slot: u16, first: usize) -> Group {
        Group {
            slot,
            first,
            more: Vec::new(),
        }
    }

    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(self.first).chain(self.more.iter().copied())
    }

    fn len(&self) -> usize {
        1 + self.more.len()
    }
}

/// Keys past which grouping indexes slots in a map instead of scanning the groups.
const LINEAR_GROUPING: usize = 32;

/// Groups the keys (with their values) by slot, keeping their order.
fn group_by_slot(args: &[Bytes], stride: usize) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<u16, usize> = HashMap::new();
    let many = args.len() / stride > LINEAR_GROUPING;
    for (n, i) in (1..args.len()).step_by(stride).enumerate() {
        let slot = key_slot(&args[i]);
        let found = if many {
            index.get(&slot).copied()
        } else {
            groups.iter().position(|g| g.slot == slot)
        };
        match found {
            Some(g) => groups[g].more.push(n),
            None => {
                if many {
                    index.insert(slot, groups.len());
                }
                groups.push(Group::new(slot, n));
            }
        }
    }
    groups
}

/// Forwards a split-key command: whole to its slot's node when every key shares the slot,
/// otherwise as children per slot, merged into one reply. The children join the client's
/// batches, so the children for one node leave together (with the client's other requests
/// for it) and come back as one reply.
pub fn split_keys(
    proxy: &Arc<Proxy>,
    batcher: &mut Batcher,
    args: &[Bytes],
    proto: Proto,
    lane: Lane,
) -> Pending {
    let merge = Merge::of(&args[0]);
    let stride = merge.stride();
    // MSET with a key but no value passes the table's arity (-3) but not Redis's own
    // check: the first key's node answers the arity error, as Redis would, instead of the
    // split cutting a pair past the end of the arguments.
    if !(args.len() - 1).is_multiple_of(stride) {
        return batcher.add(
            proxy,
            Some(key_slot(&args[1])),
            request_bytes(args),
            proto,
            lane,
        );
    }
    let groups = group_by_slot(args, stride);
    let stats = proxy.metrics.worker(lane.worker);
    for group in &groups {
        stats.slot_op(group.slot);
    }
    if let [only] = groups.as_slice() {
        return batcher.add(proxy, Some(only.slot), request_bytes(args), proto, lane);
    }
    stats.fanout(groups.len());
    // The children are encoded into one buffer and cut from it, so they share one
    // allocation; the estimate covers the headers (`*N`, `$len`) of realistic sizes.
    let estimate =
        args.iter().map(|a| a.len() + 16).sum::<usize>() + groups.len() * (args[0].len() + 24);
    let mut buf = BytesMut::with_capacity(estimate);
    let mut child: Vec<&[u8]> = Vec::new();
    let ends: Vec<usize> = groups
        .iter()
        .map(|group| {
            child.clear();
            child.push(&args[0]);
            for n in group.members() {
                let first = 1 + n * stride;
                child.extend(args[first..first + stride].iter().map(|a| &a[..]));
            }
            encode_request(&mut buf, &child);
            buf.len()
        })
        .collect();
    let buf = buf.freeze();
    let mut start = 0;
    let children: Vec<Pending> = groups
        .iter()
        .zip(ends)
        .map(|(group, end)| {
            let request = buf.slice(start..end);
            start = end;
            batcher.add(proxy, Some(group.slot), request, proto, lane)
        })
        .collect();
    let key_count = (args.len() - 1) / stride;
    Pending::Future(Box::pin(merge_children(
        proxy.clone(),
        merge,
        key_count,
        groups,
        children,
    )))
}

async fn merge_children(
    proxy: Arc<Proxy>,
    merge: Merge,
    key_count: usize,
    groups: Vec<Group>,
    children: Vec<Pending>,
) -> Bytes {
    let replies = match super::gather(&proxy, children).await {
        Ok(replies) => replies,
        Err(error) => return error,
    };
    match merge {
        Merge::Ok => Bytes::from_static(b"+OK\r\n"),
        Merge::Values => merge_values(key_count, &groups, &replies),
        Merge::Sum => {
            let total: i64 = replies.iter().filter_map(|r| integer_reply(r)).sum();
            let mut out = BytesMut::with_capacity(24);
            out.extend_from_slice(b":");
            write_integer_decimal(&mut out, total);
            out.extend_from_slice(b"\r\n");
            out.freeze()
        }
    }
}

/// The elements of an array reply, as raw bytes (already in the client's protocol: the
/// connection speaks it).
pub(in crate::proxy) fn array_elements(reply: &[u8]) -> Option<Vec<&[u8]>> {
    let header_end = reply.windows(2).position(|w| w == b"\r\n")?;
    if reply.first() != Some(&b'*') {
        return None;
    }
    let count = usize::try_from(crate::numbers::parse_u64(&reply[1..header_end])?).ok()?;
    let mut at = header_end + 2;
    let mut elements = Vec::with_capacity(count);
    for _ in 0..count {
        let len = ReplyScanner::default().scan(reply.get(at..)?).ok()??;
        elements.push(&reply[at..at + len]);
        at += len;
    }
    Some(elements)
}

/// MGET: every child's values put back at their keys' positions.
fn merge_values(key_count: usize, groups: &[Group], replies: &[Bytes]) -> Bytes {
    let mut values: Vec<&[u8]> = vec![&[]; key_count];
    for (group, reply) in groups.iter().zip(replies) {
        let Some(elements) = array_elements(reply) else {
            return error_reply("ERR slotproxy: unexpected MGET reply from node");
        };
        if elements.len() != group.len() {
            return error_reply("ERR slotproxy: unexpected MGET reply from node");
        }
        for (n, element) in group.members().zip(elements) {
            values[n] = element;
        }
    }
    let size = values.iter().map(|v| v.len()).sum::<usize>() + 24;
    let mut out = BytesMut::with_capacity(size);
    out.extend_from_slice(b"*");
    write_integer_decimal(&mut out, key_count as i64);
    out.extend_from_slice(b"\r\n");
    for value in values {
        out.extend_from_slice(value);
    }
    out.freeze()
}

fn integer_reply(reply: &[u8]) -> Option<i64> {
    let digits = reply.strip_prefix(b":")?.strip_suffix(b"\r\n")?;
    crate::numbers::parse_i64(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_back_to_their_keys() {
        let groups = vec![
            Group {
                slot: 1,
                first: 0,
                more: vec![2],
            },
            Group::new(2, 1),
        ];
        let replies = vec![
            Bytes::from_static(b"*2\r\n$1\r\na\r\n_\r\n"),
            Bytes::from_static(b"*1\r\n$1\r\nb\r\n"),
        ];
        assert_eq!(
            merge_values(3, &groups, &replies),
            &b"*3\r\n$1\r\na\r\n$1\r\nb\r\n_\r\n"[..]
        );
    }

    #[test]
    fn keys_group_by_slot_in_order() {
        let args: Vec<Bytes> = ["MGET", "{a}1", "{b}1", "{a}2"]
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect();
        let groups = group_by_slot(&args, 1);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].members().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(groups[1].members().collect::<Vec<_>>(), vec![1]);
        let many: Vec<Bytes> = std::iter::once(Bytes::from_static(b"DEL"))
            .chain((0..100).map(|i| Bytes::from(format!("{{k{}}}x{i}", i % 7))))
            .collect();
        let groups = group_by_slot(&many, 1);
        assert_eq!(groups.len(), 7);
        assert_eq!(
            groups[0].members().collect::<Vec<_>>(),
            (0..100).step_by(7).collect::<Vec<_>>()
        );
    }
}
