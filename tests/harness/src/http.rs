//! A minimal HTTP/1.1 client for the admin API tests (one request per connection).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// An HTTP answer: status code and body text.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub body: String,
}

impl HttpReply {
    /// The body parsed as JSON-ish text is left to the caller; this finds a header-less body.
    pub fn contains(&self, needle: &str) -> bool {
        self.body.contains(needle)
    }
}

/// Sends one request to `127.0.0.1:port` and reads the whole answer.
pub fn request(port: u16, method: &str, path: &str, token: Option<&str>, body: &str) -> HttpReply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to admin API");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send request");
    stream.write_all(body.as_bytes()).expect("send body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read answer");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = raw.get(split + 4..).unwrap_or(&[]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    HttpReply {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// Decodes a `Transfer-Encoding: chunked` body (servers such as Prometheus send large
/// answers that way).
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_line = String::from_utf8_lossy(&rest[..eol]).into_owned();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or(0);
        let after = &rest[eol + 2..];
        if size == 0 || after.len() < size {
            break;
        }
        body.extend_from_slice(&after[..size]);
        rest = after[size..]
            .strip_prefix(b"\r\n")
            .unwrap_or(&after[size..]);
    }
    body
}

pub fn get(port: u16, path: &str) -> HttpReply {
    request(port, "GET", path, None, "")
}
