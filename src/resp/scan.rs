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
    /// Elements the frame's aggregates announced so far, nested ones included.
    announced: u64,
}

/// The most one reply may hold: its bytes (a bulk counts with its announced length, so a
/// `$4294967296` header is refused before any of it arrives) and the elements its
/// aggregates announce, all levels together (so `*4294967296` is refused at its header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyCap {
    pub max_bytes: usize,
    pub max_elements: u64,
}

impl ReplyCap {
    pub const UNLIMITED: ReplyCap = ReplyCap {
        max_bytes: usize::MAX,
        max_elements: u64::MAX,
    };
}

/// Why a capped scan stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// The bytes are not RESP.
    Invalid(ParseError),
    /// The reply is, or announces it will be, larger than the cap.
    TooLarge(String),
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::Invalid(e) => e.fmt(f),
            ScanError::TooLarge(what) => f.write_str(what),
        }
    }
}

impl From<ParseError> for ScanError {
    fn from(e: ParseError) -> ScanError {
        ScanError::Invalid(e)
    }
}

impl ReplyScanner {
    /// Continues scanning `buf` (which starts with the frame). Returns the frame's length
    /// once it is complete; the scanner is then ready for the next frame.
    pub fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        self.scan_capped(buf, ReplyCap::UNLIMITED)
            .map_err(|e| match e {
                ScanError::Invalid(e) => e,
                ScanError::TooLarge(what) => ParseError(what),
            })
    }

    /// [`Self::scan`], refusing a frame larger than `cap` as soon as a header announces it
    /// (a peer that announces 4 GB must not make us wait for, or buffer, any of it).
    pub fn scan_capped(&mut self, buf: &[u8], cap: ReplyCap) -> Result<Option<usize>, ScanError> {
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
                        let end = next.saturating_add(len as usize);
                        if end.saturating_add(2) > cap.max_bytes {
                            return Err(ScanError::TooLarge(format!(
                                "reply larger than {} bytes (a bulk of {len} bytes)",
                                cap.max_bytes
                            )));
                        }
                        if buf.len() < end + 2 {
                            return Ok(None);
                        }
                        next = end + 2;
                    }
                }
                b'*' | b'~' | b'>' => children = number(text)?.max(0) as u64,
                b'%' | b'|' => children = (number(text)?.max(0) as u64) * 2,
                other => {
                    return Err(ScanError::Invalid(ParseError(format!(
                        "unexpected type byte {:?}",
                        char::from(other)
                    ))))
                }
            }
            if next > cap.max_bytes {
                return Err(ScanError::TooLarge(format!(
                    "reply larger than {} bytes",
                    cap.max_bytes
                )));
            }
            self.announced = self.announced.saturating_add(children);
            if self.announced > cap.max_elements {
                return Err(ScanError::TooLarge(format!(
                    "reply of more than {} elements (an aggregate of {children})",
                    cap.max_elements
                )));
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
                        self.announced = 0;
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
