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

use super::listpack;
use super::rdb::{save_len, save_string_with, RdbError, Reader};
use crate::types::stream::node::Node;
use crate::types::stream::{StreamId, StreamValue};
use crate::types::Value;

pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

type Result<T> = std::result::Result<T, RdbError>;

/// Appends the encoding of a stream (without its type byte).
pub fn save_stream(out: &mut Vec<u8>, stream: &StreamValue, compress: bool) {
    save_len(out, stream.nodes.len() as u64);
    for (master_id, node) in &stream.nodes {
        save_string_with(out, &master_id.to_be_bytes(), compress);
        save_string_with(out, node.listpack(), compress);
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
        if listpack::at_end(&blob, listpack::FIRST) {
            return Err(RdbError("empty listpack inside stream"));
        }
        let node = Node::from_listpack(master_id, blob)
            .map_err(|_| RdbError("bad stream node listpack"))?;
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
