//! Connecting to the master and the handshake, as Redis 7.0's `syncWithMaster` does it:
//!
//! ```text
//! PING                                  → +PONG (or -NOAUTH: AUTH follows)
//! AUTH [masteruser] masterauth          → +OK            (when masterauth is set)
//! REPLCONF listening-port <port>        → +OK            (errors only logged)
//! REPLCONF ip-address <ip>              → +OK            (when replica-announce-ip)
//! REPLCONF capa eof capa psync2         → +OK            (errors only logged)
//! PSYNC <replid> <offset+1> | PSYNC ? -1
//!     → +FULLRESYNC <replid> <offset> | +CONTINUE [<new replid>]
//!     | -NOMASTERLINK / -LOADING (try again later) | another error
//! ```
//!
//! A master may send empty lines (`\n`) while it prepares a snapshot, to keep the link
//! alive; they are skipped wherever a reply is awaited.

use std::io;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest reply line accepted in the handshake.
const MAX_LINE: usize = 64 * 1024;

/// The connection to the master with what was read and not yet used.
pub struct Conn {
    pub stream: TcpStream,
    pub input: BytesMut,
    /// `repl-timeout`: the longest wait for any byte.
    pub timeout: Duration,
}

/// The master's answer to PSYNC.
#[derive(Debug, PartialEq, Eq)]
pub enum Psync {
    /// `+FULLRESYNC <replid> <offset>`: a snapshot follows.
    Full { replid: String, offset: u64 },
    /// `+CONTINUE [<replid>]`: the stream follows from the offset asked; a new id means
    /// the master's history was renamed (it was promoted).
    Continue { new_replid: Option<String> },
}

impl Conn {
    pub async fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<Conn> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            input: BytesMut::with_capacity(16 * 1024),
            timeout,
        })
    }

    /// Reads more bytes into `input`; an error when the master closes or stays silent
    /// for `repl-timeout`.
    pub async fn fill(&mut self) -> io::Result<usize> {
        let read = tokio::time::timeout(self.timeout, self.stream.read_buf(&mut self.input))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "timeout with the MASTER"))??;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed by the MASTER",
            ));
        }
        Ok(read)
    }

    /// The next non-empty line, without its line ending.
    pub async fn line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                let line = self.input.split_to(end + 1);
                let text = String::from_utf8_lossy(&line[..end]);
                let text = text.trim_end_matches('\r');
                if text.is_empty() {
                    // A keepalive newline.
                    continue;
                }
                return Ok(text.to_string());
            }
            if self.input.len() > MAX_LINE {
                return Err(io::Error::other("reply line from the MASTER too long"));
            }
            self.fill().await?;
        }
    }

    /// Sends a command and reads its one-line reply.
    pub async fn call(&mut self, args: &[&[u8]]) -> io::Result<String> {
        let mut out = BytesMut::new();
        slotproxy::resp::encode_request(&mut out, args);
        self.stream.write_all(&out).await?;
        self.line().await
    }

    /// Drops `n` bytes already read.
    pub fn consume(&mut self, n: usize) {
        self.input.advance(n);
    }
}

/// What the handshake sends.
pub struct Hello {
    pub masteruser: String,
    pub masterauth: String,
    pub listening_port: u16,
    pub announce_ip: String,
    /// `(replid, offset)` of the history this node offers, or none for `PSYNC ? -1`.
    pub history: Option<(String, u64)>,
    /// A FAILOVER makes this node a replica: PSYNC asks the target to promote itself.
    pub failover: bool,
}

/// A PSYNC the master cannot serve now (-NOMASTERLINK, -LOADING): try again later.
#[derive(Debug)]
pub struct TryLater(pub String);

impl std::fmt::Display for TryLater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for TryLater {}

