//! BGREWRITEAOF from the point-in-time snapshot, as Redis 7.0 does it with its fork.
//!
//! [`begin`] runs under the keyspace lock, at the snapshot's instant: what was logged is
//! written and fsynced, a new incremental file is opened, and a manifest listing the old
//! base, the old incremental files AND the new one is installed, so a crash during the
//! rewrite loses nothing (a load replays them all). Writes go to the new file from then
//! on. The snapshot thread (`persistence::snapshot`) writes the new base (an RDB file with
//! `aof-base` 1, or commands, see [`super::base`]) to a temp file without stopping the
//! node; [`finish`] renames it, installs the manifest of the new base and the incremental
//! files opened since, and deletes the files the old manifest named.
//!
//! Only one snapshot exists at a time (Redis has one child): a rewrite asked while a
//! BGSAVE runs is scheduled and started by the save-point cron when it ends.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::files::{
    create_incr, file_size, files_size, incr_name, install, location, read_manifest, write_manifest,
};
use super::manifest::{FileEntry, Kind, Manifest};
use crate::keyspace::Keyspace;
use crate::persistence::disk;
use crate::persistence::snapshot::{self, Target};
use crate::server::clients::lock;
use crate::server::Shared;

/// The rewrite's files, fixed when it starts.
pub struct Plan {
    pub preamble: bool,
    /// Where the snapshot writes the base before the rename.
    pub temp: PathBuf,
    dir: PathBuf,
    filename: String,
    base: FileEntry,
    /// The first incremental file the new manifest keeps (opened at the start).
    first_incr_seq: u64,
    /// The manifest before the rewrite: its files are deleted once the new one is in place.
    old: Manifest,
}

/// What BGREWRITEAOF did.
pub enum Begun {
    Started,
    /// A BGSAVE has the snapshot (or EXEC runs): it starts when that ends.
    Scheduled,
}

pub enum BeginError {
    AlreadyRunning,
    Failed(io::Error),
}

/// Starts a rewrite, or schedules it while a BGSAVE runs. Redis's `bgrewriteaofCommand`
/// and `rewriteAppendOnlyFileBackground`. Called under the keyspace lock.
pub fn begin(shared: &Shared, keyspace: &mut Keyspace, in_exec: bool) -> Result<Begun, BeginError> {
    let background = &shared.persistence.background;
    if background.rewriting() {
        return Err(BeginError::AlreadyRunning);
    }
    if background.busy() || in_exec {
        background.aof_scheduled.store(true, Relaxed);
        return Ok(Begun::Scheduled);
    }
    start(shared, keyspace).map_err(BeginError::Failed)?;
    Ok(Begun::Started)
}

/// A scheduled rewrite starts once no snapshot runs (from the save-point cron).
pub fn start_scheduled(shared: &Shared, keyspace: &mut Keyspace) {
    let background = &shared.persistence.background;
    if background.busy() || !background.aof_scheduled.load(Relaxed) {
        return;
    }
    if let Err(e) = start(shared, keyspace) {
        crate::log::warning!("Can't start the scheduled AOF rewrite: {e}");
        background.aof_scheduled.store(false, Relaxed);
    }
}

