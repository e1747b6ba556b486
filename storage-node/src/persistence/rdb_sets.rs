//! RDB encodings of sets and sorted sets, as Redis 7.0 writes them.
//!
//! - `intset` sets: type 11, one string holding the intset: encoding (u32 LE: 2, 4 or 8,
//!   the narrowest width every member fits), count (u32 LE), the members ascending, each
//!   little-endian in that width.
//! - `hashtable` sets: type 2, a length and the members as strings.
//! - `listpack` sorted sets: type 17, one string holding a listpack of `member, score, ...`
//!   in ascending order; scores are written as Redis's `d2string` does (`%.17g`, which the
//!   listpack stores as an integer when it reads as one).
//! - `skiplist` sorted sets: type 5 (ZSET_2), a length then, from the highest element down,
//!   each member as a string and its score as a little-endian binary double.
//!
//! Loading accepts those and also type 3 (the older ZSET, scores as text). Loaded values
//! take the encoding the default settings give; RESTORE refits them to the node's settings.

use slotproxy::resp::DoubleText;

use super::listpack;
use super::rdb::{save_len, save_string_with, RdbError, Reader};
use crate::types::zset::{ScoreTree, ZSetLimits};
use crate::types::{SetValue, Value, ZSetValue};

pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_LISTPACK: u8 = 17;

type Result<T> = std::result::Result<T, RdbError>;

/// Limits used while loading; RESTORE then refits the value to the node's settings.
const LOAD_MAX_INTSET: usize = usize::MAX;

pub fn set_type(set: &SetValue) -> u8 {
    match set {
        SetValue::Ints(_) => TYPE_SET_INTSET,
        SetValue::Table(_) => TYPE_SET,
    }
}

pub fn zset_type(zset: &ZSetValue) -> u8 {
    if zset.is_listpack() {
        TYPE_ZSET_LISTPACK
    } else {
        TYPE_ZSET_2
    }
}

/// The bytes of an intset holding `members` (ascending).
pub fn encode_intset(members: &[i64]) -> Vec<u8> {
    let width: usize = if members.iter().all(|&n| i16::try_from(n).is_ok()) {
        2
    } else if members.iter().all(|&n| i32::try_from(n).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * members.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for &n in members {
        out.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    out
}

/// The members of an intset blob, checked as Redis's `intsetValidateIntegrity` does.
pub fn decode_intset(blob: &[u8]) -> Result<Vec<i64>> {
    let bad = RdbError("invalid intset");
    if blob.len() < 8 {
        return Err(bad);
    }
    let width = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let count = u32::from_le_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || blob.len() - 8 != width.saturating_mul(count) || count == 0 {
        return Err(bad);
    }
    let mut members = Vec::with_capacity(count);
    for chunk in blob[8..].chunks_exact(width) {
        let value = match width {
            2 => i64::from(i16::from_le_bytes([chunk[0], chunk[1]])),
            4 => i64::from(i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])),
            _ => {
                let mut raw = [0u8; 8];
                raw.copy_from_slice(chunk);
                i64::from_le_bytes(raw)
            }
        };
        if members.last().is_some_and(|&last| last >= value) {
            return Err(bad);
        }
        members.push(value);
    }
    Ok(members)
}

pub fn save_set(out: &mut Vec<u8>, set: &SetValue, compress: bool) {
    match set {
        SetValue::Ints(members) => save_string_with(out, &encode_intset(members), compress),
        SetValue::Table(table) => {
            save_len(out, table.len() as u64);
            for member in table.iter() {
                save_string_with(out, member, compress);
            }
        }
    }
}

pub fn save_zset(out: &mut Vec<u8>, zset: &ZSetValue, compress: bool) {
    if zset.is_listpack() {
        // Scores as Redis writes them into a listpack (`d2string`).
        let elements: Vec<(&[u8], DoubleText)> = zset
            .tree
            .iter()
            .map(|(m, s)| (m, DoubleText::new(s)))
            .collect();
        let blob = listpack::encode(elements.iter().flat_map(|(m, s)| [*m, s.as_bytes()]));
        save_string_with(out, &blob, compress);
    } else {
        save_len(out, zset.len() as u64);
        for (member, score) in zset.tree.iter_rev_from(0) {
            save_string_with(out, member, compress);
            out.extend_from_slice(&score.to_le_bytes());
        }
    }
}

