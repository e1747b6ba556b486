//! The cluster bus: nodes talk to each other on `port + 10000` (or `cluster-port`).
//!
//! Each node keeps one outbound link to every node it knows ([`peer`]): it sends PINGs (or a
//! MEET to a node it was told to meet) and reads the PONGs. Peers connect to our
//! [`listener`] the same way; we answer their PINGs with PONGs. Every message carries the
//! sender's epochs and slots, and gossip about other nodes ([`gossip`]), in our own binary
//! frames ([`codec`]). A cron ([`run`]) connects to new nodes, drops handshakes that never
//! finished, flags nodes that stopped answering (`fail?`), runs this replica's election
//! (`super::election`) and replica migration (`super::replica_migration`), keeps the
//! replication in line with the node table (`super::role`), and keeps the cluster state
//! and the nodes file current.

pub mod codec;
pub mod gossip;
mod listener;
mod peer;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use super::election;
use super::node::{Flags, NodeId};
use super::replica_migration::MigrationSettings;
use super::Cluster;
use crate::keyspace::unix_time_ms;
use crate::server::Shared;
use codec::Message;

const CRON_INTERVAL: Duration = Duration::from_millis(100);

/// The cluster of a node running in cluster mode.
fn cluster(shared: &Shared) -> &Cluster {
    shared
        .cluster
        .as_deref()
        .expect("the bus runs only in cluster mode")
}

/// Binds the bus port on every configured address and starts the bus.
pub async fn start(shared: Arc<Shared>) -> std::io::Result<()> {
    let bus_port = cluster(&shared).bus_port;
    let hosts: Vec<String> = shared.config().bind.clone();
    for host in hosts {
        let host = host.trim_start_matches('-').to_string();
        let listener = TcpListener::bind((host.as_str(), bus_port)).await?;
        tokio::spawn(listener::accept_loop(shared.clone(), listener));
    }
    tokio::spawn(run(shared));
    Ok(())
}

/// Sends what processing asked for and drops the keys of slots this node lost.
fn apply(shared: &Shared, outcome: gossip::Outcome) {
    let cluster = cluster(shared);
    for (to, message) in outcome.send {
        count_sent(cluster, &message);
        cluster.send_to(&to, codec::encode(&message));
    }
    for message in &outcome.broadcast {
        cluster.broadcast(message);
    }
    if outcome.kick {
        cluster.kick.notify_one();
    }
    if let Some(replica) = outcome.manual_failover_for {
        start_manual_failover(shared, replica);
    }
    if !outcome.publish.is_empty() {
        let keyspace = shared.lock_keyspace();
        // No local client sent these: nothing to order before a reply.
        let mut unused = bytes::BytesMut::new();
        for (channel, message) in &outcome.publish {
            keyspace
                .pubsub
                .publish(channel, message, false, 0, &mut unused);
        }
    }
    if !outcome.lost_slots.is_empty() {
        let mut keyspace = shared.lock_keyspace();
        keyspace.set_now(unix_time_ms());
        let db = keyspace.db(0);
        for slot in outcome.lost_slots {
            let keys: Vec<Vec<u8>> = db.slot_entries(slot).map(|e| e.key().to_vec()).collect();
            for key in keys {
                db.remove(&key);
            }
        }
    }
}

/// The master side of a manual failover (Redis's MFSTART handling): writes pause, and once
/// no write is in flight the replica gets a PING flagged PAUSED with the final offset.
fn start_manual_failover(shared: &Shared, replica: NodeId) {
    use crate::server::pause::{end_after, PauseMode, PausePurpose};
    let cluster = cluster(shared);
    let timeout = super::election::MANUAL_FAILOVER_TIMEOUT_MS;
    shared.pause.pause(
        PausePurpose::Failover,
        PauseMode::Write,
        end_after(timeout * 2),
    );
    // A write that was running holds the keyspace lock: past it, the offset is final.
    let offset = {
        let _keyspace = shared.lock_keyspace();
        shared.replication.end()
    };
    let frame = {
        let mut state = cluster.lock();
        state.reset_manual_failover();
        state.election.mf_end_ms = unix_time_ms() + timeout;
        state.election.mf_replica = Some(replica);
        state.election.master_paused = true;
        state.my_repl_offset = offset;
        let ping = gossip::ping(&state, codec::Body::Ping);
        state.stats.sent[ping.type_code() as usize] += 1;
        codec::encode(&ping)
    };
    crate::log::warning!("Manual failover requested by replica {replica}.");
    cluster.send_to(&replica, frame);
}

