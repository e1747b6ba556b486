//! A client connection that reports a dead or silent server instead of panicking, because
//! for the fuzzer both are findings, not test errors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use slotproxy::resp::{parse_frame, request_bytes, Frame, ReplyScanner};

/// What went wrong on a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server closed the connection (or could not be reached).
    Closed,
    /// No complete reply within the timeout.
    Timeout,
    /// The server sent bytes that are not RESP.
    Garbage(String),
}

/// One reply: the parsed frame and its exact bytes.
pub type Reply = (Frame, Vec<u8>);

pub struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
    timeout: Duration,
}

impl Conn {
    /// Connects to a loopback port; replies must arrive within `timeout`.
    pub fn connect(port: u16, timeout: Duration) -> Result<Conn, Failure> {
        let stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), timeout)
            .map_err(|_| Failure::Closed)?;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            buffer: Vec::new(),
            timeout,
        })
    }

    pub fn send(&mut self, args: &[Vec<u8>]) -> Result<(), Failure> {
        self.stream
            .write_all(&request_bytes(args))
            .map_err(|_| Failure::Closed)
    }

    /// Reads the next reply, skipping RESP3 push messages (client-tracking invalidations
    /// arrive on the same connection, interleaved with replies).
    pub fn read(&mut self) -> Result<Reply, Failure> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match parse_frame(&self.buffer) {
                // A reply nested deeper than frames are built (a script's result may nest
                // thousands deep) is delimited without building it, and compared as bytes.
                Err(e) if format!("{e:?}").contains("nesting too deep") => {
                    match ReplyScanner::default().scan(&self.buffer) {
                        Ok(Some(used)) => {
                            let raw: Vec<u8> = self.buffer.drain(..used).collect();
                            let marker = Frame::Simple("(a reply nested too deep to build)".into());
                            return Ok((marker, raw));
                        }
                        Ok(None) => {}
                        Err(e) => return Err(Failure::Garbage(format!("{e:?}"))),
                    }
                }
                Err(e) => return Err(Failure::Garbage(format!("{e:?}"))),
                Ok(Some((frame, used))) => {
                    let raw: Vec<u8> = self.buffer.drain(..used).collect();
                    if matches!(frame, Frame::Push(_)) {
                        continue;
                    }
                    return Ok((frame, raw));
                }
                Ok(None) => {}
            }
            let left = deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or(Failure::Timeout)?;
            let _ = self.stream.set_read_timeout(Some(left));
            let mut chunk = [0u8; 256 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(Failure::Closed),
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(Failure::Timeout)
                }
                Err(_) => return Err(Failure::Closed),
            }
        }
    }

    pub fn call(&mut self, args: &[Vec<u8>]) -> Result<Reply, Failure> {
        self.send(args)?;
        self.read()
    }
}

/// Arguments from words.
pub fn words(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}
