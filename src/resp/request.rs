//! Incremental decoding of client requests: RESP multibulk arrays and inline commands.
//!
//! The decoder consumes bytes from the connection's buffer as it goes and remembers the
//! arguments it has already cut out, so a large request arriving in small reads is decoded in
//! linear time. A declared bulk length is only checked against the limits; memory is used when
//! the bytes actually arrive.

use bytes::{Buf, Bytes, BytesMut};

use super::limits::{Limits, INLINE_MAX_SIZE};

/// Arguments up to this size are copied out of the read buffer (one small allocation each, as
/// Redis creates one object per argument); longer ones are cut out of it without copying.
/// A cut shares the buffer through an atomic reference count: one atomic operation to cut and
/// one to drop each argument. Those wait for every earlier store to reach the cache, which in
/// a server that misses the cache on every key costs more than copying a short argument.
const COPY_ARG_MAX: usize = 1024;

/// The fewest bytes one argument of a multibulk request takes: `$0\r\n\r\n`.
const MIN_ARG_BYTES: usize = 6;

/// A violation of the protocol. Redis answers `-ERR <message>` and closes the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn protocol_error(what: impl Into<String>) -> ProtocolError {
    ProtocolError(format!("Protocol error: {}", what.into()))
}

/// A multibulk request whose header has been read but not all of its arguments.
#[derive(Debug)]
struct PartialMultibulk {
    remaining: usize,
    args: Vec<Bytes>,
    /// Length of the bulk string whose header has been read and whose body is awaited.
    bulk_len: Option<usize>,
    /// Bytes of the arguments cut out so far, for the query buffer limit.
    bytes: usize,
}

/// Decodes client requests one at a time out of a growing buffer.
#[derive(Debug, Default)]
pub struct RequestDecoder {
    pub limits: Limits,
    partial: Option<PartialMultibulk>,
    /// Short arguments of a whole buffered request are views into one shared copy of the
    /// request instead of copies of their own (see [`RequestDecoder::sharing_arguments`]).
    share_arguments: bool,
}

impl RequestDecoder {
    pub fn new(limits: Limits) -> Self {
        RequestDecoder {
            limits,
            partial: None,
            share_arguments: false,
        }
    }

    /// A decoder whose arguments share the request's bytes. A server keeps its arguments
    /// (copied, each is one small allocation, as Redis makes one object per argument); a
    /// proxy only re-encodes them and lets them go, so for it one shared buffer per request
    /// beats an allocation per argument.
    pub fn sharing_arguments(limits: Limits) -> Self {
        RequestDecoder {
            share_arguments: true,
            ..RequestDecoder::new(limits)
        }
    }

    /// True while a request has been started but not finished.
    pub fn in_progress(&self) -> bool {
        self.partial.is_some()
    }

