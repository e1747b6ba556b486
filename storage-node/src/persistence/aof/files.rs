//! Starting, stopping and rewriting the AOF's files.
//!
//! Every manifest change is a rename: a crash at any point leaves the old manifest with
//! all its files, or the new one with all of its. A rewrite (BGREWRITEAOF, `CONFIG SET
//! appendonly yes`, the automatic rewrite) runs in the background from the point-in-time
//! snapshot, see [`super::rewrite`]; only the first start with `appendonly yes` writes
//! its (empty) base here at once.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::base::Commands;
use super::manifest::{FileEntry, Kind, Manifest};
use super::rewrite;
use crate::keyspace::Keyspace;
use crate::persistence::disk;
use crate::persistence::rdb_file::Sink;
use crate::persistence::snapshot::SnapshotSink;
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
        None => {
            // Redis kills a running rewrite and starts one that logs from its instant.
            let background = &shared.persistence.background;
            if background.rewriting() {
                background.abort(shared, keyspace);
            }
            match rewrite::begin(shared, keyspace, false) {
                Ok(_) => Ok(()),
                Err(rewrite::BeginError::Failed(e)) => Err(e),
                // The stopped rewrite's thread has not ended yet: the cron starts the new
                // one (which turns logging on) after it.
                Err(rewrite::BeginError::AlreadyRunning) => {
                    background.aof_scheduled.store(true, Relaxed);
                    Ok(())
                }
            }
        }
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
    // Redis kills a running rewrite: the manifest it wrote at its start stays valid.
    let background = &shared.persistence.background;
    if background.rewriting() {
        background.abort(shared, keyspace);
    }
    background.aof_scheduled.store(false, Relaxed);
    aof.write_out();
    aof.fsync_written();
    aof.on.store(false, Relaxed);
    let mut writer = lock(&aof.writer);
    writer.file = None;
    writer.buffer.clear();
    drop(writer);
    // Replicas may still consume the stream.
    crate::propagation::refresh_consumers(shared, keyspace);
}

/// The first start with `appendonly yes` and no AOF (the data is empty): base, incremental
/// file and manifest written at once, before clients are served; not counted as a
/// rewrite in INFO (as in Redis).
fn rewrite_files(shared: &Shared, keyspace: &mut Keyspace, log: bool) -> io::Result<()> {
    let (dir, filename) = location(shared);
    fs::create_dir_all(&dir)?;
    let preamble = shared.config().aof.use_rdb_preamble;
    let base_name = format!("{filename}.1.base.{}", if preamble { "rdb" } else { "aof" });
    let temp = dir.join(format!("temp-rewriteaof-{}.aof", std::process::id()));
    let base_path = dir.join(&base_name);
    disk::write_then_rename(&temp, &base_path, &dir, |file| {
        write_base(shared, keyspace, file, preamble)
    })?;
    let mut manifest = Manifest {
        base: Some(FileEntry {
            name: base_name,
            seq: 1,
            kind: Kind::Base,
        }),
        incrs: Vec::new(),
        history: Vec::new(),
    };
    let name = incr_name(&filename, 1);
    let file = create_incr(&dir.join(&name))?;
    manifest.incrs.push(FileEntry {
        name,
        seq: 1,
        kind: Kind::Incr,
    });
    write_manifest(&dir, &filename, &manifest)?;
    let base_size = file_size(&base_path);
    if log {
        install(shared, keyspace, file, dir, manifest, base_size, base_size);
    }
    Ok(())
}

/// Makes `file` the incremental file the log appends to and turns logging on.
pub(super) fn install(
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

/// Writes a base of the whole keyspace under the keyspace lock (the first start's empty
/// one); BGREWRITEAOF writes it from the snapshot with the same sinks.
fn write_base(
    shared: &Shared,
    keyspace: &mut Keyspace,
    file: &File,
    preamble: bool,
) -> io::Result<()> {
    let setup = disk::SaveSetup::new(shared);
    let libraries = disk::library_codes(shared);
    if preamble {
        let mut params = setup.params(&libraries);
        params.aof_base = true;
        write_all(keyspace, Sink::start(file, &params), &setup)
    } else {
        write_all(keyspace, Commands::start(file, &libraries), &setup)
    }
}

fn write_all(
    keyspace: &Keyspace,
    mut sink: impl SnapshotSink,
    setup: &disk::SaveSetup,
) -> io::Result<()> {
    for (index, db) in keyspace.dbs().iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        sink.begin_db(index, db.len(), db.volatile_len());
        for stored in db.entries_stored() {
            sink.entry(stored.entry, Some(stored.access), &setup.encodings);
            sink.flush_if_full()?;
        }
    }
    sink.finish(setup.checksum).map(|_| ())
}

pub(super) fn incr_name(filename: &str, seq: u64) -> String {
    format!("{filename}.{seq}.incr.aof")
}

fn open_incr(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// A new incremental file: empty even if a failed attempt left one of that name.
pub(super) fn create_incr(path: &Path) -> io::Result<File> {
    // Written only at its end by the one writer, so the cursor is the end.
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

pub(super) fn write_manifest(dir: &Path, filename: &str, manifest: &Manifest) -> io::Result<()> {
    let temp = dir.join(format!("temp-{}", manifest_name(filename)));
    let target = dir.join(manifest_name(filename));
    disk::write_then_rename(&temp, &target, dir, |mut file| {
        file.write_all(manifest.render().as_bytes())
    })
}

pub(super) fn file_size(path: &Path) -> u64 {
    fs::metadata(path).map_or(0, |m| m.len())
}

pub(super) fn files_size(dir: &Path, manifest: &Manifest) -> u64 {
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
    if !shared.aof.is_on() || shared.persistence.background.busy() {
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