fn start(shared: &Shared, keyspace: &mut Keyspace) -> io::Result<()> {
    let (dir, filename) = location(shared);
    fs::create_dir_all(&dir)?;
    let aof = &shared.aof;
    let logging = aof.is_on();
    // `CONFIG SET appendonly yes`: logging starts with this rewrite.
    let enable = !logging && shared.config().appendonly;
    let old = if logging {
        // Everything logged so far reaches the old files first.
        aof.write_out();
        aof.fsync_written();
        lock(&aof.writer).manifest.clone()
    } else {
        read_manifest(&dir, &filename)
            .ok()
            .flatten()
            .unwrap_or_default()
    };
    let first_incr_seq = old.next_incr_seq();
    if logging || enable {
        let incr = FileEntry {
            name: incr_name(&filename, first_incr_seq),
            seq: first_incr_seq,
            kind: Kind::Incr,
        };
        let file = create_incr(&dir.join(&incr.name))?;
        let during = if logging {
            let mut during = old.clone();
            during.incrs.push(incr);
            write_manifest(&dir, &filename, &during)?;
            during
        } else {
            // The old files (if any) are not this data: they stay named only on disk
            // until the rewrite's manifest replaces them, as in Redis.
            Manifest {
                base: None,
                incrs: vec![incr],
                history: Vec::new(),
            }
        };
        let size = if logging {
            aof.stats.current_size.load(Relaxed)
        } else {
            0
        };
        let base_size = aof.stats.base_size.load(Relaxed);
        install(shared, keyspace, file, dir.clone(), during, size, base_size);
    }
    let preamble = shared.config().aof.use_rdb_preamble;
    let base_seq = old.next_base_seq();
    let base = FileEntry {
        name: format!(
            "{filename}.{base_seq}.base.{}",
            if preamble { "rdb" } else { "aof" }
        ),
        seq: base_seq,
        kind: Kind::Base,
    };
    let plan = Plan {
        preamble,
        temp: dir.join(format!("temp-rewriteaof-bg-{}.aof", std::process::id())),
        dir,
        filename,
        base,
        first_incr_seq,
        old,
    };
    snapshot::start_for(shared, keyspace, Target::AofBase(Box::new(plan))).map_err(|e| match e {
        snapshot::StartError::Spawn(e) => e,
        snapshot::StartError::Running => io::Error::other("a snapshot is already running"),
    })
}

/// The base is written: it replaces the old files. Called by the snapshot thread under
/// the keyspace lock (no write is logged meanwhile).
pub fn finish(shared: &Shared, plan: &Plan) -> io::Result<()> {
    let base_path = plan.dir.join(&plan.base.name);
    disk::rename_durably(&plan.temp, &base_path, &plan.dir)?;
    let aof = &shared.aof;
    let mut manifest = Manifest {
        base: Some(plan.base.clone()),
        incrs: Vec::new(),
        history: Vec::new(),
    };
    let logging = {
        let writer = lock(&aof.writer);
        if writer.file.is_some() {
            manifest.incrs = writer
                .manifest
                .incrs
                .iter()
                .filter(|i| i.seq >= plan.first_incr_seq)
                .cloned()
                .collect();
        }
        writer.file.is_some()
    };
    write_manifest(&plan.dir, &plan.filename, &manifest)?;
    let named: Vec<&str> = manifest
        .base
        .iter()
        .chain(&manifest.incrs)
        .map(|f| f.name.as_str())
        .collect();
    for entry in plan
        .old
        .base
        .iter()
        .chain(&plan.old.incrs)
        .chain(&plan.old.history)
    {
        if !named.contains(&entry.name.as_str()) {
            let _ = fs::remove_file(plan.dir.join(&entry.name));
        }
    }
    let size = files_size(&plan.dir, &manifest);
    aof.stats.base_size.store(file_size(&base_path), Relaxed);
    aof.stats.current_size.store(size, Relaxed);
    aof.stats.rewrite_base_size.store(size, Relaxed);
    if logging {
        lock(&aof.writer).manifest = manifest;
    }
    Ok(())
}

/// INFO's rewrite figures and the log lines, after the snapshot thread ends.
pub fn report(shared: &Shared, result: &io::Result<()>, aborted: bool, started: Instant) {
    let stats = &shared.aof.stats;
    if aborted {
        crate::log::notice!("Background AOF rewrite stopped");
        return;
    }
    stats.last_rewrite_ok.store(result.is_ok(), Relaxed);
    stats
        .last_rewrite_time_sec
        .store(started.elapsed().as_secs() as i64, Relaxed);
    match result {
        Ok(()) => {
            stats.rewrites.fetch_add(1, Relaxed);
            stats.consecutive_failures.store(0, Relaxed);
            crate::log::notice!("Background AOF rewrite terminated with success");
            crate::log::notice!(
                "Background AOF rewrite finished successfully in {:.3} seconds",
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            stats.consecutive_failures.fetch_add(1, Relaxed);
            crate::log::warning!("Background AOF rewrite failed: {e}");
        }
    }
}
