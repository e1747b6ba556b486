//! The AOF base without the RDB preamble (`aof-use-rdb-preamble no`): commands that
//! recreate the data, `FUNCTION LOAD` for each library, then per database a `SELECT` and
//! one `RESTORE key ttl payload ABSTTL` per key (RESTORE recreates any type exactly,
//! encodings and TTL included). Keys already expired are left out.

use std::fs::File;
use std::io::{self, Write};

use bytes::{Bytes, BytesMut};
use slotproxy::resp::encode_request;

use crate::keyspace::{unix_time_ms, Entry};
use crate::persistence::rdb::Encodings;
use crate::persistence::rdb_file::Written;
use crate::persistence::snapshot::SnapshotSink;

/// Bytes gathered before they are handed to the file.
const FLUSH_AT: usize = 64 * 1024;

pub struct Commands<'f> {
    file: &'f File,
    out: BytesMut,
    /// Keys expired at this instant (the rewrite's start) are not written.
    now_ms: u64,
    written: Written,
}

impl<'f> Commands<'f> {
    pub fn start(file: &'f File, libraries: &[Bytes]) -> Commands<'f> {
        let mut out = BytesMut::new();
        for code in libraries {
            encode_request(&mut out, &[&b"FUNCTION"[..], b"LOAD", &code[..]]);
        }
        Commands {
            file,
            out,
            now_ms: unix_time_ms(),
            written: Written::default(),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.written.bytes += self.out.len() as u64;
        self.file.write_all(&self.out)?;
        self.out.clear();
        Ok(())
    }
}

impl SnapshotSink for Commands<'_> {
    fn begin_db(&mut self, index: usize, _keys: usize, _volatile: usize) {
        encode_request(
            &mut self.out,
            &[&b"SELECT"[..], index.to_string().as_bytes()],
        );
    }

    /// The access word is not written: an AOF of commands has no room for it in Redis
    /// either (only its RDB preamble does).
    fn entry(&mut self, entry: &Entry, _access: Option<u32>, encodings: &Encodings) {
        if entry.is_expired(self.now_ms) {
            return;
        }
        let payload = crate::persistence::payload::dump(&entry.value, encodings);
        let ttl = entry.expire_at_ms().to_string();
        encode_request(
            &mut self.out,
            &[
                &b"RESTORE"[..],
                entry.key().as_slice(),
                ttl.as_bytes(),
                &payload,
                b"ABSTTL",
            ],
        );
        self.written.keys += 1;
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.out.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn finish(mut self, _checksum: bool) -> io::Result<Written> {
        self.flush()?;
        Ok(self.written)
    }
}
