//! The RDB encoding of values (RDB version 10, as Redis 7.0 writes it).
//!
//! # What is written
//! - Lengths: `00xxxxxx` (6 bits), `01xxxxxx xxxxxxxx` (14 bits), `0x80` + 4 bytes and
//!   `0x81` + 8 bytes (big endian). `11xxxxxx` marks a special string encoding instead.
//! - Strings, chosen as `rdbSaveRawString` does: a canonical integer of at most 11 bytes that
//!   fits 8/16/32 bits becomes `0xC0`/`0xC1`/`0xC2` + little-endian bytes; else a string of
//!   more than 20 bytes that LZF shrinks by at least 4 bytes becomes `0xC3` + compressed
//!   length + original length + data; else length + bytes.
//! - Objects: a type byte (0 for strings) then the encoded value.
//!
//! Reading accepts all of that, and reports anything else as [`RdbError`]. Each data type
//! adds one arm to the matches in [`save_object`], [`object_type`] and [`load_object`];
//! they have no catch-all on purpose, so a new `Value` variant does not compile until it
//! has its encoding here.

use std::fmt;

use std::collections::HashSet;

use super::{listpack, lzf};
use super::{rdb_module, rdb_sets, rdb_stream};
use crate::types::{CompactBytes, HashLimits, HashValue, ListValue, StringValue, Value};

/// The RDB version Redis 7.0 writes and the newest it reads.
pub const RDB_VERSION: u16 = 10;

/// Object type bytes.
pub const TYPE_STRING: u8 = 0;
/// A list as a plain sequence of strings (older versions; Redis 7.0 still loads it).
pub const TYPE_LIST: u8 = 1;
/// A hash as field/value strings (Redis writes it for `hashtable`-encoded hashes).
pub const TYPE_HASH: u8 = 4;
/// A hash as one listpack of field, value, field, value ... (`listpack`-encoded hashes).
pub const TYPE_HASH_LISTPACK: u8 = 16;
/// A list as quicklist nodes, each a listpack or one plain element (Redis 7.0's lists).
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;

/// Quicklist node containers.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// The settings that shape encodings: how lists are cut into nodes, and which hashes are
/// loaded as `listpack` or `hashtable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encodings {
    pub list_fill: i64,
    pub hash: HashLimits,
    /// `rdbcompression`: whether long strings may be LZF-compressed (DUMP and RDB files).
    pub compress: bool,
}

impl Default for Encodings {
    fn default() -> Self {
        Encodings {
            list_fill: -2,
            hash: HashLimits::default(),
            compress: true,
        }
    }
}

impl Encodings {
    pub fn from_config(config: &crate::config::Config) -> Encodings {
        Encodings {
            list_fill: config.list_max_listpack_size,
            hash: config.hash_limits(),
            compress: config.rdbcompression,
        }
    }
}

/// Length prefixes.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const LEN_ENCODED: u8 = 3;

/// Special string encodings (the low 6 bits after a `11` prefix).
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Redis does not try LZF on strings this short or shorter.
const LZF_MIN_LEN: usize = 20;
/// Integer encodings are only tried on strings up to this long.
const INT_ENCODING_MAX_LEN: usize = 11;

/// Malformed or unsupported RDB data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdbError(pub &'static str);

impl fmt::Display for RdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for RdbError {}

type Result<T> = std::result::Result<T, RdbError>;

/// Whether Redis 7.0 knows `byte` as an object type (`rdbIsObjectType`).
pub fn is_object_type(byte: u8) -> bool {
    matches!(byte, 0..=7 | 9..=19)
}

// ---------------------------------------------------------------------------------------
// Writing

