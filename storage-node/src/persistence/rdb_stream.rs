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
//! A group's PEL: count · per entry: its id as 16 raw big-endian bytes, delivery time (8
//! bytes, little-endian milliseconds), delivery count. Then its consumers: count · per
//! consumer: name, seen time (8 bytes), own PEL (count · raw ids). `entries read` is written
//! as an unsigned length, so the unknown counter (-1) is 2^64 - 1.

use std::collections::{BTreeMap, BTreeSet};

use super::listpack;
use super::rdb::{save_len, save_string_with, RdbError, Reader};
use crate::types::stream::group::{Consumer, ConsumerGroup, Pending};
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
    save_len(out, stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        save_string_with(out, name, compress);
        save_len(out, group.last_id.ms);
        save_len(out, group.last_id.seq);
        save_len(out, group.entries_read as u64);
        save_len(out, group.pel.len() as u64);
        for (id, pending) in &group.pel {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&pending.delivery_time.to_le_bytes());
            save_len(out, pending.delivery_count);
        }
        save_len(out, group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            save_string_with(out, name, compress);
            out.extend_from_slice(&consumer.seen_time.to_le_bytes());
            save_len(out, consumer.pel.len() as u64);
            for id in &consumer.pel {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
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
    // New ids must follow every stored one, or appends would break the order.
    if let Some(last) = stream.nodes.values().next_back() {
        if last.last_id() > stream.last_id {
            return Err(RdbError("stream last id is below its entries"));
        }
    }
    let live: u64 = stream.nodes.values().map(|n| n.live).sum();
    if live != stream.length {
        return Err(RdbError("stream length does not match its entries"));
    }
    let group_count = reader.read_len()?;
    for _ in 0..group_count {
        let name = reader.read_string()?;
        let group = load_group(reader)?;
        if stream.groups.insert(name, group).is_some() {
            return Err(RdbError("duplicated consumer group name"));
        }
    }
    Ok(Value::Stream(Box::new(stream)))
}

fn read_raw_id(reader: &mut Reader<'_>) -> Result<StreamId> {
    let raw: [u8; 16] = reader
        .read_bytes(16)?
        .try_into()
        .map_err(|_| RdbError("stream id"))?;
    Ok(StreamId::from_be_bytes(&raw))
}

fn read_ms_time(reader: &mut Reader<'_>) -> Result<u64> {
    let raw: [u8; 8] = reader
        .read_bytes(8)?
        .try_into()
        .map_err(|_| RdbError("millisecond time"))?;
    Ok(u64::from_le_bytes(raw))
}

/// One group after its name, as `rdbLoadObject` reads it: every PEL entry must belong to
/// exactly one consumer.
fn load_group(reader: &mut Reader<'_>) -> Result<ConsumerGroup> {
    let last_id = StreamId::new(reader.read_len()?, reader.read_len()?);
    let entries_read = reader.read_len()? as i64;
    let mut pel = BTreeMap::new();
    for _ in 0..reader.read_len()? {
        let id = read_raw_id(reader)?;
        let delivery_time = read_ms_time(reader)?;
        let delivery_count = reader.read_len()?;
        let pending = Pending {
            delivery_time,
            delivery_count,
            consumer: Vec::new(),
        };
        if pel.insert(id, pending).is_some() {
            return Err(RdbError("duplicated global PEL entry in a consumer group"));
        }
    }
    let mut owned = BTreeSet::new();
    let mut consumers = BTreeMap::new();
    for _ in 0..reader.read_len()? {
        let name = reader.read_string()?;
        let mut consumer = Consumer {
            seen_time: read_ms_time(reader)?,
            pel: BTreeSet::new(),
        };
        for _ in 0..reader.read_len()? {
            let id = read_raw_id(reader)?;
            let pending = pel
                .get_mut(&id)
                .ok_or(RdbError("consumer entry not found in group global PEL"))?;
            pending.consumer = name.clone();
            if !consumer.pel.insert(id) || !owned.insert(id) {
                return Err(RdbError("duplicated consumer PEL entry"));
            }
        }
        if consumers.insert(name, consumer).is_some() {
            return Err(RdbError("duplicate stream consumer"));
        }
    }
    // Redis checks this only under deep sanitization; an entry without an owner could not
    // be shown or claimed, so it is refused here.
    if owned.len() != pel.len() {
        return Err(RdbError("stream PEL entry without a consumer"));
    }
    Ok(ConsumerGroup {
        last_id,
        entries_read,
        pel,
        consumers,
    })
}