pub fn load(type_byte: u8, reader: &mut Reader<'_>) -> Result<Value> {
    match type_byte {
        TYPE_SET => {
            let len = reader.read_len()?;
            if len == 0 {
                return Err(RdbError("empty set"));
            }
            let mut set = SetValue::default();
            for _ in 0..len {
                let member = reader.read_string()?;
                if !set.insert(&member, LOAD_MAX_INTSET) {
                    return Err(RdbError("duplicate set member"));
                }
            }
            Ok(Value::Set(Box::new(set)))
        }
        TYPE_SET_INTSET => {
            let members = decode_intset(&reader.read_string()?)?;
            Ok(Value::Set(Box::new(SetValue::Ints(members))))
        }
        TYPE_ZSET_LISTPACK => {
            let blob = reader.read_string()?;
            let elements = listpack::decode(&blob).map_err(|_| RdbError("invalid listpack"))?;
            if elements.is_empty() || elements.len() % 2 != 0 {
                return Err(RdbError("invalid sorted set listpack"));
            }
            let mut tree = ScoreTree::new();
            for pair in elements.chunks_exact(2) {
                let score = slotproxy::numbers::parse_f64(&pair[1])
                    .ok_or(RdbError("invalid sorted set score"))?;
                if tree.set_score(&pair[0], score).is_some() {
                    return Err(RdbError("duplicate sorted set member"));
                }
            }
            Ok(Value::ZSet(Box::new(ZSetValue::from_tree(
                tree,
                ZSetLimits::default(),
            ))))
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let len = reader.read_len()?;
            if len == 0 {
                return Err(RdbError("empty sorted set"));
            }
            let mut tree = ScoreTree::new();
            for _ in 0..len {
                let member = reader.read_string()?;
                let score = if type_byte == TYPE_ZSET_2 {
                    let mut raw = [0u8; 8];
                    raw.copy_from_slice(reader.read_bytes(8)?);
                    f64::from_le_bytes(raw)
                } else {
                    let n = reader.read_u8()?;
                    match n {
                        253 => f64::NAN,
                        254 => f64::INFINITY,
                        255 => f64::NEG_INFINITY,
                        _ => slotproxy::numbers::parse_f64(reader.read_bytes(u64::from(n))?)
                            .ok_or(RdbError("invalid sorted set score"))?,
                    }
                };
                if score.is_nan() {
                    return Err(RdbError("NaN score"));
                }
                if tree.set_score(&member, score).is_some() {
                    return Err(RdbError("duplicate sorted set member"));
                }
            }
            Ok(Value::ZSet(Box::new(ZSetValue::from_tree(
                tree,
                ZSetLimits::default(),
            ))))
        }
        _ => Err(RdbError("value type not supported by this node")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intsets_use_the_narrowest_width() {
        assert_eq!(
            encode_intset(&[-5, 1, 2, 3, 70000]),
            b"\x04\x00\x00\x00\x05\x00\x00\x00\xfb\xff\xff\xff\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x70\x11\x01\x00"
        );
        assert_eq!(&encode_intset(&[1, 2])[..4], b"\x02\x00\x00\x00");
        assert_eq!(
            &encode_intset(&[1, 5_000_000_000])[..4],
            b"\x08\x00\x00\x00"
        );
        let members = vec![-9, 0, 40000, 5_000_000_000];
        assert_eq!(decode_intset(&encode_intset(&members)).unwrap(), members);
        assert!(decode_intset(b"\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x01\x00").is_err());
        assert!(decode_intset(b"\x03\x00\x00\x00\x00\x00\x00\x00").is_err());
    }
}
