//! The RDB file on disk: saving it safely, loading it at start, and the figures INFO and
//! LASTSAVE report.
//!
//! A save writes `dir/temp-<pid>.rdb`, fsyncs it, renames it over `dir/dbfilename` and
//! fsyncs the directory, as Redis does: a crash at any point leaves either the old file or
//! the new one, never a torn one. SAVE runs under the keyspace lock (it blocks the node, as
//! in Redis); BGSAVE writes the same file without stopping the world (`super::snapshot`).

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use super::rdb::Encodings;
use super::rdb_file::{self, AccessHints, SaveParams, Written};
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
    /// BGSAVE's state and figures.
    pub background: super::snapshot::Background,
}

impl SaveState {
    pub fn new(started_unix: u64) -> SaveState {
        SaveState {
            last_save_unix: AtomicU64::new(started_unix),
            saves: AtomicU64::new(0),
            dirty_at_save: AtomicU64::new(0),
            last_load_keys: AtomicU64::new(0),
            last_load_expired: AtomicU64::new(0),
            background: super::snapshot::Background::default(),
        }
    }

    pub fn last_save_unix(&self) -> u64 {
        self.last_save_unix.load(Relaxed)
    }

    /// SAVE and BGSAVE runs since start (`rdb_saves`).
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

    /// SAVE or BGSAVE starts (`rdb_saves` counts attempts, as Redis 7.0 does; the saves
    /// FLUSHALL, SHUTDOWN and DEBUG RELOAD make are not counted).
    pub fn count_save(&self) {
        self.saves.fetch_add(1, Relaxed);
    }

    /// A save succeeded that holds every change up to the write counter `dirty_then`.
    pub(super) fn saved(&self, dirty_then: u64) {
        self.last_save_unix.store(unix_time_ms() / 1000, Relaxed);
        self.dirty_at_save.store(dirty_then, Relaxed);
        self.background.last_ok.store(true, Relaxed);
    }
}

/// `dir/dbfilename`.
pub fn rdb_path(shared: &Shared) -> PathBuf {
    let config = shared.config();
    config.dir.join(&config.dbfilename)
}

/// FLUSHALL, as Redis 7.0's `flushAllDataAndResetRDB`: a running BGSAVE is stopped (its
/// data is gone), and with save points the empty dataset is saved at once. A running AOF
/// rewrite goes on, as Redis lets that child finish: its base is the data of its start,
/// and the FLUSHALL is in the incremental file that follows the base.
pub fn flush_all(shared: &Shared, keyspace: &mut Keyspace) {
    let background = &shared.persistence.background;
    if background.in_progress() {
        background.abort(shared, keyspace);
    }
    keyspace.flush_all();
    if !shared.config().save.is_empty() {
        // A failure is logged; FLUSHALL still answers OK, as in Redis.
        let _ = save(shared, keyspace);
    }
}

/// Where and how a save writes: read once from the settings when it starts.
pub(crate) struct SaveSetup {
    pub dir: PathBuf,
    pub target: PathBuf,
    pub checksum: bool,
    pub encodings: Encodings,
    pub hints: AccessHints,
}

impl SaveSetup {
    pub fn new(shared: &Shared) -> SaveSetup {
        let config = shared.config();
        SaveSetup {
            dir: config.dir.clone(),
            target: config.dir.join(&config.dbfilename),
            checksum: config.rdbchecksum,
            encodings: Encodings::from_config(&config),
            hints: AccessHints::from_config(&config, unix_time_ms()),
        }
    }

    /// The temp file a save writes before the rename (`tag` keeps SAVE's and BGSAVE's
    /// apart).
    pub fn temp(&self, tag: &str) -> PathBuf {
        self.dir
            .join(format!("temp-{tag}{}.rdb", std::process::id()))
    }

    /// The file's AUX fields and function libraries.
    pub fn params<'a>(&self, libraries: &'a [bytes::Bytes]) -> SaveParams<'a> {
        SaveParams {
            encodings: self.encodings,
            checksum: self.checksum,
            now_unix: unix_time_ms() / 1000,
            used_mem: crate::server::stats::process_memory().rss,
            redis_version: crate::cmd::COMPATIBLE_VERSION,
            libraries: libraries.iter().map(|code| &code[..]).collect(),
            aof_base: false,
            hints: self.hints,
        }
    }
}

/// The code of every function library, in load order (what a save writes).
pub(crate) fn library_codes(shared: &Shared) -> Vec<bytes::Bytes> {
    let functions = lock(&shared.scripting.functions);
    functions
        .libraries()
        .iter()
        .map(|l| l.code.clone())
        .collect()
}

