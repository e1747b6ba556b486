//! The clients in MONITOR mode and the line each of them receives for every command the
//! node runs, as Redis 7.0's `replicationFeedMonitors` writes it:
//!
//! `+1700000000.123456 [0 127.0.0.1:54321] "SET" "k" "v"` — the time, the database and
//! the client's address (`lua` for a command a script runs), then every argument quoted
//! as `sdscatrepr` quotes it (`\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b`, other bytes outside
//! printable ASCII as `\xhh`). Which commands are shown is decided in `cmd::monitor`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;

use crate::server::clients::ClientHandle;

/// Where a command came from, as its line names it.
pub enum Origin<'a> {
    Script,
    Client(&'a ClientHandle),
}

#[derive(Debug, Default)]
pub struct Monitors {
    clients: Vec<Arc<ClientHandle>>,
}

impl Monitors {
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Puts a client in monitor mode; false if it already was.
    pub fn add(&mut self, handle: &Arc<ClientHandle>) -> bool {
        if handle.monitor.swap(true, Relaxed) {
            return false;
        }
        self.clients.push(handle.clone());
        true
    }

    /// Takes a client out of monitor mode (RESET, disconnection).
    pub fn remove(&mut self, handle: &ClientHandle) {
        if handle.monitor.swap(false, Relaxed) {
            self.clients.retain(|c| c.id != handle.id);
        }
    }

    /// Sends every monitor the line for a command.
    pub fn feed(&self, db: usize, origin: Origin<'_>, args: &[Bytes]) {
        if self.clients.is_empty() {
            return;
        }
        let line = Bytes::from(line(db, origin, args));
        for client in &self.clients {
            client.deliver(line.clone());
        }
    }
}

fn line(db: usize, origin: Origin<'_>, args: &[Bytes]) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let source = match origin {
        Origin::Script => "lua".to_string(),
        Origin::Client(handle) => handle.addr.to_string(),
    };
    let mut line = format!(
        "+{}.{:06} [{db} {source}]",
        now.as_secs(),
        now.subsec_micros()
    )
    .into_bytes();
    for arg in args {
        line.push(b' ');
        quote(&mut line, arg);
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// Redis's `sdscatrepr` (CONFIG REWRITE quotes string settings with it too).
pub(crate) fn quote(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_as_redis_quotes_them() {
        let mut out = Vec::new();
        quote(&mut out, b"a\"b\\c\n\x01\xff \xe9");
        assert_eq!(out, b"\"a\\\"b\\\\c\\n\\x01\\xff \\xe9\"".to_vec());
        let line = line(3, Origin::Script, &[Bytes::from("set"), Bytes::from("k")]);
        let text = String::from_utf8(line).unwrap();
        assert!(text.ends_with(" [3 lua] \"set\" \"k\"\r\n"), "{text}");
    }
}
