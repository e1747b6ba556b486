//! LZF compression, byte-compatible with the liblzf build inside Redis.
//!
//! # Format
//! A stream of chunks, each starting with a control byte:
//! - `000LLLLL` then `L+1` literal bytes;
//! - `LLLooooo oooooooo`: copy `L+2` bytes from `o+1` bytes back in the output (`L` 1..6);
//! - `111ooooo LLLLLLLL oooooooo`: the same with length `L+9`.
//!
//! # Why the compressor mirrors liblzf step by step
//! Any valid stream decompresses, but DUMP payloads are compared byte for byte with Redis's,
//! so the compressor makes the same choices liblzf 3.6 does with Redis's settings (the
//! reference redis-server 7.0 links the system liblzf 3.6): a 2^16-entry hash table indexed
//! by liblzf's "very fast" hash of the next three bytes, after a match only the two positions
//! before the resume point hashed, matches of at most 264 bytes within 8 KiB, and the same
//! output-limit checks that make it give up early. Two quirks are kept on purpose: a match
//! against input position 0 is never used, and a match may start as late as three bytes
//! before the end (the copy of liblzf bundled in Redis's sources stops four bytes earlier, so
//! builds using it can choose differently near the end of a string; either decompresses the
//! other's output). liblzf does not clear its table between calls; this implementation starts
//! from an empty one, which matched redis-server on every value tried.
//!
//! The table (2^16 slots) is kept per thread between calls: allocating and zeroing it for
//! every string made SAVE of a million small values 17 times slower than Redis's (the
//! page faults of a fresh 256 KiB allocation each time). Each slot carries the generation
//! of the call that wrote it, so a slot from an earlier call reads as empty without
//! clearing anything.

use std::cell::RefCell;
use std::fmt;

const HASH_LOG: u32 = 16;
const HASH_SIZE: usize = 1 << HASH_LOG;
const MAX_LITERAL: usize = 1 << 5;
const MAX_OFFSET: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

/// Why a compressed stream could not be decompressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LzfError {
    /// The stream ends inside a chunk or refers back before the start of the output.
    Corrupt,
    /// The stream decompresses to more bytes than announced.
    TooLong,
}

impl fmt::Display for LzfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LzfError::Corrupt => f.write_str("corrupt LZF stream"),
            LzfError::TooLong => f.write_str("LZF stream longer than announced"),
        }
    }
}

impl std::error::Error for LzfError {}

/// The compressor's hash table: input positions + 1 (0 is the empty slot, a null pointer
/// in liblzf), tagged with the generation of the call that stored them.
struct HashTable {
    slots: Box<[u64]>,
    generation: u32,
}

impl HashTable {
    fn new() -> HashTable {
        HashTable {
            slots: vec![0; HASH_SIZE].into_boxed_slice(),
            generation: 0,
        }
    }

    /// Empties the table for a new call.
    fn begin(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 2^32 calls the tags repeat: clear for real once.
            self.slots.fill(0);
            self.generation = 1;
        }
    }

    fn get(&self, slot: usize) -> u32 {
        let value = self.slots[slot];
        if (value >> 32) as u32 == self.generation {
            value as u32
        } else {
            0
        }
    }

    fn set(&mut self, slot: usize, position_plus_one: u32) {
        self.slots[slot] = (u64::from(self.generation) << 32) | u64::from(position_plus_one);
    }
}

thread_local! {
    static TABLE: RefCell<HashTable> = RefCell::new(HashTable::new());
}

/// liblzf's hash of the three bytes at `p` (`hval` holds the bytes before it).
fn hash_index(hval: u32) -> usize {
    ((hval >> (3 * 8 - HASH_LOG)).wrapping_sub(hval.wrapping_mul(5)) & (HASH_SIZE as u32 - 1))
        as usize
}

fn first(input: &[u8], p: usize) -> u32 {
    let byte = |i: usize| input.get(i).copied().unwrap_or(0) as u32;
    (byte(p) << 8) | byte(p + 1)
}

