//! Starting, stopping and rewriting the AOF's files.
//!
//! A rewrite (BGREWRITEAOF, `CONFIG SET appendonly yes`, the automatic rewrite, the first
//! start with `appendonly yes`) writes a new base file from the current data (an RDB file
//! with `aof-use-rdb-preamble yes`, else RESTORE commands), opens a new empty incremental
//! file, and then replaces the manifest by rename: a crash at any point leaves the old
//! manifest with all its files, or the new one with all of its. The files the old
//! manifest named are deleted after that.
//!
//! The base is written under the keyspace lock for now, as SAVE is, so no write can fall
//! between the snapshot and the new incremental file. [`write_base`] is the seam where a
//! point-in-time snapshot that does not stop the node (BGSAVE's) takes over: it then must
//! switch to the new incremental file at the snapshot's instant.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use slotproxy::resp::encode_request;

use super::manifest::{FileEntry, Kind, Manifest};
use crate::keyspace::{unix_time_ms, Keyspace};
use crate::persistence::disk;
use crate::persistence::rdb::Encodings;
use crate::server::clients::lock;
use crate::server::Shared;

/// The AOF directory and the files' base name, from the settings.
pub fn location(shared: &Shared) -> (PathBuf, String) {
    let config = shared.config();
    (
        config.dir.join(&config.aof.dirname),
        config.aof.filename.clone(),
    )
}

pub fn manifest_name(filename: &str) -> String {
    format!("{filename}.manifest")
}

