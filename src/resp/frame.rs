//! The RESP value tree, used where a reply must be inspected rather than streamed.

use bytes::{Bytes, BytesMut};

use super::encode::{Proto, ReplyBuf};

/// One RESP2 or RESP3 value.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Simple(Bytes),
    Error(Bytes),
    Integer(i64),
    Bulk(Bytes),
    /// RESP2 null bulk string (`$-1`) or RESP3 null (`_`).
    Null,
    /// RESP2 null array (`*-1`).
    NullArray,
    Array(Vec<Frame>),
    Map(Vec<(Frame, Frame)>),
    Set(Vec<Frame>),
    Push(Vec<Frame>),
    Double(f64),
    Boolean(bool),
    BigNumber(Bytes),
    Verbatim {
        format: [u8; 3],
        text: Bytes,
    },
    BlobError(Bytes),
}

impl Frame {
    /// A bulk string frame from anything byte-like.
    pub fn bulk(data: impl AsRef<[u8]>) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(data.as_ref()))
    }

    /// The bytes of a string-like frame (simple, bulk, verbatim, big number).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Frame::Simple(b) | Frame::Bulk(b) | Frame::BigNumber(b) => Some(b),
            Frame::Verbatim { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Elements of an aggregate frame other than a map.
    pub fn as_array(&self) -> Option<&[Frame]> {
        match self {
            Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Frame::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// Looks a key up in a map frame, or in a RESP2 flat `[key, value, ...]` array.
    pub fn map_get(&self, key: &str) -> Option<&Frame> {
        match self {
            Frame::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k.as_bytes() == Some(key.as_bytes()))
                .map(|(_, v)| v),
            Frame::Array(items) => items
                .chunks(2)
                .find(|kv| kv.len() == 2 && kv[0].as_bytes() == Some(key.as_bytes()))
                .map(|kv| &kv[1]),
            _ => None,
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_) | Frame::BlobError(_))
    }

    /// Writes the frame in the given protocol. RESP3-only types are downgraded for RESP2 the
    /// way Redis downgrades them (maps flatten, sets become arrays, doubles become bulks).
    pub fn write(&self, out: &mut ReplyBuf<'_>) {
        match self {
            Frame::Simple(s) => out.simple_bytes(s),
            Frame::Error(e) => out.error_bytes(e),
            Frame::BlobError(e) => out.error_bytes(e),
            Frame::Integer(n) => out.integer(*n),
            Frame::Bulk(b) => out.bulk(b),
            Frame::Null => out.null(),
            Frame::NullArray => out.null_array(),
            Frame::Array(items) => {
                out.array(items.len());
                items.iter().for_each(|f| f.write(out));
            }
            Frame::Set(items) => {
                out.set(items.len());
                items.iter().for_each(|f| f.write(out));
            }
            Frame::Push(items) => {
                out.push(items.len());
                items.iter().for_each(|f| f.write(out));
            }
            Frame::Map(pairs) => {
                out.map(pairs.len());
                for (k, v) in pairs {
                    k.write(out);
                    v.write(out);
                }
            }
            Frame::Double(d) => out.double(*d),
            Frame::Boolean(b) => out.boolean(*b),
            Frame::BigNumber(n) => out.big_number(n),
            Frame::Verbatim { format, text } => out.verbatim(format, text),
        }
    }

    /// Encodes the frame into a fresh buffer.
    pub fn to_bytes(&self, proto: Proto) -> BytesMut {
        let mut buf = BytesMut::new();
        self.write(&mut ReplyBuf::new(&mut buf, proto));
        buf
    }
}
