//! The master's once-a-second duties (Redis's `replicationCron`, master half): the PING
//! heartbeat fed to replicas every `repl-ping-replica-period` seconds while there are
//! some, and freeing the backlog after `repl-backlog-ttl` seconds without any.
//!
//! A replica passes its master's stream on and feeds nothing of its own (Redis's
//! `replicationFeedSlaves` returns on a replica), so both duties are a master's only.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::scripting::busy;
use crate::server::clients::lock;
use crate::server::Shared;

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";

/// Starts the task once, when the first replica attaches.
pub fn start(shared: &Shared) {
    let master = &shared.replication.master;
    if master.cron_started.swap(true, Relaxed) {
        return;
    }
    let Ok(shared) = shared.scripting.server() else {
        master.cron_started.store(false, Relaxed);
        return;
    };
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut loops: u64 = 0;
        loop {
            tick.tick().await;
            loops += 1;
            run_once(&shared, loops).await;
        }
    });
}

async fn run_once(shared: &Shared, loops: u64) {
    if super::super::replica::is_replica(shared) {
        return;
    }
    let master = &shared.replication.master;
    let (period, ttl) = {
        let config = shared.config();
        (config.repl.ping_replica_period, config.repl.backlog_ttl)
    };
    // No PING while clients are paused (as Redis): a FAILOVER waits for the replicas to
    // acknowledge an offset that holds still.
    if master.count() > 0 && loops.is_multiple_of(period.max(1)) && !shared.pause.is_paused() {
        let mut keyspace = busy::lock_keyspace_patiently(shared).await;
        crate::propagation::publish(shared, &mut keyspace);
        shared.replication.feed_replicas_only(PING);
        return;
    }
    let idle_for = lock(&master.idle_since).map(|since| since.elapsed());
    let expired = idle_for.is_some_and(|idle| ttl > 0 && idle >= Duration::from_secs(ttl));
    if master.count() == 0 && expired && shared.replication.has_backlog() {
        let mut keyspace = busy::lock_keyspace_patiently(shared).await;
        if master.count() != 0 {
            return;
        }
        {
            let mut state = shared.replication.state();
            state.replid = crate::server::random_hex_id();
            state.replid2 = "0".repeat(40);
            state.second_offset = -1;
        }
        shared.replication.free_backlog();
        crate::propagation::refresh_consumers(shared, &mut keyspace);
        crate::log::notice!(
            "Replication backlog freed after {ttl} seconds without connected replicas."
        );
    }
}
