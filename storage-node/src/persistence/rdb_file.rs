//! Writing a whole RDB file (`dump.rdb`), version 10, as Redis 7.0's `rdbSaveRio` lays it out.
//!
//! ```text
//! "REDIS0010"
//! AUX redis-ver, redis-bits, ctime, used-mem, aof-base      (0xFA key value)
//! FUNCTION2 library-code ...                                 (0xF5 string, one per library)
//! per non-empty database:
//!   SELECTDB index, RESIZEDB keys keys-with-expiry           (0xFE len, 0xFB len len)
//!   per key: [EXPIRETIME_MS unix-ms (8 bytes LE)] [IDLE seconds | FREQ counter] type key object
//! EOF                                                        (0xFF)
//! CRC-64 of everything before, 8 bytes LE (zeros with `rdbchecksum no`)
//! ```
//!
//! Objects go through the one encoder of [`super::rdb`] that DUMP uses. The file is
//! streamed through a buffer, so a save needs little memory beyond one object's encoding.
//! The IDLE (0xF8, a length) and FREQ (0xF9, one byte) hints are written as Redis 7.0's
//! `rdbSaveKeyValuePair` writes them: every key's idle seconds under an LRU
//! `maxmemory-policy`, its LFU counter (decayed to now) under an LFU one, neither
//! otherwise ([`AccessHints`]). Loading applies them as Redis's `objectSetLRUOrLFU` does
//! (`super::disk::add_loaded`), so a restart, DEBUG RELOAD or full sync keeps what
//! eviction knows about each key.

use std::io::{self, Write};

use super::crc64::crc64;
use super::rdb::{self, Encodings, RDB_VERSION};
use crate::config::memory::Policy;
use crate::keyspace::access::idle_seconds;
use crate::keyspace::lfu::Lfu;
use crate::keyspace::read_ahead::read_ahead;
use crate::keyspace::{Entry, Keyspace};

pub const MAGIC: &[u8] = b"REDIS";

// Opcodes, as in Redis 7.0's rdb.h.
pub const OPCODE_FUNCTION2: u8 = 0xF5;
pub const OPCODE_FUNCTION_PRE_GA: u8 = 0xF6;
pub const OPCODE_MODULE_AUX: u8 = 0xF7;
pub const OPCODE_IDLE: u8 = 0xF8;
pub const OPCODE_FREQ: u8 = 0xF9;
pub const OPCODE_AUX: u8 = 0xFA;
pub const OPCODE_RESIZEDB: u8 = 0xFB;
pub const OPCODE_EXPIRETIME_MS: u8 = 0xFC;
pub const OPCODE_EXPIRETIME: u8 = 0xFD;
pub const OPCODE_SELECTDB: u8 = 0xFE;
pub const OPCODE_EOF: u8 = 0xFF;

/// Bytes gathered before they are handed to the file.
const FLUSH_AT: usize = 64 * 1024;

/// What a save writes besides the keys.
pub struct SaveParams<'a> {
    pub encodings: Encodings,
    /// `rdbchecksum`: without it the trailer is eight zero bytes.
    pub checksum: bool,
    /// Unix seconds, for the `ctime` AUX field.
    pub now_unix: u64,
    /// Bytes the process uses, for the `used-mem` AUX field.
    pub used_mem: u64,
    /// The node's Redis-compatible version, for `redis-ver`.
    pub redis_version: &'a str,
    /// Each function library's code, in load order.
    pub libraries: Vec<&'a [u8]>,
    /// The file is an AOF's base (the `aof-base` AUX field is 1, as Redis writes it).
    pub aof_base: bool,
    pub hints: AccessHints,
}

/// Which access hint every key carries (Redis's `savelru` / `savelfu`), read from
/// `maxmemory-policy` when the save starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessHints {
    None,
    /// Under an LRU policy: seconds idle as of `now_ms`.
    Idle {
        now_ms: u64,
    },
    /// Under an LFU policy: the counter, decayed to `now_ms`.
    Frequency {
        lfu: Lfu,
        now_ms: u64,
    },
}

impl AccessHints {
    pub fn from_config(config: &crate::config::Config, now_ms: u64) -> AccessHints {
        match (config.memory.policy, config.lfu()) {
            (_, Some(lfu)) => AccessHints::Frequency { lfu, now_ms },
            (Policy::AllKeysLru | Policy::VolatileLru, None) => AccessHints::Idle { now_ms },
            _ => AccessHints::None,
        }
    }

    /// The hint for a key with access word `word`, as Redis lays it out.
    fn write(self, out: &mut Vec<u8>, word: u32) {
        match self {
            AccessHints::None => {}
            AccessHints::Idle { now_ms } => {
                out.push(OPCODE_IDLE);
                rdb::save_len(out, idle_seconds(word, now_ms));
            }
            AccessHints::Frequency { lfu, now_ms } => {
                out.push(OPCODE_FREQ);
                out.push(lfu.frequency(word, now_ms).min(255) as u8);
            }
        }
    }
}

