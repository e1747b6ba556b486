//! The list type.
//!
//! Elements live in a ring buffer of compact strings, so pushes and pops at both ends are
//! O(1) and an index is O(1) too. Redis 7.0 stores every list as a quicklist (a linked list
//! of listpack nodes) and OBJECT ENCODING always says `quicklist`; the node layout only
//! becomes visible in DUMP payloads, for which [`ListValue::quicklist_nodes`] cuts the
//! elements the way a list built by tail pushes is cut under `list-max-listpack-size`.

use std::collections::VecDeque;

use super::CompactBytes;

/// A list value. Never empty while stored in the keyspace.
#[derive(Clone, Debug, Default)]
pub struct ListValue {
    pub items: VecDeque<CompactBytes>,
}

/// Node sizes (bytes) for `list-max-listpack-size` -1 .. -5 (Redis's `optimization_level`).
const SIZE_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// A count-limited node never grows past this many bytes (Redis's `SIZE_SAFETY_LIMIT`).
const SIZE_SAFETY_LIMIT: usize = 8192;
/// Redis's estimate of the bytes one entry adds besides its data.
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// Elements this big get a node of their own (a "plain" node).
pub const PLAIN_THRESHOLD: usize = 1 << 30;
/// Redis clamps the fill factor to this range (`quicklistSetFill`).
const FILL_MAX: i64 = 1 << 15;
const FILL_MIN: i64 = -5;

/// Bytes of an empty listpack (header and terminator).
const EMPTY_LISTPACK: usize = 7;

impl ListValue {
    pub fn new() -> ListValue {
        ListValue::default()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Turns a possibly negative index into a position, if it is inside the list.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.items.len() as i64;
        let index = if index < 0 { len + index } else { index };
        (0..len).contains(&index).then_some(index as usize)
    }

    /// The inclusive range `start..=stop` (negative indexes from the end) clamped to the
    /// list as LRANGE and LTRIM read it, or None when it selects nothing.
    pub fn clamp_range(&self, start: i64, stop: i64) -> Option<(usize, usize)> {
        let len = self.items.len() as i64;
        let mut start = if start < 0 { len + start } else { start };
        let mut stop = if stop < 0 { len + stop } else { stop };
        if start < 0 {
            start = 0;
        }
        if start > stop || start >= len {
            return None;
        }
        if stop >= len {
            stop = len - 1;
        }
        Some((start as usize, stop as usize))
    }

    pub fn memory_usage(&self) -> usize {
        let slots = self.items.capacity() * std::mem::size_of::<CompactBytes>();
        slots
            + self
                .items
                .iter()
                .map(CompactBytes::heap_size)
                .sum::<usize>()
    }

    /// The elements cut into quicklist nodes as Redis cuts a list built by tail pushes with
    /// fill factor `fill` (`_quicklistNodeAllowInsert`): each node is a slice of
    /// consecutive positions `(start, end)`; `plain` nodes hold one huge element.
    pub fn quicklist_nodes(&self, fill: i64) -> Vec<QuicklistNode> {
        let fill = fill.clamp(FILL_MIN, FILL_MAX);
        let mut nodes: Vec<QuicklistNode> = Vec::new();
        let mut open: Option<(QuicklistNode, usize)> = None;
        for (i, item) in self.items.iter().enumerate() {
            let len = item.len();
            if len >= PLAIN_THRESHOLD {
                if let Some((node, _)) = open.take() {
                    nodes.push(node);
                }
                nodes.push(QuicklistNode {
                    start: i,
                    end: i + 1,
                    plain: true,
                });
                continue;
            }
            let entry_bytes = listpack_entry_size(item);
            match &mut open {
                Some((node, bytes)) if allow_insert(*bytes, node.end - node.start, fill, len) => {
                    node.end = i + 1;
                    *bytes += entry_bytes;
                }
                _ => {
                    if let Some((node, _)) = open.take() {
                        nodes.push(node);
                    }
                    let node = QuicklistNode {
                        start: i,
                        end: i + 1,
                        plain: false,
                    };
                    open = Some((node, EMPTY_LISTPACK + entry_bytes));
                }
            }
        }
        if let Some((node, _)) = open {
            nodes.push(node);
        }
        nodes
    }
}

/// A run of list positions stored as one quicklist node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicklistNode {
    pub start: usize,
    pub end: usize,
    pub plain: bool,
}

/// Whether a node of `node_bytes` listpack bytes holding `count` entries takes one more
/// element of `len` bytes.
fn allow_insert(node_bytes: usize, count: usize, fill: i64, len: usize) -> bool {
    let new_size = node_bytes + len + SIZE_ESTIMATE_OVERHEAD;
    if fill < 0 {
        let level = (-fill - 1) as usize;
        if let Some(&limit) = SIZE_LEVELS.get(level) {
            return new_size <= limit;
        }
    }
    new_size <= SIZE_SAFETY_LIMIT && (count as i64) < fill
}

/// The bytes one element takes inside a listpack (encoding, data and back length).
fn listpack_entry_size(item: &[u8]) -> usize {
    let encoded = crate::persistence::listpack::encoded_entry_len(item);
    encoded + crate::persistence::listpack::backlen_size(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&[u8]]) -> ListValue {
        ListValue {
            items: items.iter().map(|i| CompactBytes::new(i)).collect(),
        }
    }

    #[test]
    fn ranges_clamp_like_lrange() {
        let l = list(&[b"a", b"b", b"c"]);
        assert_eq!(l.clamp_range(0, -1), Some((0, 2)));
        assert_eq!(l.clamp_range(-100, 100), Some((0, 2)));
        assert_eq!(l.clamp_range(2, 1), None);
        assert_eq!(l.clamp_range(3, 5), None);
        assert_eq!(l.position(-1), Some(2));
        assert_eq!(l.position(3), None);
    }

    #[test]
    fn nodes_follow_the_fill_factor() {
        let items: Vec<Vec<u8>> = (0..10).map(|i| vec![b'x'; 100 + i]).collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let l = list(&refs);
        assert_eq!(l.quicklist_nodes(-2).len(), 1);
        assert_eq!(l.quicklist_nodes(3).len(), 4);
        assert_eq!(l.quicklist_nodes(0).len(), 10);
    }
}
