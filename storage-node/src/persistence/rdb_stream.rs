//! Streams in RDB files and DUMP payloads: `RDB_TYPE_STREAM_LISTPACKS_2` (19), as Redis 7.0
//! writes it.
//!
//! ```text
//! node count · per node: its 16-byte big-endian master id (string), its listpack (string)
//! length · last id (ms, seq) · first id (ms, seq) · max deleted id (ms, seq) · entries added
//! group count · per group: name, last id (ms, seq), entries read, PEL, consumers
//! ```
//!
//! A node's listpack: live count, deleted count, master field count, master fields, 0; then
//! per entry: flags, ms and seq differences from the master id, the field count (unless
//! SAMEFIELDS), fields and values (values only with SAMEFIELDS), and the entry's element
//! count. Lengths are RDB lengths, strings are saved as `rdbSaveRawString` saves them.
//!
//! The node has no consumer groups yet: it writes a group count of 0 and refuses payloads
//! that carry groups rather than dropping them.

use slotproxy::numbers::parse_i64;

use super::listpack;
use super::rdb::{save_len, save_string_with, RdbError, Reader};
use crate::types::stream::node::{Entry, Node, FLAG_DELETED, FLAG_SAMEFIELDS};
use crate::types::stream::{StreamId, StreamValue};
use crate::types::{CompactBytes, Value};

pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

type Result<T> = std::result::Result<T, RdbError>;

/// Appends the encoding of a stream (without its type byte).
pub fn save_stream(out: &mut Vec<u8>, stream: &StreamValue, compress: bool) {
    save_len(out, stream.nodes.len() as u64);
    for (master_id, node) in &stream.nodes {
        save_string_with(out, &master_id.to_be_bytes(), compress);
        let elements = node.listpack_elements();
        let blob = listpack::encode(elements.iter().map(Vec::as_slice));
        save_string_with(out, &blob, compress);
    }
    for n in [
        stream.length,
        stream.last_id.ms,
        stream.last_id.seq,
        stream.first_id.ms,
        stream.first_id.seq,
        stream.max_deleted_id.ms,
        stream.max_deleted_id.seq,
        stream.entries_added,
    ] {
        save_len(out, n);
    }
    // Consumer groups: none yet.
    save_len(out, 0);
}

/// Reads a stream saved as type 19.
pub fn load_stream(reader: &mut Reader<'_>) -> Result<Value> {
    let node_count = reader.read_len()?;
    let mut stream = StreamValue::new();
    for _ in 0..node_count {
        let key = reader.read_string()?;
        let key: [u8; 16] = key
            .as_slice()
            .try_into()
            .map_err(|_| RdbError("stream node key is not the size of a stream id"))?;
        let master_id = StreamId::from_be_bytes(&key);
        let blob = reader.read_string()?;
        let elements = listpack::decode(&blob).map_err(|_| RdbError("bad stream node listpack"))?;
        if elements.is_empty() {
            return Err(RdbError("empty listpack inside stream"));
        }
        let node = parse_node(master_id, &elements)?;
        if let Some((last_key, last)) = stream.nodes.iter().next_back() {
            if *last_key >= master_id || last.last_id() >= node.master_id {
                return Err(RdbError("stream nodes out of order"));
            }
        }
        stream.nodes.insert(master_id, node);
    }
    stream.length = reader.read_len()?;
    stream.last_id = StreamId::new(reader.read_len()?, reader.read_len()?);
    stream.first_id = StreamId::new(reader.read_len()?, reader.read_len()?);
    stream.max_deleted_id = StreamId::new(reader.read_len()?, reader.read_len()?);
    stream.entries_added = reader.read_len()?;
    let live: u64 = stream.nodes.values().map(|n| n.live).sum();
    if live != stream.length {
        return Err(RdbError("stream length does not match its entries"));
    }
    if reader.read_len()? != 0 {
        return Err(RdbError(
            "stream consumer groups are not supported by this node yet",
        ));
    }
    Ok(Value::Stream(Box::new(stream)))
}

/// Reads integers and strings off a node's elements in order.
struct Elements<'a> {
    items: std::slice::Iter<'a, Vec<u8>>,
}

impl<'a> Elements<'a> {
    fn bytes(&mut self) -> Result<&'a [u8]> {
        self.items
            .next()
            .map(Vec::as_slice)
            .ok_or(RdbError("stream node listpack ends early"))
    }

    fn int(&mut self) -> Result<i64> {
        parse_i64(self.bytes()?).ok_or(RdbError("stream node listpack: integer expected"))
    }

    fn count(&mut self) -> Result<u64> {
        u64::try_from(self.int()?).map_err(|_| RdbError("stream node listpack: negative count"))
    }
}

fn parse_node(master_id: StreamId, elements: &[Vec<u8>]) -> Result<Node> {
    let total = elements.len() as u64;
    let mut items = Elements {
        items: elements.iter(),
    };
    let live = items.count()?;
    let deleted = items.count()?;
    let master_count = items.count()?;
    if master_count > total {
        return Err(RdbError("stream node listpack: bad master field count"));
    }
    let mut master_fields = Vec::with_capacity(master_count as usize);
    for _ in 0..master_count {
        master_fields.push(CompactBytes::new(items.bytes()?));
    }
    if items.int()? != 0 {
        return Err(RdbError("stream node listpack: no master entry terminator"));
    }
    let mut entries: Vec<Entry> = Vec::new();
    let (mut live_seen, mut deleted_seen) = (0u64, 0u64);
    while items.items.len() > 0 {
        let flags = items.int()?;
        let ms = master_id.ms.wrapping_add(items.int()? as u64);
        let seq = master_id.seq.wrapping_add(items.int()? as u64);
        let id = StreamId::new(ms, seq);
        let same_fields = flags & FLAG_SAMEFIELDS != 0;
        let pairs = if same_fields {
            master_count
        } else {
            items.count()?
        };
        if pairs > total {
            return Err(RdbError("stream node listpack: bad field count"));
        }
        let mut fields = Vec::with_capacity(2 * pairs as usize);
        for i in 0..pairs as usize {
            let field = if same_fields {
                master_fields
                    .get(i)
                    .cloned()
                    .ok_or(RdbError("stream node listpack: bad field count"))?
            } else {
                CompactBytes::new(items.bytes()?)
            };
            fields.push(field);
            fields.push(CompactBytes::new(items.bytes()?));
        }
        let entry = Entry {
            id,
            deleted: flags & FLAG_DELETED != 0,
            same_fields,
            fields: fields.into_boxed_slice(),
        };
        if items.int()? != entry.lp_count() {
            return Err(RdbError("stream node listpack: bad entry element count"));
        }
        if entries.last().is_some_and(|last| last.id >= id) || id < master_id {
            return Err(RdbError("stream node listpack: ids out of order"));
        }
        if entry.deleted {
            deleted_seen += 1;
        } else {
            live_seen += 1;
        }
        entries.push(entry);
    }
    if live_seen != live || deleted_seen != deleted {
        return Err(RdbError(
            "stream node listpack: counts do not match its entries",
        ));
    }
    Ok(Node::from_parts(
        master_id,
        master_fields.into_boxed_slice(),
        (live, deleted),
        entries,
    ))
}
