//! The RDB file on disk: saving it safely, loading it at start, and the figures INFO and
//! LASTSAVE report.
//!
//! A save writes `dir/temp-<pid>.rdb`, fsyncs it, renames it over `dir/dbfilename` and
//! fsyncs the directory, as Redis does: a crash at any point leaves either the old file or
//! the new one, never a torn one. It runs under the keyspace lock (SAVE blocks the node,
//! as in Redis); a snapshot that does not stop the world is the next step (BGSAVE).

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use super::rdb::Encodings;
use super::rdb_file::{self, SaveParams, Written};
use super::rdb_load::{self, LoadParams};
use crate::keyspace::{unix_time_ms, Keyspace};
use crate::scripting::functions::RestorePolicy;
use crate::server::clients::lock;
use crate::server::Shared;

/// What INFO persistence and LASTSAVE report.
pub struct SaveState {
    /// Unix seconds of the last successful save (the start time until then, as in Redis).
    last_save_unix: AtomicU64,
    saves: AtomicU64,
    /// The keyspace's write counter at the last save or load.
    dirty_at_save: AtomicU64,
    /// Keys the last load added, and those it dropped as already expired.
    last_load_keys: AtomicU64,
    last_load_expired: AtomicU64,
}

impl SaveState {
    pub fn new(started_unix: u64) -> SaveState {
        SaveState {
            last_save_unix: AtomicU64::new(started_unix),
            saves: AtomicU64::new(0),
            dirty_at_save: AtomicU64::new(0),
            last_load_keys: AtomicU64::new(0),
            last_load_expired: AtomicU64::new(0),
        }
    }

    pub fn last_save_unix(&self) -> u64 {
        self.last_save_unix.load(Relaxed)
    }

    /// Successful saves since start (`rdb_saves`).
    pub fn saves(&self) -> u64 {
        self.saves.load(Relaxed)
    }

    /// Writes since the last save or load (`rdb_changes_since_last_save`).
    pub fn changes_since_save(&self, keyspace: &Keyspace) -> u64 {
        keyspace
            .dirty()
            .saturating_sub(self.dirty_at_save.load(Relaxed))
    }

    /// `rdb_last_load_keys_loaded` and `rdb_last_load_keys_expired`.
    pub fn last_load(&self) -> (u64, u64) {
        (
            self.last_load_keys.load(Relaxed),
            self.last_load_expired.load(Relaxed),
        )
    }

    fn mark_clean(&self, keyspace: &Keyspace) {
        self.dirty_at_save.store(keyspace.dirty(), Relaxed);
    }
}

/// `dir/dbfilename`.
pub fn rdb_path(shared: &Shared) -> PathBuf {
    let config = shared.config();
    config.dir.join(&config.dbfilename)
}

/// Writes the whole keyspace to the RDB file (SAVE). Logs the outcome as Redis does.
pub fn save(shared: &Shared, keyspace: &mut Keyspace) -> io::Result<Written> {
    let started = Instant::now();
    let (dir, target) = {
        let config = shared.config();
        (config.dir.clone(), config.dir.join(&config.dbfilename))
    };
    let temp = dir.join(format!("temp-{}.rdb", std::process::id()));
    let result = write_then_rename(&temp, &target, &dir, |file| {
        write_rdb_to(shared, keyspace, file)
    });
    match &result {
        Ok(written) => {
            shared
                .persistence
                .last_save_unix
                .store(unix_time_ms() / 1000, Relaxed);
            shared.persistence.saves.fetch_add(1, Relaxed);
            shared.persistence.mark_clean(keyspace);
            println!(
                "DB saved on disk: {} keys, {} bytes to {} in {:.3} seconds",
                written.keys,
                written.bytes,
                target.display(),
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            let _ = fs::remove_file(&temp);
            eprintln!("Error saving DB on disk ({}): {e}", target.display());
        }
    }
    result
}

/// Writes the keyspace and the function libraries to `file` as one RDB file, with the
/// settings' encodings and checksum: SAVE's file and the AOF's RDB preamble. Runs under
/// the keyspace lock.
pub fn write_rdb_to(shared: &Shared, keyspace: &mut Keyspace, file: &File) -> io::Result<Written> {
    let (checksum, encodings) = {
        let config = shared.config();
        (config.rdbchecksum, Encodings::from_config(&config))
    };
    let functions = lock(&shared.scripting.functions);
    let params = SaveParams {
        encodings,
        checksum,
        now_unix: unix_time_ms() / 1000,
        used_mem: crate::server::stats::process_memory().rss,
        redis_version: crate::cmd::COMPATIBLE_VERSION,
        libraries: functions.libraries().iter().map(|l| &l.code[..]).collect(),
    };
    rdb_file::write(file, keyspace, &params)
}

/// Writes a file in full under a temporary name, fsyncs it, renames it over `target` and
/// fsyncs the directory: a crash leaves the old file or the new one, never a torn one.
pub fn write_then_rename<T>(
    temp: &Path,
    target: &Path,
    dir: &Path,
    write: impl FnOnce(&File) -> io::Result<T>,
) -> io::Result<T> {
    let file = File::create(temp)?;
    let written = write(&file)?;
    file.sync_all()?;
    drop(file);
    fs::rename(temp, target)?;
    // Makes the rename itself durable.
    File::open(dir)?.sync_all()?;
    Ok(written)
}

/// What a load put in the keyspace.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loaded {
    pub keys: u64,
    pub expired: u64,
    pub libraries: usize,
}

