//! The replication backlog: the last bytes of the replication stream, so that a replica
//! that lost its link for a moment continues with `+CONTINUE` instead of a full sync.
//!
//! Offsets here are 0-based stream positions: `end()` is Redis's `master_repl_offset`
//! (bytes ever fed), and the first byte held is at `start()`, which Redis reports as
//! `repl_backlog_first_byte_offset` = `start() + 1`. A replica's `PSYNC <replid> <n>`
//! asks for the bytes from position `n - 1`.
//!
//! The bytes are kept as the chunks they were fed in (no copy). The backlog keeps at
//! least `size` bytes, and also everything from `keep_from` on: the position the slowest
//! connected replica still has to be sent (Redis 7.0 shares one buffer between the
//! backlog and the replicas' output in the same way). The replica output limit decides
//! when such a replica is dropped instead.

use std::collections::VecDeque;

use bytes::Bytes;

#[derive(Debug)]
pub struct Backlog {
    /// Each chunk with the stream position of its first byte, so that a read finds its
    /// chunk by binary search (a replica reads after every write batch, and the backlog
    /// holds many small chunks).
    chunks: VecDeque<(u64, Bytes)>,
    /// Stream position of the first byte of `chunks[0]`.
    start: u64,
    /// Bytes held in `chunks`.
    len: u64,
    /// `repl-backlog-size`.
    size: u64,
}

impl Backlog {
    /// An empty backlog whose next byte is at stream position `end`.
    pub fn new(size: u64, end: u64) -> Backlog {
        Backlog {
            chunks: VecDeque::new(),
            start: end,
            len: 0,
            size,
        }
    }

    /// Redis's `master_repl_offset`: bytes ever fed.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }

    /// Position of the first byte held.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// `repl_backlog_histlen`.
    pub fn histlen(&self) -> u64 {
        self.len
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn set_size(&mut self, size: u64) {
        self.size = size;
    }

    /// Appends a piece of the stream. Whole chunks at the front are dropped while the
    /// rest still holds `size` bytes and they end before `keep_from`.
    pub fn push(&mut self, chunk: Bytes, keep_from: u64) {
        if chunk.is_empty() {
            return;
        }
        let at = self.end();
        self.len += chunk.len() as u64;
        self.chunks.push_back((at, chunk));
        while let Some((_, front)) = self.chunks.front() {
            let front_len = front.len() as u64;
            let rest = self.len - front_len;
            if rest < self.size || self.start + front_len > keep_from {
                break;
            }
            self.chunks.pop_front();
            self.start += front_len;
            self.len = rest;
        }
    }

    /// The bytes from stream position `from` to the end, at most about `max` of them
    /// (whole chunks, the first one cut), or `None` when `from` is no longer (or not yet)
    /// held.
    pub fn read_from(&self, from: u64, max: usize) -> Option<Vec<Bytes>> {
        if from < self.start || from > self.end() {
            return None;
        }
        // The first chunk that ends after `from`.
        let first = self
            .chunks
            .partition_point(|(at, chunk)| at + chunk.len() as u64 <= from);
        let mut out = Vec::new();
        let mut taken = 0usize;
        for (at, chunk) in self.chunks.range(first..) {
            // `from` is inside the first chunk (so the cut fits in usize), before the others.
            let skip = from.saturating_sub(*at) as usize;
            let piece = chunk.slice(skip..);
            taken += piece.len();
            out.push(piece);
            if taken >= max {
                break;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(parts: Option<Vec<Bytes>>) -> Option<Vec<u8>> {
        parts.map(|p| p.concat())
    }

    #[test]
    fn keeps_size_bytes_and_what_replicas_still_need() {
        let mut b = Backlog::new(4, 10);
        b.push(Bytes::from_static(b"abc"), u64::MAX);
        b.push(Bytes::from_static(b"def"), u64::MAX);
        assert_eq!((b.start(), b.end()), (10, 16));
        // "abc" can go only when "def..." still holds 4 bytes.
        b.push(Bytes::from_static(b"gh"), u64::MAX);
        assert_eq!((b.start(), b.histlen()), (13, 5));
        assert_eq!(joined(b.read_from(14, usize::MAX)), Some(b"efgh".to_vec()));
        assert_eq!(joined(b.read_from(18, usize::MAX)), Some(Vec::new()));
        assert_eq!(b.read_from(12, usize::MAX), None);
        assert_eq!(b.read_from(19, usize::MAX), None);
        // A replica at 13 keeps "def" although the size would let it go.
        b.push(Bytes::from_static(b"ijklm"), 13);
        assert_eq!(b.start(), 13);
        b.push(Bytes::from_static(b"n"), 16);
        assert_eq!(b.start(), 16);
    }

    #[test]
    fn reads_from_every_position_of_many_chunks() {
        let mut b = Backlog::new(1 << 20, 5);
        let mut all = Vec::new();
        for n in 0..200u32 {
            let chunk = format!("<{n}>").into_bytes();
            all.extend_from_slice(&chunk);
            b.push(Bytes::from(chunk), u64::MAX);
        }
        for from in 5..=b.end() {
            let got = joined(b.read_from(from, usize::MAX)).unwrap();
            assert_eq!(got, all[(from - 5) as usize..], "from {from}");
        }
        // At most about `max` bytes: whole chunks, the first one cut.
        let some = b.read_from(6, 4).unwrap();
        assert_eq!(some.concat(), b"0><1>".to_vec());
    }
}
