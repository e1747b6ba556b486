//! Reply encoding straight into an output buffer, without building frames first.

use bytes::{BufMut, Bytes, BytesMut};

use super::double_text::DoubleText;

/// The protocol a client speaks, chosen with `HELLO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Proto {
    #[default]
    Resp2,
    Resp3,
}

/// Appends replies to a buffer in the client's protocol.
///
/// RESP3-only shapes are written the way Redis downgrades them for RESP2 clients.
pub struct ReplyBuf<'a> {
    pub buf: &'a mut BytesMut,
    pub proto: Proto,
}

impl<'a> ReplyBuf<'a> {
    pub fn new(buf: &'a mut BytesMut, proto: Proto) -> Self {
        ReplyBuf { buf, proto }
    }

    pub fn is_resp3(&self) -> bool {
        self.proto == Proto::Resp3
    }

    fn header(&mut self, prefix: u8, n: i64) {
        self.buf.put_u8(prefix);
        write_integer_decimal(self.buf, n);
        self.buf.put_slice(b"\r\n");
    }

    pub fn ok(&mut self) {
        self.buf.put_slice(b"+OK\r\n");
    }

    pub fn simple(&mut self, s: &str) {
        self.simple_bytes(s.as_bytes());
    }

    pub fn simple_bytes(&mut self, s: &[u8]) {
        self.buf.put_u8(b'+');
        self.buf.put_slice(s);
        self.buf.put_slice(b"\r\n");
    }

    /// An error reply. `msg` carries its own code (`ERR ...`, `WRONGTYPE ...`). Newlines would
    /// break the protocol, so they are replaced by spaces as Redis does.
    pub fn error(&mut self, msg: &str) {
        self.error_bytes(msg.as_bytes());
    }

    pub fn error_bytes(&mut self, msg: &[u8]) {
        self.buf.put_u8(b'-');
        for &b in msg {
            self.buf
                .put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        self.buf.put_slice(b"\r\n");
    }

    pub fn integer(&mut self, n: i64) {
        self.header(b':', n);
    }

    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.buf.put_slice(data);
        self.buf.put_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of an integer.
    pub fn bulk_integer(&mut self, n: i64) {
        self.bulk(crate::numbers::IntegerText::new(n).as_bytes());
    }

    /// Null bulk string in RESP2, null in RESP3.
    pub fn null(&mut self) {
        match self.proto {
            Proto::Resp2 => self.buf.put_slice(b"$-1\r\n"),
            Proto::Resp3 => self.buf.put_slice(b"_\r\n"),
        }
    }

    /// Null array in RESP2, null in RESP3.
    pub fn null_array(&mut self) {
        match self.proto {
            Proto::Resp2 => self.buf.put_slice(b"*-1\r\n"),
            Proto::Resp3 => self.buf.put_slice(b"_\r\n"),
        }
    }

    pub fn array(&mut self, len: usize) {
        self.header(b'*', len as i64);
    }

    /// A map of `len` pairs; a flat array of `2 * len` elements in RESP2.
    pub fn map(&mut self, len: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', 2 * len as i64),
            Proto::Resp3 => self.header(b'%', len as i64),
        }
    }

    pub fn set(&mut self, len: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', len as i64),
            Proto::Resp3 => self.header(b'~', len as i64),
        }
    }

    pub fn push(&mut self, len: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', len as i64),
            Proto::Resp3 => self.header(b'>', len as i64),
        }
    }

    /// A double: a bulk string in RESP2, a `,` frame in RESP3, formatted like Redis 7.0
    /// (`%.17g`, and `inf` / `-inf`).
    pub fn double(&mut self, d: f64) {
        let text = DoubleText::new(d);
        match self.proto {
            Proto::Resp2 => self.bulk(text.as_bytes()),
            Proto::Resp3 => {
                self.buf.put_u8(b',');
                self.buf.put_slice(text.as_bytes());
                self.buf.put_slice(b"\r\n");
            }
        }
    }

    /// A boolean: `#t`/`#f` in RESP3, the integers 1/0 in RESP2.
    pub fn boolean(&mut self, b: bool) {
        match self.proto {
            Proto::Resp2 => self.integer(b as i64),
            Proto::Resp3 => self.buf.put_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
        }
    }

    pub fn big_number(&mut self, digits: &[u8]) {
        match self.proto {
            Proto::Resp2 => self.bulk(digits),
            Proto::Resp3 => {
                self.buf.put_u8(b'(');
                self.buf.put_slice(digits);
                self.buf.put_slice(b"\r\n");
            }
        }
    }

    /// Verbatim text (`=len\r\ntxt:...`) in RESP3, a plain bulk string in RESP2.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.proto {
            Proto::Resp2 => self.bulk(text),
            Proto::Resp3 => {
                self.header(b'=', text.len() as i64 + 4);
                self.buf.put_slice(format);
                self.buf.put_u8(b':');
                self.buf.put_slice(text);
                self.buf.put_slice(b"\r\n");
            }
        }
    }

    /// Appends bytes that are already encoded.
    pub fn raw(&mut self, encoded: &[u8]) {
        self.buf.put_slice(encoded);
    }
}

/// Writes the decimal digits of `n` without going through `fmt`.
pub fn write_integer_decimal(buf: &mut BytesMut, n: i64) {
    if (0..10).contains(&n) {
        buf.put_u8(b'0' + n as u8);
        return;
    }
    buf.put_slice(crate::numbers::IntegerText::new(n).as_bytes());
}

/// A request encoded as its own bytes.
pub fn request_bytes<A: AsRef<[u8]>>(args: &[A]) -> Bytes {
    let mut buf = BytesMut::new();
    encode_request(&mut buf, args);
    buf.freeze()
}

/// Bytes `encode_request` writes for `args`.
pub fn request_len<A: AsRef<[u8]>>(args: &[A]) -> usize {
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let header = 3 + digits(args.len());
    args.iter().fold(header, |total, arg| {
        let len = arg.as_ref().len();
        total + 5 + digits(len) + len
    })
}

/// Encodes a request as a RESP array of bulk strings, the form servers expect. The buffer
/// grows once, to the exact size, rather than doubling as the arguments go in.
pub fn encode_request<A: AsRef<[u8]>>(buf: &mut BytesMut, args: &[A]) {
    buf.reserve(request_len(args));
    buf.put_u8(b'*');
    write_integer_decimal(buf, args.len() as i64);
    buf.put_slice(b"\r\n");
    for arg in args {
        let arg = arg.as_ref();
        buf.put_u8(b'$');
        write_integer_decimal(buf, arg.len() as i64);
        buf.put_slice(b"\r\n");
        buf.put_slice(arg);
        buf.put_slice(b"\r\n");
    }
}