/// Reads the manifest of the AOF directory, if there is one.
pub fn read_manifest(dir: &Path, filename: &str) -> io::Result<Option<Manifest>> {
    let path = dir.join(manifest_name(filename));
    match fs::read_to_string(&path) {
        Ok(text) => Manifest::parse(&text)
            .map(Some)
            .map_err(|e| io::Error::other(format!("AOF manifest {}: {e}", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::other(format!(
            "can't read the AOF manifest {}: {e}",
            path.display()
        ))),
    }
}

/// Starts logging. `after_load`: the data came from the existing manifest's files, and the
/// log goes on in its last incremental file. Otherwise (`CONFIG SET appendonly yes`, a
/// first start) base, incremental file and manifest are made from the current data.
pub fn start(shared: &Shared, keyspace: &mut Keyspace, after_load: bool) -> io::Result<()> {
    let (dir, filename) = location(shared);
    fs::create_dir_all(&dir)?;
    let existing = if after_load {
        read_manifest(&dir, &filename)?
    } else {
        None
    };
    match existing {
        Some(mut manifest) => {
            if manifest.incrs.is_empty() {
                let seq = manifest.next_incr_seq();
                manifest.incrs.push(FileEntry {
                    name: incr_name(&filename, seq),
                    seq,
                    kind: Kind::Incr,
                });
                write_manifest(&dir, &filename, &manifest)?;
            }
            let incr = manifest
                .incrs
                .last()
                .map(|i| i.name.clone())
                .unwrap_or_default();
            let file = open_incr(&dir.join(&incr))?;
            let size = files_size(&dir, &manifest);
            let base_size = manifest
                .base
                .as_ref()
                .map_or(0, |b| file_size(&dir.join(&b.name)));
            install(shared, keyspace, file, dir, manifest, size, base_size);
            Ok(())
        }
        None => rewrite_and(shared, keyspace, true),
    }
}

/// The first start with `appendonly yes` and no AOF: base (of the empty data), incremental
/// file and manifest are created, not counted as a rewrite in INFO (as in Redis).
pub fn create_at_start(shared: &Shared, keyspace: &mut Keyspace) -> io::Result<()> {
    rewrite_files(shared, keyspace, true)
}

/// Stops logging (`CONFIG SET appendonly no`): what was logged is written and fsynced, the
/// files stay as they are.
pub fn stop(shared: &Shared, keyspace: &mut Keyspace) {
    let aof = &shared.aof;
    aof.write_out();
    aof.fsync_written();
    aof.on.store(false, Relaxed);
    let mut writer = lock(&aof.writer);
    writer.file = None;
    writer.buffer.clear();
    keyspace.propagation.set_enabled(false);
}

/// Rewrites the log from the current data and switches to a new incremental file
/// (BGREWRITEAOF). With the AOF off, only the base and a manifest naming it are written,
/// as Redis 7.0 does.
pub fn rewrite(shared: &Shared, keyspace: &mut Keyspace) -> io::Result<()> {
    let log = shared.aof.is_on();
    rewrite_and(shared, keyspace, log)
}

fn rewrite_and(shared: &Shared, keyspace: &mut Keyspace, log: bool) -> io::Result<()> {
    let started = Instant::now();
    let result = rewrite_files(shared, keyspace, log);
    let stats = &shared.aof.stats;
    stats.last_rewrite_ok.store(result.is_ok(), Relaxed);
    stats
        .last_rewrite_time_sec
        .store(started.elapsed().as_secs() as i64, Relaxed);
    match &result {
        Ok(()) => {
            stats.rewrites.fetch_add(1, Relaxed);
            stats.consecutive_failures.store(0, Relaxed);
            println!(
                "Background AOF rewrite finished successfully in {:.3} seconds",
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            stats.consecutive_failures.fetch_add(1, Relaxed);
            eprintln!("Background AOF rewrite failed: {e}")
        }
    }
    result
}

fn rewrite_files(shared: &Shared, keyspace: &mut Keyspace, log: bool) -> io::Result<()> {
    let (dir, filename) = location(shared);
    fs::create_dir_all(&dir)?;
    let aof = &shared.aof;
    // Everything logged so far reaches the old files first.
    aof.write_out();
    aof.fsync_written();
    let current = {
        let writer = lock(&aof.writer);
        writer.file.is_some().then(|| writer.manifest.clone())
    };
    let old = match current {
        Some(manifest) => manifest,
        None => read_manifest(&dir, &filename)
            .ok()
            .flatten()
            .unwrap_or_default(),
    };

    let preamble = shared.config().aof.use_rdb_preamble;
    let base_seq = old.next_base_seq();
    let base_name = format!(
        "{filename}.{base_seq}.base.{}",
        if preamble { "rdb" } else { "aof" }
    );
    let temp = dir.join(format!("temp-rewriteaof-{}.aof", std::process::id()));
    let base_path = dir.join(&base_name);
    let written = disk::write_then_rename(&temp, &base_path, &dir, |file| {
        write_base(shared, keyspace, file, preamble)
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    let mut manifest = Manifest {
        base: Some(FileEntry {
            name: base_name.clone(),
            seq: base_seq,
            kind: Kind::Base,
        }),
        incrs: Vec::new(),
        history: Vec::new(),
    };
    let mut file = None;
    if log {
        let seq = old.next_incr_seq();
        let name = incr_name(&filename, seq);
        file = Some(open_incr(&dir.join(&name))?);
        manifest.incrs.push(FileEntry {
            name,
            seq,
            kind: Kind::Incr,
        });
    }
    write_manifest(&dir, &filename, &manifest)?;
    let kept: Vec<&str> = manifest.incrs.iter().map(|f| f.name.as_str()).collect();
    for entry in old.base.iter().chain(&old.incrs).chain(&old.history) {
        if entry.name != base_name && !kept.contains(&entry.name.as_str()) {
            let _ = fs::remove_file(dir.join(&entry.name));
        }
    }
    let base_size = file_size(&base_path);
    if let Some(file) = file {
        install(shared, keyspace, file, dir, manifest, base_size, base_size);
    }
    Ok(())
}

/// Makes `file` the incremental file the log appends to and turns logging on.
fn install(
    shared: &Shared,
    keyspace: &mut Keyspace,
    file: File,
    dir: PathBuf,
    manifest: Manifest,
    size: u64,
    base_size: u64,
) {
    let aof = &shared.aof;
    aof.apply_settings(&shared.config());
    {
        let mut writer = lock(&aof.writer);
        writer.file = Some(Arc::new(file));
        writer.dir = dir;
        writer.manifest = manifest;
        writer.buffer.clear();
    }
    aof.stats.current_size.store(size, Relaxed);
    aof.stats.base_size.store(base_size, Relaxed);
    aof.stats.rewrite_base_size.store(size, Relaxed);
    // The new file starts with SELECT, and offsets go on from where the stream is.
    keyspace.propagation.set_enabled(true);
    let offset = keyspace.propagation.offset();
    aof.written_upto.store(offset, Relaxed);
    aof.synced_upto.store(offset, Relaxed);
    aof.on.store(true, Relaxed);
}

/// Writes the rewrite's base: the data as an RDB file (the preamble), or as commands that
/// recreate it. SEAM: the point-in-time snapshot replaces this lock-holding write.
pub fn write_base(
    shared: &Shared,
    keyspace: &mut Keyspace,
    file: &File,
    preamble: bool,
) -> io::Result<()> {
    if preamble {
        return disk::write_rdb_to(shared, keyspace, file).map(|_| ());
    }
    let encodings = Encodings::from_config(&shared.config());
    let now = unix_time_ms();
    let mut out = bytes::BytesMut::new();
    let mut sink = io::BufWriter::new(file);
    for code in lock(&shared.scripting.functions)
        .libraries()
        .iter()
        .map(|l| l.code.clone())
    {
        encode_request(&mut out, &[&b"FUNCTION"[..], b"LOAD", &code[..]]);
    }
    for (index, db) in keyspace.dbs().iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        encode_request(&mut out, &[&b"SELECT"[..], index.to_string().as_bytes()]);
        for entry in db.entries().filter(|e| !e.is_expired(now)) {
            // RESTORE recreates any type exactly, encodings and TTL included.
            let payload = crate::persistence::payload::dump(&entry.value, &encodings);
            let ttl = entry.expire_at_ms.to_string();
            encode_request(
                &mut out,
                &[
                    &b"RESTORE"[..],
                    &entry.key[..],
                    ttl.as_bytes(),
                    &payload,
                    b"ABSTTL",
                ],
            );
            if out.len() >= 64 * 1024 {
                sink.write_all(&out)?;
                out.clear();
            }
        }
    }
    sink.write_all(&out)?;
    sink.flush()
}

fn incr_name(filename: &str, seq: u64) -> String {
    format!("{filename}.{seq}.incr.aof")
}

fn open_incr(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn write_manifest(dir: &Path, filename: &str, manifest: &Manifest) -> io::Result<()> {
    let temp = dir.join(format!("temp-{}", manifest_name(filename)));
    let target = dir.join(manifest_name(filename));
    disk::write_then_rename(&temp, &target, dir, |mut file| {
        file.write_all(manifest.render().as_bytes())
    })
}

fn file_size(path: &Path) -> u64 {
    fs::metadata(path).map_or(0, |m| m.len())
}

fn files_size(dir: &Path, manifest: &Manifest) -> u64 {
    manifest
        .base
        .iter()
        .chain(&manifest.incrs)
        .map(|f| file_size(&dir.join(&f.name)))
        .sum()
}

/// Whether the log grew enough since the last rewrite for an automatic one
/// (`auto-aof-rewrite-percentage`, `auto-aof-rewrite-min-size`).
pub fn wants_auto_rewrite(shared: &Shared) -> bool {
    if !shared.aof.is_on() {
        return false;
    }
    let (percentage, min_size) = {
        let config = shared.config();
        (
            config.aof.auto_rewrite_percentage,
            config.aof.auto_rewrite_min_size,
        )
    };
    let stats = &shared.aof.stats;
    let size = stats.current_size.load(Relaxed);
    let base = stats.rewrite_base_size.load(Relaxed).max(1);
    percentage > 0 && size >= min_size && (size - base.min(size)) * 100 / base >= percentage
}
