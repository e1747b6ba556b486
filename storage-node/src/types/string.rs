//! The string type and the encodings Redis reports for it (`int`, `embstr`, `raw`).

use super::CompactBytes;

/// Longest string Redis stores as `embstr`.
const EMBSTR_MAX: usize = 44;

/// A string value.
///
/// Strings written whole (SET, INCR, ...) are kept compact and their encoding is derived from
/// the content as Redis's `tryObjectEncoding` would. Strings changed in place (APPEND,
/// SETRANGE, SETBIT, ...) become growable and report `raw`, as they do in Redis.
///
/// # Size
/// A `StringValue` is 24 bytes, and so is a [`super::Value`], which makes a key's entry
/// 48 bytes (jemalloc's class below 64): see `keyspace::entry`. Only `Compact`, what
/// nearly every string is, holds its bytes inline in those 24. `Plain` and `Raw` box
/// theirs behind a thin pointer, an allocation more (16 and 32 bytes) for the rare
/// INCRBYFLOAT result and for strings changed in place, which are mostly bitmaps and
/// HyperLogLogs of hundreds of bytes or more.
#[derive(Clone, Debug)]
pub enum StringValue {
    Compact(CompactBytes),
    /// Written whole but never `int`-encoded: Redis stores INCRBYFLOAT results as plain
    /// strings (`embstr`, or `raw` past 44 bytes) even when they read as integers.
    Plain(Box<CompactBytes>),
    Raw(Box<Vec<u8>>),
}

const _: () = assert!(std::mem::size_of::<StringValue>() == 24);

impl StringValue {
    pub fn new(bytes: &[u8]) -> StringValue {
        StringValue::Compact(CompactBytes::new(bytes))
    }

    pub fn from_integer(n: i64) -> StringValue {
        StringValue::new(slotproxy::numbers::IntegerText::new(n).as_bytes())
    }

    /// A string that keeps the `embstr`/`raw` encoding even if it reads as an integer.
    pub fn plain(bytes: &[u8]) -> StringValue {
        StringValue::Plain(Box::new(CompactBytes::new(bytes)))
    }

    /// A string that was or will be changed in place (`raw`).
    pub fn raw(bytes: Vec<u8>) -> StringValue {
        StringValue::Raw(Box::new(bytes))
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            StringValue::Compact(b) => b.as_slice(),
            StringValue::Plain(b) => b.as_slice(),
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
        if !matches!(self, StringValue::Raw(_)) {
            *self = StringValue::raw(self.as_slice().to_vec());
        }
        match self {
            StringValue::Raw(v) => v,
            StringValue::Compact(_) | StringValue::Plain(_) => {
                unreachable!("converted to raw above")
            }
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
            StringValue::Plain(b) if b.len() <= EMBSTR_MAX => "embstr",
            StringValue::Plain(_) => "raw",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            StringValue::Compact(b) => b.heap_size(),
            StringValue::Plain(b) => std::mem::size_of::<CompactBytes>() + b.heap_size(),
            StringValue::Raw(v) => std::mem::size_of::<Vec<u8>>() + v.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis() {
        assert_eq!(StringValue::from_integer(-5).encoding_name(), "int");
        assert_eq!(StringValue::new(b"012").encoding_name(), "embstr");
        assert_eq!(StringValue::new(&[b'x'; 45]).encoding_name(), "raw");
        assert_eq!(StringValue::plain(b"3").encoding_name(), "embstr");
        assert_eq!(StringValue::plain(&[b'1'; 45]).encoding_name(), "raw");
        let mut appended = StringValue::new(b"1");
        appended.make_raw().push(b'2');
        assert_eq!(appended.encoding_name(), "raw");
        assert_eq!(appended.as_slice(), b"12");
    }
}
