//! Finding where a reply ends without building it, so a proxy can pass replies through as
//! raw bytes. The scanner keeps its place between reads: a large reply arriving in many
//! small reads is scanned once, in linear time.

use super::parse::ParseError;

/// Resumable scanner for one RESP2/RESP3 frame at the start of a buffer.
#[derive(Debug, Default)]
pub struct ReplyScanner {
    /// How far into the buffer the frame has been scanned.
    pos: usize,
    /// Elements still expected by each open aggregate, innermost last.
    open: Vec<u64>,
}

impl ReplyScanner {
    /// Continues scanning `buf` (which starts with the frame). Returns the frame's length
    /// once it is complete; the scanner is then ready for the next frame.
    pub fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        loop {
            let Some(header_end) = find_crlf(buf, self.pos) else {
                return Ok(None);
            };
            let kind = buf[self.pos];
            // Empty for a bare CRLF, which the type byte check then rejects.
            let text = buf.get(self.pos + 1..header_end).unwrap_or_default();
            let mut next = header_end + 2;
            let mut children: u64 = 0;
            match kind {
                b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {}
                b'$' | b'!' | b'=' => {
                    let len = number(text)?;
                    if len >= 0 {
                        let end = next + len as usize;
                        if buf.len() < end + 2 {
                            return Ok(None);
                        }
                        next = end + 2;
                    }
                }
                b'*' | b'~' | b'>' => children = number(text)?.max(0) as u64,
                b'%' | b'|' => children = (number(text)?.max(0) as u64) * 2,
                other => {
                    return Err(ParseError(format!(
                        "unexpected type byte {:?}",
                        char::from(other)
                    )))
                }
            }
            self.pos = next;
            if kind == b'|' {
                // An attribute is followed by the frame it annotates.
                self.open.push(children + 1);
                continue;
            }
            if children > 0 {
                self.open.push(children);
                continue;
            }
            // A complete element: close every aggregate it completes.
            loop {
                match self.open.last_mut() {
                    None => {
                        let len = self.pos;
                        self.pos = 0;
                        return Ok(Some(len));
                    }
                    Some(remaining) => {
                        *remaining -= 1;
                        if *remaining > 0 {
                            break;
                        }
                        self.open.pop();
                    }
                }
            }
        }
    }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let rel = buf.get(from..)?.windows(2).position(|w| w == b"\r\n")?;
    Some(from + rel)
}

fn number(text: &[u8]) -> Result<i64, ParseError> {
    crate::numbers::parse_i64(text)
        .ok_or_else(|| ParseError(format!("bad length {:?}", String::from_utf8_lossy(text))))
}
