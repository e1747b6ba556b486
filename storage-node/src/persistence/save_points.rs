//! The `save <seconds> <changes> ...` points, BGSAVE SCHEDULE and a scheduled
//! BGREWRITEAOF: checked `hz` times a
//! second, as Redis's `serverCron` does.
//!
//! A point fires when at least `changes` writes happened since the last successful save
//! and that save is more than `seconds` old. After a failed background save the next try
//! waits [`RETRY_DELAY_SECS`] (Redis's `CONFIG_BGSAVE_RETRY_DELAY`), so a full disk is not
//! hammered. `CONFIG SET save` takes effect at the next check.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use super::snapshot;
use crate::keyspace::{unix_time_ms, Keyspace};
use crate::server::Shared;

/// Seconds between background save attempts after a failed one.
pub const RETRY_DELAY_SECS: u64 = 5;

/// Runs for the life of the node.
pub async fn check_forever(shared: Arc<Shared>) {
    loop {
        let hz = shared.config().hz.max(1);
        tokio::time::sleep(Duration::from_millis(1000 / u64::from(hz))).await;
        let background = &shared.persistence.background;
        if background.busy() {
            continue;
        }
        // A rewrite asked while a BGSAVE ran goes first, as in Redis's cron.
        if background.aof_scheduled.load(Relaxed) {
            let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
            if keyspace.db_count() > 0 {
                super::aof::rewrite::start_scheduled(&shared, &mut keyspace);
            }
            continue;
        }
        let points = shared.config().save.clone();
        let scheduled = shared.persistence.background.scheduled.load(Relaxed);
        // Only a point old enough can fire: otherwise the keyspace lock is not needed.
        let since_save =
            (unix_time_ms() / 1000).saturating_sub(shared.persistence.last_save_unix());
        if !scheduled
            && !points
                .iter()
                .any(|&(seconds, _)| since_save > seconds as u64)
        {
            continue;
        }
        let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
        check(&shared, &mut keyspace, &points, scheduled);
    }
}

/// Starts a background save if a save point is due or one was scheduled.
fn check(shared: &Shared, keyspace: &mut Keyspace, points: &[(i64, i64)], scheduled: bool) {
    // A script has the keyspace lent out: the next check will do.
    if keyspace.db_count() == 0 {
        return;
    }
    let state = &shared.persistence;
    let now = unix_time_ms() / 1000;
    let retry_allowed = !state.background.last_failed()
        || now.saturating_sub(state.background.last_try_unix.load(Relaxed)) > RETRY_DELAY_SECS;
    if !retry_allowed {
        return;
    }
    let changes = state.changes_since_save(keyspace);
    let since_save = now.saturating_sub(state.last_save_unix());
    let due = points
        .iter()
        .find(|&&(seconds, wanted)| changes >= wanted as u64 && since_save > seconds as u64);
    if let Some((seconds, wanted)) = due {
        crate::log::notice!("{wanted} changes in {seconds} seconds. Saving...");
    } else if !scheduled {
        return;
    }
    let _ = snapshot::start(shared, keyspace);
}
