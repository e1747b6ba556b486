//! Stream entry ids: `<ms>-<seq>`, two unsigned 64-bit numbers ordered as one 128-bit number.
//!
//! Parsing follows Redis 7.0's `streamGenericParseIDOrReply`: `-` and `+` are the smallest
//! and largest ids (unless strict), a missing `-<seq>` takes a default sequence, `<ms>-*`
//! (only where XADD allows it) asks for an automatic sequence, and each number is read as C's
//! `strtoull` reads it when it is not canonical (leading blanks, a sign, leading zeros).

use std::fmt;

use slotproxy::numbers::write_decimal_before;

/// A stream entry id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next id (`streamIncrID`), or None past the largest.
    pub fn next(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId::new(self.ms + 1, 0));
        }
        Some(StreamId::new(self.ms, self.seq + 1))
    }

    /// The previous id (`streamDecrID`), or None before the smallest.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId::new(self.ms - 1, u64::MAX));
        }
        Some(StreamId::new(self.ms, self.seq - 1))
    }

    /// The 16 big-endian bytes Redis uses as the radix-tree key of a node.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.ms.to_be_bytes());
        key[8..].copy_from_slice(&self.seq.to_be_bytes());
        key
    }

    pub fn from_be_bytes(key: &[u8; 16]) -> StreamId {
        let mut ms = [0u8; 8];
        let mut seq = [0u8; 8];
        ms.copy_from_slice(&key[..8]);
        seq.copy_from_slice(&key[8..]);
        StreamId::new(u64::from_be_bytes(ms), u64::from_be_bytes(seq))
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }
}

/// An id's text `<ms>-<seq>`, written on the stack: replies and propagated commands carry
/// ids on every stream write and read, where `to_string` would allocate each time.
pub struct IdText {
    text: [u8; 41],
    start: usize,
}

impl IdText {
    pub fn new(id: StreamId) -> IdText {
        let mut text = [0u8; 41];
        let mut start = write_decimal_before(&mut text, 41, id.seq);
        start -= 1;
        text[start] = b'-';
        start = write_decimal_before(&mut text, start, id.ms);
        IdText { text, start }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.text[self.start..]
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How an id argument may be written.
#[derive(Clone, Copy, Debug)]
pub struct IdSyntax {
    /// The sequence of an id written as `<ms>` alone.
    pub missing_seq: u64,
    /// `-` and `+` are refused.
    pub strict: bool,
    /// `<ms>-*` is accepted (XADD).
    pub auto_seq: bool,
}

/// A parsed id; `seq_given` is false for `<ms>-*` (the sequence is then 0, to be chosen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedId {
    pub id: StreamId,
    pub seq_given: bool,
}

/// Parses an id argument, or None (`ERR Invalid stream ID specified as stream command
/// argument`).
pub fn parse(arg: &[u8], syntax: IdSyntax) -> Option<ParsedId> {
    // Redis copies the argument to a 128-byte C buffer: longer is invalid, and a NUL ends it.
    if arg.len() > 127 {
        return None;
    }
    let arg = match arg.iter().position(|&b| b == 0) {
        Some(nul) => &arg[..nul],
        None => arg,
    };
    if syntax.strict && (arg == b"-" || arg == b"+") {
        return None;
    }
    if arg == b"-" {
        return Some(ParsedId {
            id: StreamId::MIN,
            seq_given: true,
        });
    }
    if arg == b"+" {
        return Some(ParsedId {
            id: StreamId::MAX,
            seq_given: true,
        });
    }
    let (ms_text, seq_text) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = string_to_u64(ms_text)?;
    let (seq, seq_given) = match seq_text {
        Some(b"*") if syntax.auto_seq => (0, false),
        Some(text) => (string_to_u64(text)?, true),
        None => (syntax.missing_seq, true),
    };
    Some(ParsedId {
        id: StreamId::new(ms, seq),
        seq_given,
    })
}

/// Redis's `string2ull`: a canonical integer (refused if negative), else what C's
/// `strtoull` accepts in base 10 when the whole text is consumed.
fn string_to_u64(text: &[u8]) -> Option<u64> {
    if let Some(n) = slotproxy::numbers::parse_i64(text) {
        return u64::try_from(n).ok();
    }
    strtoull(text)
}

fn strtoull(text: &[u8]) -> Option<u64> {
    let mut rest = text;
    while let [b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r', tail @ ..] = rest {
        rest = tail;
    }
    let negative = match rest {
        [b'-', tail @ ..] => {
            rest = tail;
            true
        }
        [b'+', tail @ ..] => {
            rest = tail;
            false
        }
        _ => false,
    };
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: u64 = 0;
    for &digit in rest {
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    // strtoull negates in unsigned arithmetic.
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOSE: IdSyntax = IdSyntax {
        missing_seq: 0,
        strict: false,
        auto_seq: false,
    };

    #[test]
    fn parses_like_redis() {
        let id = |s: &str| parse(s.as_bytes(), LOOSE).map(|p| p.id);
        assert_eq!(id("5"), Some(StreamId::new(5, 0)));
        assert_eq!(id("5-3"), Some(StreamId::new(5, 3)));
        assert_eq!(id("-"), Some(StreamId::MIN));
        assert_eq!(id("+"), Some(StreamId::MAX));
        assert_eq!(id("007-+1"), Some(StreamId::new(7, 1)));
        assert_eq!(id(" 7"), Some(StreamId::new(7, 0)));
        assert_eq!(id("1--1"), None);
        assert_eq!(id("1--01"), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(id("18446744073709551616"), None);
        assert_eq!(id("5-*"), None);
        assert_eq!(id(""), None);
        assert_eq!(id("1-2-3"), None);
    }

    #[test]
    fn id_text_is_the_display_text() {
        for id in [
            StreamId::MIN,
            StreamId::MAX,
            StreamId::new(1526919030474, 55),
        ] {
            assert_eq!(IdText::new(id).as_bytes(), id.to_string().as_bytes());
        }
    }

    #[test]
    fn next_and_prev_wrap_sequences() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
    }
}