    /// Bytes held in arguments of the unfinished request (the query buffer beyond `buf`).
    pub fn partial_bytes(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| p.bytes)
    }

    /// How many more bytes the bulk string being read needs, if one is being read.
    pub fn pending_bulk_bytes(&self, buffered: usize) -> Option<usize> {
        let len = self.partial.as_ref()?.bulk_len?;
        Some((len + 2).saturating_sub(buffered))
    }

    /// Returns the next complete request, `Ok(None)` when more bytes are needed, or the
    /// protocol error that must end the connection. Empty requests (`*0`, blank inline lines)
    /// are skipped.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        if self.partial.is_none() {
            if let Some(args) = self.decode_buffered(buf) {
                return Ok(Some(args));
            }
        }
        loop {
            if self.partial.is_none() {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.decode_inline(buf)? {
                        Some(args) if args.is_empty() => continue,
                        other => return Ok(other),
                    }
                }
                match self.decode_multibulk_header(buf)? {
                    None => return Ok(None),
                    Some(0) => continue,
                    Some(count) => {
                        self.partial = Some(PartialMultibulk {
                            remaining: count,
                            // Never trust the declared count for the allocation.
                            args: Vec::with_capacity(count.min(1024)),
                            bulk_len: None,
                            bytes: 0,
                        });
                    }
                }
            }
            return self.decode_bulks(buf);
        }
    }

    /// The common case in one pass: a whole multibulk request of short arguments is already
    /// buffered. Returns None, consuming nothing, when the request is incomplete, has a long
    /// argument or anything unusual; the incremental path then takes it (and reports the
    /// errors). It parses exactly as that path does, with the same helpers. An incomplete
    /// request is scanned here at most once: the incremental path then holds it as partial.
    fn decode_buffered(&self, buf: &mut BytesMut) -> Option<Vec<Bytes>> {
        let bytes = &buf[..];
        if bytes.first() != Some(&b'*') {
            return None;
        }
        let header_end = find_line_end(bytes)?;
        let count = parse_decimal(&bytes[1..header_end])?;
        let within_limits = count > 0
            && count as u64 <= self.limits.max_multibulk_len as u64
            && !(self.limits.unauthenticated && count > 10);
        // The allocation below trusts the count only as far as the buffered bytes back it.
        if !within_limits || count as usize > (bytes.len() - header_end) / MIN_ARG_BYTES {
            return None;
        }
        let max_len = COPY_ARG_MAX.min(self.limits.max_bulk_len);
        let (mut args, mut ranges) = if self.share_arguments {
            (Vec::new(), Vec::with_capacity(count as usize))
        } else {
            (Vec::with_capacity(count as usize), Vec::new())
        };
        let mut pos = header_end + 2;
        for _ in 0..count {
            let rest = bytes.get(pos..)?;
            if rest.first() != Some(&b'$') {
                return None;
            }
            let line_end = find_line_end(rest)?;
            let len = parse_decimal(&rest[1..line_end])?;
            if len < 0 || len as usize > max_len {
                return None;
            }
            let start = pos + line_end + 2;
            let end = start + len as usize;
            // Like the incremental path (and Redis), the two bytes after the bulk are skipped
            // unchecked.
            if bytes.len() < end + 2 {
                return None;
            }
            if self.share_arguments {
                ranges.push(start..end);
            } else {
                args.push(Bytes::copy_from_slice(&bytes[start..end]));
            }
            pos = end + 2;
        }
        if self.share_arguments {
            let request = buf.split_to(pos).freeze();
            return Some(ranges.into_iter().map(|r| request.slice(r)).collect());
        }
        buf.advance(pos);
        Some(args)
    }

    fn decode_multibulk_header(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<usize>, ProtocolError> {
        let Some(line_end) = find_line_end(buf) else {
            if buf.len() > INLINE_MAX_SIZE {
                return Err(protocol_error("too big mbulk count string"));
            }
            return Ok(None);
        };
        let count = parse_decimal(&buf[1..line_end]);
        buf.advance(line_end + 2);
        match count {
            Some(n) if n <= 0 => Ok(Some(0)),
            Some(n) if (n as u64) <= self.limits.max_multibulk_len as u64 => {
                if self.limits.unauthenticated && n > 10 {
                    return Err(protocol_error("unauthenticated multibulk length"));
                }
                Ok(Some(n as usize))
            }
            _ => Err(protocol_error("invalid multibulk length")),
        }
    }

    fn decode_bulks(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let limits = self.limits;
        let Some(partial) = self.partial.as_mut() else {
            return Ok(None);
        };
        while partial.remaining > 0 {
            let len = match partial.bulk_len {
                Some(len) => len,
                None => {
                    let Some(&first) = buf.first() else {
                        return Ok(None);
                    };
                    if first != b'$' {
                        let shown = char::from(first);
                        return Err(protocol_error(format!("expected '$', got '{shown}'")));
                    }
                    let Some(line_end) = find_line_end(buf) else {
                        if buf.len() > INLINE_MAX_SIZE {
                            return Err(protocol_error("too big bulk count string"));
                        }
                        return Ok(None);
                    };
                    let len = match parse_decimal(&buf[1..line_end]) {
                        Some(n) if n >= 0 && (n as u64) <= limits.max_bulk_len as u64 => n,
                        _ => return Err(protocol_error("invalid bulk length")),
                    };
                    if limits.unauthenticated && len > 16384 {
                        return Err(protocol_error("unauthenticated bulk length"));
                    }
                    buf.advance(line_end + 2);
                    partial.bulk_len = Some(len as usize);
                    len as usize
                }
            };
            if buf.len() < len + 2 {
                return Ok(None);
            }
            let arg = buf.split_to(len).freeze();
            buf.advance(2);
            partial.bytes += arg.len();
            partial.args.push(arg);
            partial.bulk_len = None;
            partial.remaining -= 1;
        }
        Ok(self.partial.take().map(|p| p.args))
    }

    fn decode_inline(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        // As with header lines, Redis's `strchr` does not see a newline after a NUL byte.
        let newline = buf
            .iter()
            .position(|&b| b == b'\n' || b == 0)
            .filter(|&at| buf[at] == b'\n');
        let Some(newline) = newline else {
            if buf.len() > self.limits.max_inline_len {
                return Err(protocol_error("too big inline request"));
            }
            return Ok(None);
        };
        let line = buf.split_to(newline + 1);
        let mut line = &line[..newline];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        split_inline_args(line)
            .map(Some)
            .ok_or_else(|| protocol_error("unbalanced quotes in request"))
    }
}

/// Position of the `\r` of the first `\r\n` in `buf`. A NUL byte before it hides it, as
/// Redis finds the end of a header line with `strchr`: the line then never completes, and
/// the length limits end it.
fn find_line_end(buf: &[u8]) -> Option<usize> {
    let cr = buf.iter().position(|&b| b == b'\r' || b == 0)?;
    (buf[cr] == b'\r' && cr + 1 < buf.len()).then_some(cr)
}

/// A strict decimal integer, as Redis's `string2ll` reads protocol lengths.
fn parse_decimal(digits: &[u8]) -> Option<i64> {
    crate::numbers::parse_i64(digits)
}

/// Splits an inline request into arguments the way Redis's `sdssplitargs` does: blanks
/// separate arguments, double quotes allow escapes (`\n`, `\xff`, ...), single quotes allow
/// only `\'`, and a closing quote must be followed by a blank or the end.
pub fn split_inline_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let mut args = Vec::new();
    let mut i = 0;
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                let c = *line.get(i)?;
                if c == b'\\' && i + 3 < line.len() && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_value(line[i + 2]), hex_value(line[i + 3])) {
                        current.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    current.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                    i += 2;
                } else if c == b'"' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    current.push(c);
                    i += 1;
                }
            } else if in_single {
                let c = *line.get(i)?;
                if c == b'\\' && i + 1 < line.len() && line[i + 1] == b'\'' {
                    current.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    current.push(c);
                    i += 1;
                }
            } else {
                match line.get(i) {
                    None => break,
                    Some(&c) if is_space(c) => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(&c) => current.push(c),
                }
                i += 1;
            }
        }
        args.push(Bytes::from(current));
    }
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}