/// Reads the RDB file and adds its keys and functions to `keyspace`. A key or library
/// already there is an error unless `merge` (then the file's wins, as DEBUG RELOAD MERGE).
/// The error names the file and what is wrong with it.
pub fn load(
    shared: &Shared,
    keyspace: &mut Keyspace,
    path: &Path,
    merge: bool,
) -> io::Result<Loaded> {
    let named = |what: String| io::Error::other(format!("RDB file {}: {what}", path.display()));
    let data = fs::read(path).map_err(|e| named(format!("cannot read it: {e}")))?;
    let (params, set_max_intset_entries, zset_limits) = {
        let config = shared.config();
        let params = LoadParams {
            encodings: Encodings::from_config(&config),
            checksum: config.rdbchecksum,
            databases: config.databases,
        };
        (params, config.set_max_intset_entries, config.zset_limits())
    };
    let parsed = rdb_load::parse(&data, &params).map_err(|e| named(e.to_string()))?;
    drop(data);
    if parsed.checksum_skipped {
        println!("RDB file {}: checksum not verified", path.display());
    }
    if !parsed.libraries.is_empty() {
        lock(&shared.scripting.functions)
            .restore_libraries(
                &shared.scripting.state,
                &parsed.libraries,
                if merge {
                    RestorePolicy::Replace
                } else {
                    RestorePolicy::Append
                },
            )
            .map_err(|e| named(format!("bad function library: {}", e.message())))?;
    }
    let now = unix_time_ms();
    let mut loaded = Loaded {
        libraries: parsed.libraries.len(),
        ..Loaded::default()
    };
    for mut key in parsed.keys {
        // A primary drops keys that expired while the file sat on disk, as Redis does.
        if key.expire_at_ms != 0 && key.expire_at_ms <= now {
            loaded.expired += 1;
            continue;
        }
        key.value
            .refit_encoding(set_max_intset_entries, zset_limits);
        let db = keyspace.db(key.db);
        if db.insert(&key.key, key.value, key.expire_at_ms).is_some() && !merge {
            return Err(named(format!(
                "duplicated key '{}' in database {}",
                String::from_utf8_lossy(&key.key),
                key.db
            )));
        }
        loaded.keys += 1;
    }
    shared.persistence.mark_clean(keyspace);
    let state = &shared.persistence;
    state.last_load_keys.store(loaded.keys, Relaxed);
    state.last_load_expired.store(loaded.expired, Relaxed);
    Ok(loaded)
}

/// Loads the RDB file before the node serves anyone, when there is one and the AOF is
/// off (with `appendonly yes` the AOF is loaded instead, as Redis does). An unreadable or corrupt file is an error: the node must not start half-loaded.
pub fn load_at_start(shared: &Shared) -> io::Result<()> {
    if shared.config().appendonly {
        return super::aof::load::load_at_start(shared);
    }
    let path = rdb_path(shared);
    if !path.exists() {
        return Ok(());
    }
    let started = Instant::now();
    let mut keyspace = shared.lock_keyspace();
    keyspace.set_now(unix_time_ms());
    let loaded = load(shared, &mut keyspace, &path, false)?;
    println!(
        "DB loaded from disk: {} keys ({} expired keys skipped), {} function libraries from \
         {} in {:.3} seconds",
        loaded.keys,
        loaded.expired,
        loaded.libraries,
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
