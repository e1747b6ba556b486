//! Loading the AOF at start (`appendonly yes`): the manifest's base file (an RDB file, or
//! commands), then every incremental file in order, each command run as a client would
//! run it.
//!
//! A file whose last command is cut short (a crash mid-write) loads up to the last whole
//! command when it is the last file and `aof-load-truncated yes`: the file is truncated
//! there, as Redis does. A transaction left open by the cut is dropped, back to before
//! its MULTI. With `aof-load-truncated no`, or anything malformed, the start stops with a
//! message naming the file and the offset: the node never serves half a log.

use std::fs::{self, OpenOptions};
use std::io;
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
    let data = fs::read(path).map_err(|e| {
        io::Error::other(format!(
            "can't open the append only file {}: {e}",
            path.display()
        ))
    })?;
    if data.starts_with(rdb_file::MAGIC) {
        drop(data);
        let loaded = disk::load(shared, keyspace, path, false)?;
        println!(
            "Loaded the RDB preamble {}: {} keys",
            path.display(),
            loaded.keys
        );
        return Ok(0);
    }
    replay(shared, keyspace, path, data, is_last, load_truncated)
}

/// Runs the commands of an AOF file.
fn replay(
    shared: &Shared,
    keyspace: &mut Keyspace,
    path: &Path,
    data: Vec<u8>,
    is_last: bool,
    load_truncated: bool,
) -> io::Result<u64> {
    let named =
        |what: String| io::Error::other(format!("append only file {}: {what}", path.display()));
    let total = data.len();
    let mut input = BytesMut::from(&data[..]);
    drop(data);
    let limits = Limits {
        max_bulk_len: usize::MAX,
        ..Limits::default()
    };
    let mut decoder = RequestDecoder::new(limits);
    let nowhere: SocketAddr = ([0, 0, 0, 0], 0).into();
    let mut client = Client::new(Arc::new(ClientHandle::new(0, nowhere, nowhere)), false);
    client.may_block = false;
    let mut output = BytesMut::new();
    let mut commands = 0;
    // Where the open transaction's MULTI starts.
    let mut multi_at = None;
    let cut_at = loop {
        let offset = total - input.len();
        let Some(&first) = input.first() else {
            break multi_at;
        };
        if first == b'#' {
            // An annotation (`#TS:...`): skipped.
            match input.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    input.advance(end + 1);
                    continue;
                }
                None => break Some(offset),
            }
        }
        if first != b'*' {
            return Err(named(format!("bad file format at offset {offset}")));
        }
        let args = match decoder.decode(&mut input) {
            Ok(Some(args)) => args,
            Ok(None) => break Some(multi_at.unwrap_or(offset)),
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
            file.set_len(cut_at as u64)?;
            file.sync_all()
        })
        .map_err(|e| named(format!("can't truncate it at offset {cut_at}: {e}")))?;
    Ok(commands)
}
