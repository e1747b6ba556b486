//! The slow log (SLOWLOG GET / LEN / RESET): the latest commands that ran for at least
//! `slowlog-log-slower-than` microseconds, newest first, at most `slowlog-max-len` of them.
//!
//! An entry keeps what Redis 7.0's `slowlogCreateEntry` keeps: a running id, the unix time,
//! the duration in microseconds, the arguments (at most 32; the last of those then says
//! `... (N more arguments)`, and an argument longer than 128 bytes is cut and followed by
//! `... (N more bytes)`), the client's address and its name. Secrets are redacted first
//! (see [`super::redact`]).

use std::collections::VecDeque;

use bytes::Bytes;

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC` and `SLOWLOG_ENTRY_MAX_STRING`.
const MAX_ARGS: usize = 32;
const MAX_ARG_BYTES: usize = 128;

#[derive(Debug, Clone)]
pub struct SlowEntry {
    pub id: u64,
    pub unix_time: u64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    pub addr: String,
    pub name: Bytes,
}

#[derive(Debug)]
pub struct SlowLog {
    /// Newest first.
    entries: VecDeque<SlowEntry>,
    next_id: u64,
    /// `slowlog-log-slower-than` in microseconds; negative turns the log off.
    pub slower_than: i64,
    /// `slowlog-max-len`.
    pub max_len: u64,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            entries: VecDeque::new(),
            next_id: 0,
            slower_than: 10_000,
            max_len: 128,
        }
    }
}

impl SlowLog {
    /// Whether a command that ran `micros` belongs in the log.
    pub fn wants(&self, micros: u64) -> bool {
        self.slower_than >= 0 && micros >= self.slower_than as u64
    }

    /// Adds an entry if the command was slow enough, and drops the oldest beyond
    /// `max_len` (as Redis, only when something is pushed).
    pub fn record(&mut self, args: &[Bytes], micros: u64, addr: String, name: Bytes) {
        if !self.wants(micros) {
            return;
        }
        let entry = SlowEntry {
            id: self.next_id,
            unix_time: crate::keyspace::unix_time_ms() / 1000,
            micros,
            args: shorten(args),
            addr,
            name,
        };
        self.next_id += 1;
        self.entries.push_front(entry);
        while self.entries.len() as u64 > self.max_len {
            self.entries.pop_back();
        }
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> impl Iterator<Item = &SlowEntry> {
        self.entries.iter().take(count)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets the entries; ids keep counting, as in Redis.
    pub fn reset(&mut self) {
        self.entries.clear();
    }
}

/// The arguments as an entry keeps them: 32 at most, none longer than 128 bytes.
fn shorten(args: &[Bytes]) -> Vec<Bytes> {
    let kept = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in args.iter().take(kept).enumerate() {
        if kept != args.len() && i == kept - 1 {
            let more = args.len() - kept + 1;
            out.push(Bytes::from(format!("... ({more} more arguments)")));
        } else if arg.len() > MAX_ARG_BYTES {
            let mut cut = arg[..MAX_ARG_BYTES].to_vec();
            let more = arg.len() - MAX_ARG_BYTES;
            cut.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
            out.push(Bytes::from(cut));
        } else {
            out.push(arg.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(n: usize) -> Vec<Bytes> {
        (0..n).map(|i| Bytes::from(i.to_string())).collect()
    }

    #[test]
    fn long_commands_are_cut_as_redis_cuts_them() {
        assert_eq!(shorten(&args(32)).len(), 32);
        let cut = shorten(&args(40));
        assert_eq!(cut.len(), 32);
        assert_eq!(cut[31], Bytes::from("... (9 more arguments)"));
        let long = shorten(&[Bytes::from(vec![b'a'; 130])]);
        assert_eq!(long[0].len(), 128 + "... (2 more bytes)".len());
    }

    #[test]
    fn the_log_keeps_the_newest_and_counts_on_after_reset() {
        let mut log = SlowLog {
            slower_than: 0,
            max_len: 2,
            ..SlowLog::default()
        };
        for _ in 0..3 {
            log.record(&args(1), 0, String::new(), Bytes::new());
        }
        assert_eq!(log.len(), 2);
        assert_eq!(log.newest(1).next().map(|e| e.id), Some(2));
        log.reset();
        log.record(&args(1), 0, String::new(), Bytes::new());
        assert_eq!(log.newest(1).next().map(|e| e.id), Some(3));
        log.slower_than = -1;
        log.record(&args(1), 1_000_000, String::new(), Bytes::new());
        assert_eq!(log.len(), 1);
    }
}