/// Counts of what was written.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub keys: u64,
    pub bytes: u64,
}

/// A buffered writer of one RDB file that keeps the running CRC of everything written.
/// SAVE drives it over the whole keyspace at once, BGSAVE chunk by chunk
/// (`super::snapshot`): both lay the file out through these methods.
pub struct Sink<W: Write> {
    inner: W,
    buf: Vec<u8>,
    crc: u64,
    bytes: u64,
    keys: u64,
    hints: AccessHints,
}

impl<W: Write> Sink<W> {
    /// Starts the file: magic, version, AUX fields and function libraries.
    pub fn start(inner: W, params: &SaveParams<'_>) -> Sink<W> {
        let mut sink = Sink {
            inner,
            buf: Vec::with_capacity(FLUSH_AT * 2),
            crc: 0,
            bytes: 0,
            keys: 0,
            hints: params.hints,
        };
        let compress = params.encodings.compress;
        sink.buf.extend_from_slice(MAGIC);
        sink.buf
            .extend_from_slice(format!("{RDB_VERSION:04}").as_bytes());
        let ctime = params.now_unix.to_string();
        let used_mem = params.used_mem.to_string();
        for (key, value) in [
            ("redis-ver", params.redis_version),
            ("redis-bits", "64"),
            ("ctime", &ctime),
            ("used-mem", &used_mem),
            ("aof-base", if params.aof_base { "1" } else { "0" }),
        ] {
            aux(&mut sink.buf, key, value.as_bytes(), compress);
        }
        for code in &params.libraries {
            sink.buf.push(OPCODE_FUNCTION2);
            rdb::save_string_with(&mut sink.buf, code, compress);
        }
        sink
    }

    /// SELECTDB and RESIZEDB before a database's keys.
    pub fn begin_db(&mut self, index: usize, keys: usize, volatile: usize) {
        self.buf.push(OPCODE_SELECTDB);
        rdb::save_len(&mut self.buf, index as u64);
        self.buf.push(OPCODE_RESIZEDB);
        rdb::save_len(&mut self.buf, keys as u64);
        rdb::save_len(&mut self.buf, volatile as u64);
    }

    /// One key, with its expiry time and the hint its access word gives (if known), into
    /// the buffer (no I/O).
    pub fn entry(&mut self, entry: &Entry, access: Option<u32>, encodings: &Encodings) {
        if entry.has_expiry() {
            self.buf.push(OPCODE_EXPIRETIME_MS);
            self.buf
                .extend_from_slice(&entry.expire_at_ms().to_le_bytes());
        }
        if let Some(word) = access {
            self.hints.write(&mut self.buf, word);
        }
        self.buf.push(rdb::object_type(&entry.value));
        rdb::save_string_with(&mut self.buf, entry.key().as_slice(), encodings.compress);
        rdb::save_object(&mut self.buf, &entry.value, encodings);
        self.keys += 1;
    }

    pub fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// Hands the buffer to the file.
    pub fn flush_buf(&mut self) -> io::Result<()> {
        self.crc = crc64(self.crc, &self.buf);
        self.bytes += self.buf.len() as u64;
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// EOF and the CRC-64 trailer (zeros without `checksum`).
    pub fn finish(mut self, checksum: bool) -> io::Result<(W, Written)> {
        self.buf.push(OPCODE_EOF);
        self.flush_buf()?;
        let trailer = if checksum { self.crc } else { 0 };
        self.inner.write_all(&trailer.to_le_bytes())?;
        self.inner.flush()?;
        let written = Written {
            keys: self.keys,
            bytes: self.bytes + 8,
        };
        Ok((self.inner, written))
    }
}

fn aux(out: &mut Vec<u8>, key: &str, value: &[u8], compress: bool) {
    out.push(OPCODE_AUX);
    rdb::save_string_with(out, key.as_bytes(), compress);
    rdb::save_string_with(out, value, compress);
}

/// Writes the whole file for `keyspace` to `inner`. Expired keys not yet reclaimed are
/// written too, as Redis does; loading drops them.
pub fn write<W: Write>(
    inner: W,
    keyspace: &mut Keyspace,
    params: &SaveParams<'_>,
) -> io::Result<Written> {
    let mut sink = Sink::start(inner, params);
    for index in 0..keyspace.db_count() {
        let db = keyspace.db(index);
        if db.is_empty() {
            continue;
        }
        sink.begin_db(index, db.len(), db.volatile_len());
        for stored in read_ahead(|| db.entries_stored()) {
            sink.entry(stored.entry, Some(stored.access), &params.encodings);
            sink.flush_if_full()?;
        }
    }
    Ok(sink.finish(params.checksum)?.1)
}