/// Runs the handshake up to the master's answer to PSYNC.
pub async fn run(conn: &mut Conn, hello: &Hello) -> io::Result<Psync> {
    let pong = conn.call(&[b"PING"]).await?;
    // Redis goes on after an authentication error too: AUTH comes next.
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(io::Error::other(format!(
            "Error reply to PING from master: '{pong}'"
        )));
    }
    if !hello.masterauth.is_empty() {
        let reply = if hello.masteruser.is_empty() {
            conn.call(&[b"AUTH", hello.masterauth.as_bytes()]).await?
        } else {
            conn.call(&[
                b"AUTH",
                hello.masteruser.as_bytes(),
                hello.masterauth.as_bytes(),
            ])
            .await?
        };
        if reply.starts_with('-') {
            return Err(io::Error::other(format!(
                "Unable to AUTH to MASTER: {reply}"
            )));
        }
    }
    let port = hello.listening_port.to_string();
    let reply = conn
        .call(&[b"REPLCONF", b"listening-port", port.as_bytes()])
        .await?;
    if reply.starts_with('-') {
        crate::log::notice!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        );
    }
    if !hello.announce_ip.is_empty() {
        let reply = conn
            .call(&[b"REPLCONF", b"ip-address", hello.announce_ip.as_bytes()])
            .await?;
        if reply.starts_with('-') {
            crate::log::notice!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            );
        }
    }
    let reply = conn
        .call(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    if reply.starts_with('-') {
        crate::log::notice!("(Non critical) Master does not understand REPLCONF capa: {reply}");
    }
    let reply = match &hello.history {
        Some((replid, offset)) => {
            crate::log::notice!(
                "Trying a partial resynchronization (request {replid}:{}).",
                offset + 1
            );
            let next = (offset + 1).to_string();
            let mut psync: Vec<&[u8]> = vec![b"PSYNC", replid.as_bytes(), next.as_bytes()];
            if hello.failover {
                psync.push(b"FAILOVER");
            }
            conn.call(&psync).await?
        }
        None => {
            crate::log::notice!("Partial resynchronization not possible (no cached master)");
            let mut psync: Vec<&[u8]> = vec![b"PSYNC", b"?", b"-1"];
            if hello.failover {
                psync.push(b"FAILOVER");
            }
            conn.call(&psync).await?
        }
    };
    parse_psync_reply(&reply)
}

/// Reads the master's answer to PSYNC.
pub fn parse_psync_reply(reply: &str) -> io::Result<Psync> {
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        let mut words = rest.split(' ');
        let replid = words.next().unwrap_or_default();
        let offset = words.next().and_then(|o| o.parse::<u64>().ok());
        return match offset {
            Some(offset) if replid.len() == 40 => Ok(Psync::Full {
                replid: replid.to_string(),
                offset,
            }),
            _ => Err(io::Error::other(format!(
                "Master replied with wrong +FULLRESYNC syntax: '{reply}'"
            ))),
        };
    }
    if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let new_replid = rest.trim();
        return Ok(Psync::Continue {
            new_replid: (new_replid.len() == 40).then(|| new_replid.to_string()),
        });
    }
    if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        return Err(io::Error::other(TryLater(format!(
            "Master is currently unable to PSYNC but should be in the future: {reply}"
        ))));
    }
    Err(io::Error::other(format!(
        "Unexpected reply to PSYNC from master: {reply}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psync_replies() {
        let id = "a".repeat(40);
        assert_eq!(
            parse_psync_reply(&format!("+FULLRESYNC {id} 42")).unwrap(),
            Psync::Full {
                replid: id.clone(),
                offset: 42
            }
        );
        assert_eq!(
            parse_psync_reply("+CONTINUE").unwrap(),
            Psync::Continue { new_replid: None }
        );
        assert_eq!(
            parse_psync_reply(&format!("+CONTINUE {id}")).unwrap(),
            Psync::Continue {
                new_replid: Some(id)
            }
        );
        assert!(parse_psync_reply("+FULLRESYNC x 1").is_err());
        assert!(
            parse_psync_reply("-NOMASTERLINK Can't SYNC while not connected with my master")
                .unwrap_err()
                .get_ref()
                .is_some_and(|e| e.is::<TryLater>())
        );
    }
}
