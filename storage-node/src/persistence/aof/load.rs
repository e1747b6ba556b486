//! Loading the AOF at start (`appendonly yes`): the manifest's base file (an RDB file, or
//! commands), then every incremental file in order, each command run as a client would
//! run it.
//!
//! A file whose last command is cut short (a crash mid-write) loads up to the last whole
//! command when it is the last file and `aof-load-truncated yes`: the file is truncated
//! there, as Redis does. A transaction left open by the cut is dropped, back to before
//! its MULTI. With `aof-load-truncated no`, or anything malformed, the start stops with a
//! message naming the file and the offset: the node never serves half a log.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use slotproxy::resp::{Limits, RequestDecoder};

use super::files::{self, location, read_manifest};
use crate::keyspace::{unix_time_ms, Keyspace};
use crate::persistence::{disk, rdb_file};
use crate::server::clients::{Client, ClientHandle};
use crate::server::Shared;

/// Loads the AOF before the node serves anyone, then starts logging.
pub fn load_at_start(shared: &Shared) -> io::Result<()> {
    let (dir, filename) = location(shared);
    let mut keyspace = shared.lock_keyspace();
    keyspace.set_now(unix_time_ms());
    let Some(manifest) = read_manifest(&dir, &filename)? else {
        // Redis 7.0 moves a pre-7.0 single-file AOF into the directory as its base; the
        // node does not do that yet, and starting empty beside it would lose its data.
        let old = shared.config().dir.join(&filename);
        if old.is_file() {
            return Err(io::Error::other(format!(
                "found the pre-7.0 append only file {} and no AOF manifest in {}: this node \
                 does not upgrade it to the multi-part layout yet (start redis-server 7.0 \
                 on it once to upgrade it, then this node)",
                old.display(),
                dir.display()
            )));
        }
        println!(
            "appendonly yes: no AOF manifest in {}, starting empty with a new AOF (the RDB \
             file is not loaded, as in Redis)",
            dir.display()
        );
        return files::create_at_start(shared, &mut keyspace);
    };
    let started = Instant::now();
    let load_truncated = shared.config().aof.load_truncated;
    let mut commands = 0;
    let last = manifest.incrs.len();
    if let Some(base) = &manifest.base {
        commands += load_file(
            shared,
            &mut keyspace,
            &dir.join(&base.name),
            last == 0,
            load_truncated,
        )?;
    }
    for (index, incr) in manifest.incrs.iter().enumerate() {
        let path = dir.join(&incr.name);
        commands += load_file(
            shared,
            &mut keyspace,
            &path,
            index + 1 == last,
            load_truncated,
        )?;
    }
    // The replayed commands are not the clients': INFO starts from zero.
    crate::server::stats::reset_all(shared, &mut keyspace);
    let keys: usize = keyspace.dbs().iter().map(|db| db.len()).sum();
    println!(
        "DB loaded from append only file: {keys} keys ({commands} commands replayed) from {} \
         in {:.3} seconds",
        dir.join(files::manifest_name(&filename)).display(),
        started.elapsed().as_secs_f64()
    );
    files::start(shared, &mut keyspace, true)
}

/// Loads one file of the manifest; returns the commands replayed.
fn load_file(
    shared: &Shared,
    keyspace: &mut Keyspace,
    path: &Path,
    is_last: bool,
    load_truncated: bool,
) -> io::Result<u64> {
    let cannot_open = |e: io::Error| {
        io::Error::other(format!(
            "can't open the append only file {}: {e}",
            path.display()
        ))
    };
    let mut file = File::open(path).map_err(cannot_open)?;
    let mut magic = [0u8; 5];
    let is_rdb = file.read_exact(&mut magic).is_ok() && magic == rdb_file::MAGIC;
    if is_rdb {
        drop(file);
        let loaded = disk::load(shared, keyspace, path, false)?;
        println!(
            "Loaded the RDB preamble {}: {} keys",
            path.display(),
            loaded.keys
        );
        return Ok(0);
    }
    file.seek(SeekFrom::Start(0)).map_err(cannot_open)?;
    replay(shared, keyspace, path, file, is_last, load_truncated)
}

