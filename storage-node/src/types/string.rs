//! The string type and the encodings Redis reports for it (`int`, `embstr`, `raw`).

use super::CompactBytes;

/// Longest string Redis stores as `embstr`.
const EMBSTR_MAX: usize = 44;

/// A string value.
///
/// Strings written whole (SET, INCR, ...) are kept compact and their encoding is derived from
/// the content as Redis's `tryObjectEncoding` would. Strings changed in place (APPEND,
/// SETRANGE, SETBIT, ...) become growable and report `raw`, as they do in Redis.
#[derive(Clone, Debug)]
pub enum StringValue {
    Compact(CompactBytes),
    Raw(Vec<u8>),
}

impl StringValue {
    pub fn new(bytes: &[u8]) -> StringValue {
        StringValue::Compact(CompactBytes::new(bytes))
    }

    pub fn from_integer(n: i64) -> StringValue {
        StringValue::new(n.to_string().as_bytes())
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            StringValue::Compact(b) => b.as_slice(),
            StringValue::Raw(v) => v,
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes as a growable buffer, converting the value to `raw` first.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if let StringValue::Compact(b) = self {
            *self = StringValue::Raw(b.as_slice().to_vec());
        }
        match self {
            StringValue::Raw(v) => v,
            StringValue::Compact(_) => unreachable!("converted to raw above"),
        }
    }

    /// The value as an integer, if it is the canonical form of one.
    pub fn as_integer(&self) -> Option<i64> {
        let bytes = self.as_slice();
        if bytes.len() > 20 {
            return None;
        }
        slotproxy::numbers::parse_i64(bytes)
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            StringValue::Raw(_) => "raw",
            StringValue::Compact(b) => {
                if self.as_integer().is_some() {
                    "int"
                } else if b.len() <= EMBSTR_MAX {
                    "embstr"
                } else {
                    "raw"
                }
            }
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            StringValue::Compact(b) => b.heap_size(),
            StringValue::Raw(v) => v.capacity(),
        }
    }
}