/// Writes the whole keyspace to the RDB file (SAVE). Logs the outcome as Redis does.
pub fn save(shared: &Shared, keyspace: &mut Keyspace) -> io::Result<Written> {
    let started = Instant::now();
    let setup = SaveSetup::new(shared);
    let libraries = library_codes(shared);
    let params = setup.params(&libraries);
    let temp = setup.temp("");
    let result = replace_file(&temp, &setup, |file| {
        rdb_file::write(file, keyspace, &params)
    });
    match &result {
        Ok(written) => {
            shared.persistence.saved(keyspace.dirty());
            crate::log::notice!(
                "DB saved on disk: {} keys, {} bytes to {} in {:.3} seconds",
                written.keys,
                written.bytes,
                setup.target.display(),
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => crate::log::warning!("Error saving DB on disk ({}): {e}", setup.target.display()),
    }
    result
}

/// Writes the keyspace and the function libraries to `file` as one RDB file, with the
/// settings' encodings and checksum: the AOF's RDB preamble. Runs under the keyspace lock.
pub fn write_rdb_to(shared: &Shared, keyspace: &mut Keyspace, file: &File) -> io::Result<Written> {
    let setup = SaveSetup::new(shared);
    let libraries = library_codes(shared);
    rdb_file::write(file, keyspace, &setup.params(&libraries))
}

/// Writes a file in full under a temporary name, fsyncs it, renames it over `target` and
/// fsyncs the directory: a crash leaves the old file or the new one, never a torn one. The
/// temp file is removed if anything fails.
pub fn write_then_rename<T>(
    temp: &Path,
    target: &Path,
    dir: &Path,
    write: impl FnOnce(&File) -> io::Result<T>,
) -> io::Result<T> {
    let written = write_temp(temp, write)?;
    rename_durably(temp, target, dir)?;
    Ok(written)
}

/// [`write_then_rename`] to the RDB file `setup` names.
pub(super) fn replace_file(
    temp: &Path,
    setup: &SaveSetup,
    write: impl FnOnce(&File) -> io::Result<Written>,
) -> io::Result<Written> {
    write_then_rename(temp, &setup.target, &setup.dir, write)
}

/// The first half of [`replace_file`]: `temp` written and fsynced (removed on failure).
pub(super) fn write_temp<T>(
    temp: &Path,
    write: impl FnOnce(&File) -> io::Result<T>,
) -> io::Result<T> {
    let result = (|| {
        let file = File::create(temp)?;
        let written = write(&file)?;
        file.sync_all()?;
        Ok(written)
    })();
    if result.is_err() {
        let _ = fs::remove_file(temp);
    }
    result
}

/// The second half: `temp` renamed over the RDB file, durably.
pub(super) fn install(temp: &Path, setup: &SaveSetup) -> io::Result<()> {
    rename_durably(temp, &setup.target, &setup.dir)
}

/// `temp` renamed over `target`, then `dir` fsynced so the rename itself is durable. The
/// temp file is removed if that fails.
pub(crate) fn rename_durably(temp: &Path, target: &Path, dir: &Path) -> io::Result<()> {
    let result = (|| {
        fs::rename(temp, target)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(temp);
    }
    result
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
    let parsed = parse(shared, &data).map_err(named)?;
    drop(data);
    if parsed.checksum_skipped {
        crate::log::notice!("RDB file {}: checksum not verified", path.display());
    }
    add_loaded(shared, keyspace, parsed, merge, true).map_err(named)
}

/// Reads a whole RDB image with the settings' encodings, checksum rule and databases
/// (nothing is applied).
pub fn parse(shared: &Shared, data: &[u8]) -> Result<rdb_load::LoadedRdb, String> {
    let params = {
        let config = shared.config();
        LoadParams {
            encodings: Encodings::from_config(&config),
            checksum: config.rdbchecksum,
            databases: config.databases,
        }
    };
    rdb_load::parse(data, &params).map_err(|e| e.to_string())
}

/// Adds what [`parse`] read to `keyspace` and the function libraries. A key or library
/// already there is an error unless `merge`. Keys already past their expiry are dropped
/// when `drop_expired` (a master's load); a replica keeps them for its master's DEL.
pub fn add_loaded(
    shared: &Shared,
    keyspace: &mut Keyspace,
    parsed: rdb_load::LoadedRdb,
    merge: bool,
    drop_expired: bool,
) -> Result<Loaded, String> {
    let (set_max_intset_entries, zset_limits) = {
        let config = shared.config();
        (config.set_max_intset_entries, config.zset_limits())
    };
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
            .map_err(|e| format!("bad function library: {}", e.message()))?;
    }
    let now = unix_time_ms();
    let mut loaded = Loaded {
        libraries: parsed.libraries.len(),
        ..Loaded::default()
    };
    for mut key in parsed.keys {
        if drop_expired && key.expire_at_ms != 0 && key.expire_at_ms <= now {
            loaded.expired += 1;
            continue;
        }
        key.value
            .refit_encoding(set_max_intset_entries, zset_limits);
        let db = keyspace.db(key.db);
        if db.insert(&key.key, key.value, key.expire_at_ms).is_some() && !merge {
            return Err(format!(
                "duplicated key '{}' in database {}",
                String::from_utf8_lossy(&key.key),
                key.db
            ));
        }
        db.set_access_hint(&key.key, key.frequency, key.idle_seconds, now);
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
    crate::log::notice!(
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