fn count_sent(cluster: &Cluster, message: &Message) {
    cluster.lock().stats.sent[message.type_code() as usize] += 1;
}

/// Commits the state after the bus changed it (errors writing the nodes file are logged:
/// the bus cannot answer anyone, and the next change retries).
fn commit(shared: &Shared, state: &mut super::state::ClusterState) {
    let config = shared.config().clone();
    if let Err(e) = cluster(shared).commit(state, &config) {
        crate::log::warning!("cannot save the cluster config file: {e}");
    }
}

/// The bus cron.
async fn run(shared: Arc<Shared>) {
    let cluster = cluster(&shared);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(CRON_INTERVAL) => {}
            _ = cluster.kick.notified() => {}
        }
        let (node_timeout, limits, migration) = {
            let config = shared.config();
            let node_timeout = config.cluster_node_timeout.max(1);
            let limits = election::Limits {
                node_timeout_ms: node_timeout,
                validity_factor: config.cluster_ha.replica_validity_factor,
                ping_period_ms: config.repl.ping_replica_period.saturating_mul(1000),
                no_failover: config.cluster_ha.replica_no_failover,
            };
            let migration = MigrationSettings {
                allowed: config.cluster_ha.allow_replica_migration,
                barrier: config.cluster_ha.migration_barrier,
            };
            (node_timeout, limits, migration)
        };
        // Read before the cluster lock (the replication has its own).
        let data_age = crate::replication::replica::data_age_ms(&shared);
        let my_offset = shared.replication.end();
        let now = unix_time_ms();
        let mut state = cluster.lock();
        // A paused master keeps the offset it told its replica.
        if state.election.mf_replica.is_none() {
            state.my_repl_offset = my_offset;
        }
        let handshake_timeout = node_timeout.max(1000);
        let expired: Vec<NodeId> = state
            .nodes
            .values()
            .filter(|n| n.in_handshake() && now.saturating_sub(n.created_ms) > handshake_timeout)
            .map(|n| n.id)
            .collect();
        for id in expired {
            state.nodes.remove(&id);
        }
        let mut suspected = false;
        for node in state.nodes.values_mut() {
            if node.is_myself() || node.in_handshake() {
                continue;
            }
            let late =
                node.ping_sent_ms != 0 && now.saturating_sub(node.ping_sent_ms) > node_timeout;
            if late && !node.flags.has(Flags::PFAIL) {
                node.flags.set(Flags::PFAIL, true);
                suspected = true;
            }
        }
        // Tell every peer at once (our gossip names the suspects): a majority of
        // masters agrees sooner than with the next regular PING, which is up to half a
        // node timeout away.
        if suspected {
            state.needs_broadcast = true;
        }
        state.manual_failover_step(now);
        let unpause = state.election.master_paused
            && (state.election.mf_replica.is_none() || !state.me().is_master());
        if unpause {
            state.election.master_paused = false;
            state.reset_manual_failover();
        }
        let step = state.replica_failover_step(&limits, data_age, now);
        // A move to an orphaned master is brought into effect by the commit and the
        // reconcile below, as CLUSTER REPLICATE's is.
        state.replica_migration_step(migration, now);
        let wanted: Vec<NodeId> = state
            .nodes
            .values()
            .filter(|n| !n.is_myself() && !n.flags.has(Flags::NOADDR))
            .map(|n| n.id)
            .collect();
        commit(&shared, &mut state);
        drop(state);
        match step {
            election::Step::AskVotes(request) => cluster.broadcast(&request),
            election::Step::Won | election::Step::Wait => {}
        }
        // Replication first: writes held by a manual failover's pause run after it and
        // meet a replica (they are redirected).
        super::role::reconcile(&shared, None);
        if unpause {
            shared
                .pause
                .unpause(crate::server::pause::PausePurpose::Failover);
        }
        for id in wanted {
            if let Some(outbox) = peer::register(cluster, id) {
                tokio::spawn(peer::run(shared.clone(), id, outbox));
            }
        }
    }
}
