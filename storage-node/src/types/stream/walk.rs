//! Walking a node's entries one at a time, in id order.
//!
//! A read asks for a few entries from some id on (XRANGE ... COUNT 10, XREADGROUP COUNT 1),
//! so, as Redis's stream iterator does, the walk reads each entry's header (flags and id)
//! first and decodes its fields only when the caller wants the entry: entries before the
//! start and tombstones are stepped over without building anything, and the walk stops where
//! the caller stops.

use crate::persistence::listpack::{self, Element, ListpackError};
use crate::types::CompactBytes;

use super::id::StreamId;
use super::node::{Cursor, Entry, Node, FLAG_DELETED, FLAG_SAMEFIELDS};

/// An entry's header: what is known before its fields are read.
pub struct Header {
    pub id: StreamId,
    pub deleted: bool,
    same_fields: bool,
    pairs: usize,
    flags_at: usize,
}

/// A walk over one node's entries.
pub struct Walk<'a> {
    node: &'a Node,
    cursor: Cursor<'a>,
}

/// A listpack element as the bytes Redis replies with.
pub(super) fn element_bytes(element: Element<'_>) -> CompactBytes {
    match element {
        Element::Int(v) => CompactBytes::new(slotproxy::numbers::IntegerText::new(v).as_bytes()),
        Element::Str(s) => CompactBytes::new(s),
    }
}

impl<'a> Walk<'a> {
    pub fn new(node: &'a Node) -> Walk<'a> {
        Walk {
            node,
            cursor: Cursor {
                lp: node.listpack(),
                pos: node.entries_at(),
            },
        }
    }

    /// The next entry's header (its fields are to be read or skipped next), None at the end.
    pub fn header(&mut self) -> Result<Option<Header>, ListpackError> {
        if self.cursor.done() {
            return Ok(None);
        }
        let flags_at = self.cursor.pos;
        let flags = self.cursor.int()?;
        let master = self.node.master_id;
        let ms = master.ms.wrapping_add(self.cursor.int()? as u64);
        let seq = master.seq.wrapping_add(self.cursor.int()? as u64);
        let same_fields = flags & FLAG_SAMEFIELDS != 0;
        let pairs = if same_fields {
            self.node.master_field_count()
        } else {
            usize::try_from(self.cursor.count()?)
                .map_err(|_| ListpackError("stream node: bad field count"))?
        };
        if pairs > self.cursor.lp.len() {
            return Err(ListpackError("stream node: bad field count"));
        }
        Ok(Some(Header {
            id: StreamId::new(ms, seq),
            deleted: flags & FLAG_DELETED != 0,
            same_fields,
            pairs,
            flags_at,
        }))
    }

    /// Reads the fields of the entry whose header was just read: the entry, decoded.
    pub fn entry(&mut self, header: &Header) -> Result<Entry, ListpackError> {
        let mut fields = Vec::with_capacity(2 * header.pairs);
        let mut master = self.master_fields(header)?;
        for _ in 0..header.pairs {
            let field = match master.as_mut() {
                Some(master) => master.next()?,
                None => self.cursor.next()?,
            };
            fields.push(element_bytes(field));
            fields.push(element_bytes(self.cursor.next()?));
        }
        self.end_of_entry(header)?;
        Ok(Entry {
            id: header.id,
            deleted: header.deleted,
            same_fields: header.same_fields,
            fields: fields.into_boxed_slice(),
            flags_at: header.flags_at,
        })
    }

    /// Steps over the fields of the entry whose header was just read.
    pub fn skip(&mut self, header: &Header) -> Result<(), ListpackError> {
        let elements = if header.same_fields {
            header.pairs
        } else {
            2 * header.pairs
        };
        for _ in 0..elements {
            self.cursor.next()?;
        }
        self.end_of_entry(header)
    }

    /// A cursor on the master field names when the entry uses them.
    fn master_fields(&self, header: &Header) -> Result<Option<Cursor<'a>>, ListpackError> {
        if !header.same_fields {
            return Ok(None);
        }
        let mut master = Cursor {
            lp: self.cursor.lp,
            pos: listpack::FIRST,
        };
        // Past the live count, the deleted count and the master field count.
        for _ in 0..3 {
            master.next()?;
        }
        Ok(Some(master))
    }

    /// Reads and checks the entry's trailing element count.
    fn end_of_entry(&mut self, header: &Header) -> Result<(), ListpackError> {
        let expected = if header.same_fields {
            header.pairs as i64 + 3
        } else {
            2 * header.pairs as i64 + 4
        };
        if self.cursor.int()? != expected {
            return Err(ListpackError("stream node: bad entry element count"));
        }
        Ok(())
    }
}

/// Live entries from `start` to `end` over a run of nodes, in id order
/// ([`super::StreamValue::range`]).
pub struct Range<'a> {
    nodes: std::collections::btree_map::Range<'a, StreamId, Node>,
    walk: Option<Walk<'a>>,
    start: StreamId,
    end: StreamId,
}

impl<'a> Range<'a> {
    pub(super) fn new(
        nodes: std::collections::btree_map::Range<'a, StreamId, Node>,
        start: StreamId,
        end: StreamId,
    ) -> Range<'a> {
        Range {
            nodes,
            walk: None,
            start,
            end,
        }
    }
}

impl Iterator for Range<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        loop {
            let walk = match &mut self.walk {
                Some(walk) => walk,
                None => self.walk.insert(Walk::new(self.nodes.next()?.1)),
            };
            // Listpacks are checked when built or loaded: a failure only ends that node's
            // walk, as the whole-node decoding did.
            let header = match walk.header() {
                Ok(Some(header)) => header,
                Ok(None) | Err(_) => {
                    self.walk = None;
                    continue;
                }
            };
            if header.id > self.end {
                // Ids only grow from here: nothing further is in range.
                self.walk = None;
                self.nodes = Default::default();
                return None;
            }
            let read = if header.deleted || header.id < self.start {
                walk.skip(&header).map(|()| None)
            } else {
                walk.entry(&header).map(Some)
            };
            match read {
                Ok(Some(entry)) => return Some(entry),
                Ok(None) => {}
                Err(_) => self.walk = None,
            }
        }
    }
}