fn next(hval: u32, input: &[u8], p: usize) -> u32 {
    (hval << 8) | input[p + 2] as u32
}

/// Compresses `input` into at most `max_out` bytes, as `lzf_compress(input, max_out)`.
/// Returns None when the output would not fit (liblzf returns 0), which for Redis means
/// "store the string uncompressed".
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    if input.is_empty() || max_out == 0 {
        return None;
    }
    TABLE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut table) => compress_with(&mut table, input, max_out),
        Err(_) => compress_with(&mut HashTable::new(), input, max_out),
    })
}

fn compress_with(table: &mut HashTable, input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    let in_len = input.len();
    table.begin();
    // liblzf may write the byte just past `max_out` before giving up (Redis allocates one
    // spare byte for it); the slack keeps those writes in bounds here.
    let mut out = vec![0u8; max_out + 2];
    let mut ip = 0usize;
    let mut lit = 0usize;
    // Each literal run reserves its control byte at `op - lit - 1`.
    let mut op = 1usize;
    let mut hval = first(input, ip);

    while ip + 2 < in_len {
        hval = next(hval, input, ip);
        let slot = hash_index(hval);
        let candidate = table.get(slot);
        table.set(slot, ip as u32 + 1);

        let matched_at = (candidate as usize).checked_sub(1).filter(|&r| {
            r < ip && ip - r - 1 < MAX_OFFSET && r > 0 && input[r..r + 3] == input[ip..ip + 3]
        });

        if let Some(r) = matched_at {
            let off = ip - r - 1;
            let max_len = (in_len - ip - 2).min(MAX_REF);
            // Room for the reference (3 bytes) and the next run's control byte, counting the
            // current run's control byte as free when that run is empty.
            if op - usize::from(lit == 0) + 3 + 1 >= max_out {
                return None;
            }
            // Close the literal run, or take back its unused control byte.
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            if lit == 0 {
                op -= 1;
            }
            let len = match_length(input, r, ip, max_len) - 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1;
            ip += len + 1;
            if ip + 2 >= in_len {
                break;
            }
            // Very-fast mode: hash only the two positions just before where scanning resumes.
            ip -= 2;
            hval = first(input, ip);
            for _ in 0..2 {
                hval = next(hval, input, ip);
                table.set(hash_index(hval), ip as u32 + 1);
                ip += 1;
            }
        } else {
            if op >= max_out {
                return None;
            }
            out[op] = input[ip];
            op += 1;
            ip += 1;
            lit += 1;
            if lit == MAX_LITERAL {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }

    if op + 3 > max_out {
        return None;
    }
    while ip < in_len {
        out[op] = input[ip];
        op += 1;
        ip += 1;
        lit += 1;
        if lit == MAX_LITERAL {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        op -= 1;
    }
    out.truncate(op);
    Some(out)
}

/// How many bytes match at `r` and `ip`, the first three known equal, measured the way
/// liblzf's unrolled loop does (it may look one step past `max_len` in that loop).
fn match_length(input: &[u8], r: usize, ip: usize, max_len: usize) -> usize {
    let mut len = 2;
    if max_len > 16 {
        for _ in 0..16 {
            len += 1;
            if input[r + len] != input[ip + len] {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if !(len < max_len && input[r + len] == input[ip + len]) {
            return len;
        }
    }
}

/// Decompresses a stream that must expand to exactly `expected_len` bytes or fewer; the
/// caller compares the length. Malformed input is an error, never a panic.
pub fn decompress(input: &[u8], expected_len: usize) -> Result<Vec<u8>, LzfError> {
    // Grow with the output actually produced rather than trusting the announced length, so a
    // hostile length cannot make the node reserve memory the stream never fills.
    let mut out: Vec<u8> = Vec::with_capacity(expected_len.min(input.len().saturating_mul(2)));
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            if out.len() + run > expected_len {
                return Err(LzfError::TooLong);
            }
            let literal = input.get(ip..ip + run).ok_or(LzfError::Corrupt)?;
            out.extend_from_slice(literal);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            let mut back = (ctrl & 0x1f) << 8;
            if len == 7 {
                len += *input.get(ip).ok_or(LzfError::Corrupt)? as usize;
                ip += 1;
            }
            back += *input.get(ip).ok_or(LzfError::Corrupt)? as usize;
            ip += 1;
            let len = len + 2;
            if out.len() + len > expected_len {
                return Err(LzfError::TooLong);
            }
            let start = out.len().checked_sub(back + 1).ok_or(LzfError::Corrupt)?;
            // Byte by byte: the source may overlap the bytes being written (runs).
            for i in start..start + len {
                let byte = out[i];
                out.push(byte);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        if let Some(packed) = compress(data, data.len() + 64) {
            assert_eq!(decompress(&packed, data.len()).unwrap(), data);
        }
    }

    #[test]
    fn compresses_like_redis() {
        // From redis-server 7.0: DUMP of 50 'a's stores these 9 bytes.
        let packed = compress(&[b'a'; 50], 46).unwrap();
        assert_eq!(packed, b"\x01aa\xe0\x25\x00\x01aa");
        assert_eq!(decompress(&packed, 50).unwrap(), vec![b'a'; 50]);
    }

    #[test]
    fn gives_up_exactly_where_redis_does() {
        // redis-server 7.0 stores this 28-byte value uncompressed: the late match at the
        // end leaves no room within 24 bytes; 23 more bytes make the same prefix compress.
        let value = b"aab--bb-aab--bb-aa-b-a-aa-a-";
        assert_eq!(compress(value, value.len() - 4), None);
        let longer = b"aab--bb-aab--bb-aa-b-a-aa-a-xxxxxxxxxxxxxxxxxxxxxxx";
        assert_eq!(
            compress(longer, longer.len() - 4).unwrap(),
            b"\x08aab--bb-a\xe0\x00\x07\x00- \x0c \x0e \x04\x00x\xe0\x0b\x00\x01xx"
        );
    }

    #[test]
    fn round_trips() {
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abcabcabcabcabcabcabcabcabcabcabcabcabcabc");
        let text = b"the rain in spain falls mainly on the plain. ".repeat(300);
        round_trip(&text);
        let mixed: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        round_trip(&mixed);
        let mut x = 12345u32;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        round_trip(&noise);
    }

    #[test]
    fn gives_up_when_output_does_not_fit() {
        let noise: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(97) ^ 0x5a).collect();
        assert_eq!(compress(&noise, noise.len() - 4), None);
        assert_eq!(compress(b"", 10), None);
        assert_eq!(compress(b"abc", 0), None);
    }

    #[test]
    fn rejects_malformed_streams_without_panicking() {
        // Literal run longer than the input.
        assert_eq!(decompress(b"\x05ab", 10), Err(LzfError::Corrupt));
        // Back reference before the start of the output.
        assert_eq!(decompress(b"\x00a\x20\x05", 10), Err(LzfError::Corrupt));
        // Back reference missing its offset byte, long form missing its length byte.
        assert_eq!(decompress(b"\x00a\x20", 10), Err(LzfError::Corrupt));
        assert_eq!(decompress(b"\x00a\xe0", 10), Err(LzfError::Corrupt));
        // More output than announced.
        assert_eq!(decompress(b"\x02abc", 2), Err(LzfError::TooLong));
        assert_eq!(decompress(b"\x00a\xe0\x25\x00", 10), Err(LzfError::TooLong));
        // Every truncation and every single-byte corruption of a valid stream is handled.
        let data = b"hello hello hello hello hello world world world".to_vec();
        let packed = compress(&data, data.len()).unwrap();
        for cut in 0..packed.len() {
            let _ = decompress(&packed[..cut], data.len());
        }
        for i in 0..packed.len() {
            for byte in [0u8, 0x1f, 0x20, 0xe0, 0xff] {
                let mut bad = packed.clone();
                bad[i] = byte;
                let _ = decompress(&bad, data.len());
            }
        }
    }
}