/// Appends an RDB length.
pub fn save_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push((LEN_6BIT << 6) | len as u8);
    } else if len < 1 << 14 {
        out.push((LEN_14BIT << 6) | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(LEN_32BIT);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// The 8/16/32-bit integer encoding of `value`, if it fits one.
fn encode_integer(value: i64, out: &mut Vec<u8>) -> bool {
    let special = LEN_ENCODED << 6;
    if let Ok(v) = i8::try_from(value) {
        out.push(special | ENC_INT8);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i16::try_from(value) {
        out.push(special | ENC_INT16);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(value) {
        out.push(special | ENC_INT32);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// Appends a string the way `rdbSaveRawString` chooses its encoding (LZF allowed).
pub fn save_string(out: &mut Vec<u8>, bytes: &[u8]) {
    save_string_with(out, bytes, true)
}

/// [`save_string`], with LZF compression only if `compress` (`rdbcompression`).
pub fn save_string_with(out: &mut Vec<u8>, bytes: &[u8], compress: bool) {
    if bytes.len() <= INT_ENCODING_MAX_LEN {
        if let Some(value) = slotproxy::numbers::parse_i64(bytes) {
            if encode_integer(value, out) {
                return;
            }
        }
    }
    if compress && bytes.len() > LZF_MIN_LEN {
        // Compression must save at least 4 bytes to be worth it.
        if let Some(packed) = lzf::compress(bytes, bytes.len() - 4) {
            out.push((LEN_ENCODED << 6) | ENC_LZF);
            save_len(out, packed.len() as u64);
            save_len(out, bytes.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    save_len(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The type byte that precedes `value`.
pub fn object_type(value: &Value) -> u8 {
    match value {
        Value::Str(_) => TYPE_STRING,
        Value::Set(s) => rdb_sets::set_type(s),
        Value::ZSet(z) => rdb_sets::zset_type(z),
        Value::List(_) => TYPE_LIST_QUICKLIST_2,
        Value::Hash(h) if h.is_small() => TYPE_HASH_LISTPACK,
        Value::Hash(_) => TYPE_HASH,
        Value::Bloom(_) => rdb_module::TYPE_MODULE_2,
        Value::Stream(_) => rdb_stream::TYPE_STREAM_LISTPACKS_2,
    }
}

/// Appends the encoding of `value` (without its type byte).
pub fn save_object(out: &mut Vec<u8>, value: &Value, encodings: &Encodings) {
    match value {
        Value::Str(s) => save_string_with(out, s.as_slice(), encodings.compress),
        Value::Set(s) => rdb_sets::save_set(out, s, encodings.compress),
        Value::ZSet(z) => rdb_sets::save_zset(out, z, encodings.compress),
        Value::List(list) => save_list(out, list, encodings),
        Value::Hash(hash) if hash.is_small() => {
            let blob = listpack::encode(hash.iter().flat_map(|(f, v)| [f, v]));
            save_string_with(out, &blob, encodings.compress);
        }
        Value::Hash(hash) => {
            save_len(out, hash.len() as u64);
            for (field, value) in hash.iter() {
                save_string_with(out, field, encodings.compress);
                save_string_with(out, value, encodings.compress);
            }
        }
        Value::Bloom(bloom) => rdb_module::save_bloom(out, bloom, encodings.compress),
        Value::Stream(stream) => rdb_stream::save_stream(out, stream, encodings.compress),
    }
}

/// A quicklist: node count, then each node's container and its listpack (or element).
fn save_list(out: &mut Vec<u8>, list: &ListValue, encodings: &Encodings) {
    let nodes = list.quicklist_nodes(encodings.list_fill);
    save_len(out, nodes.len() as u64);
    for node in nodes {
        let items = list.items.range(node.start..node.end);
        if node.plain {
            save_len(out, CONTAINER_PLAIN);
            for item in items {
                save_string_with(out, item, encodings.compress);
            }
        } else {
            save_len(out, CONTAINER_PACKED);
            save_string_with(
                out,
                &listpack::encode(items.map(CompactBytes::as_slice)),
                encodings.compress,
            );
        }
    }
}

/// The length of `value`'s encoding, as DEBUG OBJECT's `serializedlength`.
pub fn serialized_len(value: &Value, encodings: &Encodings) -> usize {
    let mut out = Vec::new();
    save_object(&mut out, value, encodings);
    out.len()
}

// ---------------------------------------------------------------------------------------
// Reading

/// A cursor over RDB bytes; every read is bounds-checked.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

/// A decoded length prefix.
enum Len {
    Plain(u64),
    /// `11xxxxxx`: a special string encoding follows.
    Encoded(u8),
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn read_bytes(&mut self, n: u64) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(RdbError("unexpected end of data"));
        }
        let n = n as usize;
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    pub fn read_u8(&mut self) -> Result<u8> {
        Ok(self.read_bytes(1)?[0])
    }

    fn read_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut array = [0u8; N];
        array.copy_from_slice(self.read_bytes(N as u64)?);
        Ok(array)
    }

    fn read_len_or_encoding(&mut self) -> Result<Len> {
        let first = self.read_u8()?;
        Ok(match first >> 6 {
            LEN_ENCODED => Len::Encoded(first & 0x3f),
            LEN_6BIT => Len::Plain((first & 0x3f) as u64),
            LEN_14BIT => Len::Plain((((first & 0x3f) as u64) << 8) | self.read_u8()? as u64),
            _ if first == LEN_32BIT => Len::Plain(u32::from_be_bytes(self.read_array()?) as u64),
            _ if first == LEN_64BIT => Len::Plain(u64::from_be_bytes(self.read_array()?)),
            _ => return Err(RdbError("unknown length encoding")),
        })
    }

    /// Reads a plain length (a special encoding here is an error).
    pub fn read_len(&mut self) -> Result<u64> {
        match self.read_len_or_encoding()? {
            Len::Plain(len) => Ok(len),
            Len::Encoded(_) => Err(RdbError("encoded value where a length was expected")),
        }
    }

    /// Reads a string in any encoding Redis writes.
    pub fn read_string(&mut self) -> Result<Vec<u8>> {
        match self.read_len_or_encoding()? {
            Len::Plain(len) => Ok(self.read_bytes(len)?.to_vec()),
            Len::Encoded(ENC_INT8) => Ok(i8::from_le_bytes(self.read_array()?)
                .to_string()
                .into_bytes()),
            Len::Encoded(ENC_INT16) => Ok(i16::from_le_bytes(self.read_array()?)
                .to_string()
                .into_bytes()),
            Len::Encoded(ENC_INT32) => Ok(i32::from_le_bytes(self.read_array()?)
                .to_string()
                .into_bytes()),
            Len::Encoded(ENC_LZF) => self.read_lzf_string(),
            Len::Encoded(_) => Err(RdbError("unknown string encoding")),
        }
    }

    fn read_lzf_string(&mut self) -> Result<Vec<u8>> {
        let compressed_len = self.read_len()?;
        let len = self.read_len()?;
        let compressed = self.read_bytes(compressed_len)?;
        // Redis checks only that the output length matches; when it expects nothing, a stream
        // that fails to decompress still "produced" its 0 bytes, so it loads an empty string.
        if len == 0 {
            return Ok(Vec::new());
        }
        // No LZF chunk expands more than 264 bytes from 3, so a bigger claim is corrupt;
        // checking first avoids allocating what a hostile length asks for.
        if len > (compressed.len() as u64).saturating_mul(MAX_EXPANSION) {
            return Err(RdbError("invalid LZF compressed string"));
        }
        match lzf::decompress(compressed, len as usize) {
            Ok(out) if out.len() as u64 == len => Ok(out),
            _ => Err(RdbError("invalid LZF compressed string")),
        }
    }
}

/// An upper bound of LZF's output bytes per input byte.
const MAX_EXPANSION: u64 = 90;

/// Reads the value of an object whose type byte was `type_byte`. Types Redis 7.0 only reads
/// for compatibility with old files (zipmap, ziplist encodings) are refused.
pub fn load_object(type_byte: u8, reader: &mut Reader<'_>, encodings: &Encodings) -> Result<Value> {
    match type_byte {
        TYPE_STRING => {
            // Like Redis's `tryObjectEncoding`, the encoding (int/embstr/raw) follows from
            // the content, which is what a compact string reports.
            let bytes = reader.read_string()?;
            Ok(Value::Str(StringValue::new(&bytes)))
        }
        rdb_sets::TYPE_SET
        | rdb_sets::TYPE_ZSET
        | rdb_sets::TYPE_ZSET_2
        | rdb_sets::TYPE_SET_INTSET
        | rdb_sets::TYPE_ZSET_LISTPACK => rdb_sets::load(type_byte, reader),
        TYPE_LIST => {
            let len = reader.read_len()?;
            let mut list = ListValue::new();
            for _ in 0..len {
                list.items
                    .push_back(CompactBytes::new(&reader.read_string()?));
            }
            non_empty_list(list)
        }
        TYPE_LIST_QUICKLIST_2 => load_quicklist(reader),
        TYPE_HASH => {
            let len = reader.read_len()?;
            let mut pairs = Vec::new();
            for _ in 0..len {
                let field = reader.read_string()?;
                let value = reader.read_string()?;
                pairs.push((field, value));
            }
            build_hash(pairs, &encodings.hash, false)
        }
        TYPE_HASH_LISTPACK => {
            let blob = reader.read_string()?;
            let elements = listpack::decode(&blob).map_err(|_| RdbError("bad hash listpack"))?;
            if elements.len() % 2 == 1 {
                return Err(RdbError("hash listpack with an odd element count"));
            }
            let mut elements = elements.into_iter();
            let mut pairs = Vec::new();
            while let (Some(field), Some(value)) = (elements.next(), elements.next()) {
                pairs.push((field, value));
            }
            build_hash(pairs, &encodings.hash, true)
        }
        rdb_module::TYPE_MODULE_2 => rdb_module::load_module(reader),
        rdb_stream::TYPE_STREAM_LISTPACKS_2 => rdb_stream::load_stream(reader),
        t if is_object_type(t) => Err(RdbError("value type not supported by this node")),
        _ => Err(RdbError("unknown object type")),
    }
}

fn non_empty_list(list: ListValue) -> Result<Value> {
    if list.is_empty() {
        return Err(RdbError("empty list"));
    }
    Ok(Value::List(Box::new(list)))
}

fn load_quicklist(reader: &mut Reader<'_>) -> Result<Value> {
    let nodes = reader.read_len()?;
    let mut list = ListValue::new();
    for _ in 0..nodes {
        let container = reader.read_len()?;
        let blob = reader.read_string()?;
        match container {
            CONTAINER_PLAIN => list.items.push_back(CompactBytes::new(&blob)),
            CONTAINER_PACKED => {
                let elements =
                    listpack::decode(&blob).map_err(|_| RdbError("bad quicklist node"))?;
                // Redis skips empty nodes.
                list.items
                    .extend(elements.iter().map(|e| CompactBytes::new(e)));
            }
            _ => return Err(RdbError("unknown quicklist container")),
        }
    }
    non_empty_list(list)
}

/// A hash from loaded pairs, in the encoding Redis would choose: a listpack payload stays a
/// listpack unless it has too many pairs; a plain hash payload becomes a listpack when it
/// is within both limits. Duplicate fields and empty hashes are corrupt data.
fn build_hash(
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    limits: &HashLimits,
    from_listpack: bool,
) -> Result<Value> {
    if pairs.is_empty() {
        return Err(RdbError("empty hash"));
    }
    let too_long = |(f, v): &(Vec<u8>, Vec<u8>)| {
        f.len() > limits.max_listpack_value || v.len() > limits.max_listpack_value
    };
    let big =
        pairs.len() > limits.max_listpack_entries || (!from_listpack && pairs.iter().any(too_long));
    // Redis refuses duplicate fields when it builds a hash table; into a listpack it copies
    // them unchecked (unless sanitizing payloads). Here the first occurrence wins.
    let mut seen = HashSet::with_capacity(pairs.len());
    let duplicates = pairs
        .iter()
        .any(|(field, _)| !seen.insert(field.as_slice()));
    if duplicates && big {
        return Err(RdbError("duplicate hash fields"));
    }
    let mut hash = HashValue::new();
    if big {
        hash.convert_to_big();
    }
    // Inserted without the limits so a listpack payload keeps its encoding whatever its
    // value lengths, as in Redis.
    let unlimited = HashLimits {
        max_listpack_entries: usize::MAX,
        max_listpack_value: usize::MAX,
    };
    for (field, value) in &pairs {
        if !hash.contains(field) {
            hash.set(field, value, &unlimited);
        }
    }
    Ok(Value::Hash(Box::new(hash)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        save_string(&mut out, bytes);
        out
    }

    fn decoded(data: &[u8]) -> Result<Vec<u8>> {
        Reader::new(data).read_string()
    }

    #[test]
    fn lengths_round_trip_in_each_width() {
        for (len, width) in [
            (0u64, 1),
            (63, 1),
            (64, 2),
            (16383, 2),
            (16384, 5),
            (u32::MAX as u64, 5),
            (u32::MAX as u64 + 1, 9),
            (u64::MAX, 9),
        ] {
            let mut out = Vec::new();
            save_len(&mut out, len);
            assert_eq!(out.len(), width, "{len}");
            assert_eq!(Reader::new(&out).read_len(), Ok(len));
        }
    }

    #[test]
    fn strings_are_encoded_as_redis_chooses() {
        assert_eq!(encoded(b"hello"), b"\x05hello");
        assert_eq!(encoded(b""), b"\x00");
        assert_eq!(encoded(b"5"), b"\xc0\x05");
        assert_eq!(encoded(b"-128"), b"\xc0\x80");
        assert_eq!(encoded(b"200"), b"\xc1\xc8\x00");
        assert_eq!(encoded(b"-32769"), b"\xc2\xff\x7f\xff\xff");
        assert_eq!(encoded(b"2147483647"), b"\xc2\xff\xff\xff\x7f");
        // Too big for 32 bits, non-canonical, or longer than 11 bytes: stored verbatim.
        assert_eq!(encoded(b"123456789012"), b"\x0c123456789012");
        assert_eq!(encoded(b"007"), b"\x03007");
        assert_eq!(encoded(b"-0"), b"\x02-0");
        assert_eq!(
            encoded(&[b'a'; 50]),
            b"\xc3\x09\x32\x01aa\xe0\x25\x00\x01aa"
        );
        // 20 bytes are never compressed.
        assert_eq!(encoded(&[b'a'; 20])[0], 20);
    }

    #[test]
    fn strings_round_trip() {
        let long = b"abcdefgh".repeat(1000);
        let values: Vec<&[u8]> = vec![
            b"",
            b"x",
            b"0",
            b"-1",
            b"127",
            b"128",
            b"32767",
            b"-32768",
            b"65536",
            b"-2147483648",
            b"2147483648",
            b"\x00\xff binary",
            &long,
        ];
        for value in values {
            assert_eq!(decoded(&encoded(value)).unwrap(), value);
        }
    }

    #[test]
    fn malformed_strings_are_errors() {
        for bad in [
            &b""[..],
            b"\x05hel",
            b"\x40",
            b"\x82",
            b"\x80\x00\x00",
            b"\xc0",
            b"\xc1\x01",
            b"\xc2\x01\x02\x03",
            b"\xc4",
            b"\xc3\x05\x05ab",
            b"\xc3\x02\x05\x20h",
            b"\xc3\x00\x01",
            b"\xc3\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff\x00",
            b"\x81\xff\xff\xff\xff\xff\xff\xff\xff",
        ] {
            assert!(decoded(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn lzf_with_zero_length_loads_empty_like_redis() {
        assert_eq!(decoded(b"\xc3\x02\x00\x20h").unwrap(), b"");
        assert_eq!(decoded(b"\xc3\x00\x00").unwrap(), b"");
    }

    #[test]
    fn objects_check_their_type_byte() {
        let mut reader = Reader::new(b"\x05hello");
        let e = Encodings::default();
        assert!(matches!(
            load_object(TYPE_STRING, &mut reader, &e),
            Ok(Value::Str(_))
        ));
        assert!(load_object(1, &mut Reader::new(b"\x05hello"), &e).is_err());
        assert!(load_object(2, &mut Reader::new(b"\x00"), &e).is_err());
        assert!(load_object(8, &mut Reader::new(b"\x05hello"), &e).is_err());
        assert!(load_object(20, &mut Reader::new(b"\x05hello"), &e).is_err());
    }
}
