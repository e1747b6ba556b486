//! Parsing whole RESP2/RESP3 frames out of a byte slice (replies from servers).

use bytes::Bytes;

use super::frame::Frame;

/// Deeper nesting than this is treated as an attack rather than a reply.
pub(super) const MAX_DEPTH: usize = 512;

/// A byte sequence that is not RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RESP parse error: {}", self.0)
    }
}

impl std::error::Error for ParseError {}

/// Parses one frame from the start of `buf`. Returns the frame and the number of bytes it
/// used, `Ok(None)` if `buf` holds only part of a frame, or an error if it is not RESP.
pub fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, ParseError> {
    parse_from(buf, None)
}

/// [`parse_frame`] of data compiled into the program: the frame's strings point into `buf`
/// instead of being copied, so a large embedded table costs no allocation per string.
pub fn parse_static_frame(buf: &'static [u8]) -> Result<Option<(Frame, usize)>, ParseError> {
    parse_from(buf, Some(&Bytes::from_static(buf)))
}

/// `source`, when given, holds `buf`: strings are slices of it rather than copies.
fn parse_from(buf: &[u8], source: Option<&Bytes>) -> Result<Option<(Frame, usize)>, ParseError> {
    let mut pos = 0;
    match parse_at(buf, &mut pos, 0, source)? {
        Some(frame) => Ok(Some((frame, pos))),
        None => Ok(None),
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let start = *pos;
    let rel = buf.get(start..)?.windows(2).position(|w| w == b"\r\n")?;
    *pos = start + rel + 2;
    Some(&buf[start..start + rel])
}

fn int(text: &[u8]) -> Result<i64, ParseError> {
    crate::numbers::parse_i64(text)
        .ok_or_else(|| ParseError(format!("bad integer {:?}", String::from_utf8_lossy(text))))
}

fn blob<'a>(buf: &'a [u8], pos: &mut usize, len: i64) -> Result<Option<&'a [u8]>, ParseError> {
    let len = usize::try_from(len).map_err(|_| ParseError("negative length".into()))?;
    let start = *pos;
    let end = start
        .checked_add(len)
        .ok_or_else(|| ParseError("length".into()))?;
    if buf.len() < end + 2 {
        return Ok(None);
    }
    if &buf[end..end + 2] != b"\r\n" {
        return Err(ParseError("blob not terminated by CRLF".into()));
    }
    *pos = end + 2;
    Ok(Some(&buf[start..end]))
}

macro_rules! need {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(None),
        }
    };
}

fn parse_items(
    buf: &[u8],
    pos: &mut usize,
    count: i64,
    depth: usize,
    source: Option<&Bytes>,
) -> Result<Option<Vec<Frame>>, ParseError> {
    let count = usize::try_from(count).map_err(|_| ParseError("negative count".into()))?;
    // The count is untrusted: grow as elements actually parse.
    let mut items = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        items.push(need!(parse_at(buf, pos, depth + 1, source)?));
    }
    Ok(Some(items))
}

fn parse_at(
    buf: &[u8],
    pos: &mut usize,
    depth: usize,
    source: Option<&Bytes>,
) -> Result<Option<Frame>, ParseError> {
    if depth > MAX_DEPTH {
        return Err(ParseError("nesting too deep".into()));
    }
    let Some(&kind) = buf.get(*pos) else {
        return Ok(None);
    };
    *pos += 1;
    let text = need!(line(buf, pos));
    let bytes = |t: &[u8]| source.map_or_else(|| Bytes::copy_from_slice(t), |s| s.slice_ref(t));
    let frame = match kind {
        b'+' => Frame::Simple(bytes(text)),
        b'-' => Frame::Error(bytes(text)),
        b':' => Frame::Integer(int(text)?),
        b'_' => Frame::Null,
        b'#' => match text {
            b"t" => Frame::Boolean(true),
            b"f" => Frame::Boolean(false),
            _ => return Err(ParseError("bad boolean".into())),
        },
        b',' => Frame::Double(parse_double(text)?),
        b'(' => Frame::BigNumber(bytes(text)),
        b'$' | b'!' | b'=' => {
            let len = int(text)?;
            if len < 0 {
                return Ok(Some(Frame::Null));
            }
            let data = need!(blob(buf, pos, len)?);
            match kind {
                b'$' => Frame::Bulk(bytes(data)),
                b'!' => Frame::BlobError(bytes(data)),
                _ => {
                    if data.len() < 4 || data[3] != b':' {
                        return Err(ParseError("bad verbatim string".into()));
                    }
                    Frame::Verbatim {
                        format: [data[0], data[1], data[2]],
                        text: bytes(&data[4..]),
                    }
                }
            }
        }
        b'*' | b'~' | b'>' => {
            let count = int(text)?;
            if count < 0 {
                return Ok(Some(Frame::NullArray));
            }
            let items = need!(parse_items(buf, pos, count, depth, source)?);
            match kind {
                b'*' => Frame::Array(items),
                b'~' => Frame::Set(items),
                _ => Frame::Push(items),
            }
        }
        b'%' | b'|' => {
            let count = int(text)?;
            let flat = need!(parse_items(
                buf,
                pos,
                count.saturating_mul(2),
                depth,
                source
            )?);
            let mut pairs = Vec::with_capacity(flat.len() / 2);
            let mut it = flat.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            if kind == b'|' {
                // An attribute annotates the frame that follows; we keep the frame.
                return parse_at(buf, pos, depth + 1, source);
            }
            Frame::Map(pairs)
        }
        other => {
            return Err(ParseError(format!(
                "unexpected type byte {:?}",
                char::from(other)
            )))
        }
    };
    Ok(Some(frame))
}

fn parse_double(text: &[u8]) -> Result<f64, ParseError> {
    let s = std::str::from_utf8(text).map_err(|_| ParseError("bad double".into()))?;
    match s {
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        _ => s.parse().map_err(|_| ParseError("bad double".into())),
    }
}
