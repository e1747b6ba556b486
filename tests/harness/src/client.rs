//! A raw RESP client: sends commands, returns replies as frames and as exact bytes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use slotproxy::resp::{parse_frame, Frame, ReplyScanner};

/// A blocking client with a read timeout, so a server that never answers fails the test.
pub struct RawClient {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawClient {
    pub fn connect(port: u16) -> RawClient {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect to port {port}: {e}"));
        RawClient::from_stream(stream)
    }

    /// A client on a connection the test made itself (e.g. from a chosen source address).
    pub fn from_stream(stream: TcpStream) -> RawClient {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("set timeout");
        stream.set_nodelay(true).expect("nodelay");
        RawClient {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Encodes a command as a RESP array of bulk strings.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to server");
    }

    /// Like [`send_raw`](Self::send_raw), but a connection the server closed is an error
    /// for the caller rather than a panic.
    pub fn try_send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    pub fn send(&mut self, args: &[&[u8]]) {
        self.send_raw(&Self::encode(args));
    }

    /// Reads one reply: the parsed frame and its exact bytes.
    pub fn read_reply(&mut self) -> (Frame, Vec<u8>) {
        self.try_read_reply().expect("server closed the connection")
    }

    /// Like [`read_reply`](Self::read_reply) but None when the server closed the connection.
    pub fn try_read_reply(&mut self) -> Option<(Frame, Vec<u8>)> {
        loop {
            if let Some((frame, used)) = parse_frame(&self.buffer).expect("server sent valid RESP")
            {
                let raw: Vec<u8> = self.buffer.drain(..used).collect();
                return Some((frame, raw));
            }
            let mut chunk = [0u8; 64 * 1024];
            // A server that closes with input it never read (Redis after a protocol error,
            // with more requests queued behind the bad one) makes the kernel send a reset
            // instead of an orderly end: that too is the server closing the connection.
            let n = match self.stream.read(&mut chunk) {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
                read => read.expect("read from server"),
            };
            if n == 0 {
                return None;
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads one reply's exact bytes without building a frame, for replies nested deeper
    /// than `parse_frame` accepts (a script's result may be thousands of levels deep).
    pub fn read_raw_reply(&mut self) -> Vec<u8> {
        let mut scanner = ReplyScanner::default();
        loop {
            if let Some(used) = scanner.scan(&self.buffer).expect("server sent valid RESP") {
                return self.buffer.drain(..used).collect();
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self.stream.read(&mut chunk).expect("read from server");
            assert!(n > 0, "server closed the connection");
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and returns its reply frame.
    pub fn call(&mut self, args: &[&str]) -> Frame {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&args);
        self.read_reply().0
    }

    /// Sends a command given as byte strings and returns the exact reply bytes.
    pub fn call_raw(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(args);
        self.read_reply().1
    }

    /// Sends a command given as words without reading the reply (a blocking command).
    pub fn send_words(&mut self, args: &[&str]) {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&args);
    }

    /// Sends a command given as words and returns the exact reply bytes.
    pub fn call_words_raw(&mut self, args: &[&str]) -> Vec<u8> {
        self.send_words(args);
        self.read_reply().1
    }
}

/// A raw reply or message as one line, for assertions that show what differed.
pub fn show(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).replace("\r\n", "\\r\\n")
}

/// One field of an INFO section, as text (panics if the section lacks it).
pub fn info_field(client: &mut RawClient, section: &str, field: &str) -> String {
    let Frame::Bulk(info) = client.call(&["INFO", section]) else {
        panic!("INFO {section} did not answer a bulk string")
    };
    let text = String::from_utf8_lossy(&info).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .trim()
        .to_string()
}

/// `blocked_clients` from INFO.
pub fn blocked_clients(admin: &mut RawClient) -> usize {
    info_field(admin, "clients", "blocked_clients")
        .parse()
        .expect("blocked_clients in INFO")
}

/// Polls until exactly `n` clients are blocked (bounded: fails after 10 s).
pub fn wait_blocked(admin: &mut RawClient, n: usize) {
    let start = std::time::Instant::now();
    while blocked_clients(admin) != n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never saw {n} blocked clients"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