/// Bytes read from an AOF file at a time: the file is streamed, never held whole.
const READ_CHUNK: usize = 1024 * 1024;

/// Runs the commands of an AOF file.
fn replay(
    shared: &Shared,
    keyspace: &mut Keyspace,
    path: &Path,
    mut file: File,
    is_last: bool,
    load_truncated: bool,
) -> io::Result<u64> {
    let named =
        |what: String| io::Error::other(format!("append only file {}: {what}", path.display()));
    let mut input = BytesMut::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    // Bytes read so far; `read - input.len()` is the offset of `input[0]` in the file.
    let mut read: u64 = 0;
    let mut eof = false;
    let mut refill = |input: &mut BytesMut, read: &mut u64, eof: &mut bool| -> io::Result<()> {
        let n = file.read(&mut chunk)?;
        input.extend_from_slice(&chunk[..n]);
        *read += n as u64;
        *eof = n == 0;
        Ok(())
    };
    let limits = Limits {
        max_bulk_len: usize::MAX,
        ..Limits::default()
    };
    let mut decoder = RequestDecoder::new(limits);
    let nowhere: SocketAddr = ([0, 0, 0, 0], 0).into();
    let mut client = Client::new(Arc::new(ClientHandle::new(0, nowhere, nowhere)), false);
    client.may_block = false;
    client.loading = true;
    let mut output = BytesMut::new();
    let mut commands = 0;
    // Where the open transaction's MULTI starts, and where the command being read starts.
    let mut multi_at = None;
    let mut offset = 0;
    let cut_at = loop {
        if !decoder.in_progress() {
            offset = read - input.len() as u64;
            let Some(&first) = input.first() else {
                if eof {
                    break multi_at;
                }
                refill(&mut input, &mut read, &mut eof)?;
                continue;
            };
            if first == b'#' {
                // An annotation (`#TS:...`): skipped.
                match input.iter().position(|&b| b == b'\n') {
                    Some(end) => input.advance(end + 1),
                    None if eof => break Some(multi_at.unwrap_or(offset)),
                    None => refill(&mut input, &mut read, &mut eof)?,
                }
                continue;
            }
            if first != b'*' {
                return Err(named(format!("bad file format at offset {offset}")));
            }
        }
        let args = match decoder.decode(&mut input) {
            Ok(Some(args)) => args,
            Ok(None) if eof => break Some(multi_at.unwrap_or(offset)),
            Ok(None) => {
                refill(&mut input, &mut read, &mut eof)?;
                continue;
            }
            Err(e) => return Err(named(format!("bad file format at offset {offset}: {e}"))),
        };
        if crate::cmd::find_command(shared, &args).is_err() {
            return Err(named(format!(
                "unknown command '{}' at offset {offset}",
                String::from_utf8_lossy(&args[0])
            )));
        }
        let opens = args[0].eq_ignore_ascii_case(b"multi") && client.multi.is_none();
        output.clear();
        crate::cmd::execute(shared, keyspace, &mut client, &mut output, &args);
        commands += 1;
        if opens {
            multi_at = Some(offset);
        } else if client.multi.is_none() {
            multi_at = None;
        }
    };
    let total = read;
    let Some(cut_at) = cut_at else {
        return Ok(commands);
    };
    // The file ends inside a command or a transaction.
    crate::cmd::release_client_state(keyspace, &mut client);
    if !is_last {
        return Err(named(format!(
            "truncated at offset {cut_at}, and it is not the last file of the manifest"
        )));
    }
    if !load_truncated {
        return Err(named(format!(
            "unexpected end of file at offset {cut_at} (of {total} bytes): the last command \
             is incomplete. Start with aof-load-truncated yes to load the file up to there \
             (and truncate it), or repair it with redis-check-aof --fix"
        )));
    }
    eprintln!(
        "!!! Warning: short read while loading the append only file {}!!! Truncating it at \
         offset {cut_at} (of {total} bytes): AOF loaded anyway because aof-load-truncated is \
         enabled",
        path.display()
    );
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| {
            file.set_len(cut_at)?;
            file.sync_all()
        })
        .map_err(|e| named(format!("can't truncate it at offset {cut_at}: {e}")))?;
    Ok(commands)
}
