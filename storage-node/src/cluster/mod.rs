//! Redis Cluster mode (`--cluster-enabled yes`): slot ownership, the membership bus,
//! redirects, and slot migration.
//!
//! # Layout
//! - [`node`]: node ids, flags, and what is known about each node.
//! - [`state`]: the node table, slot owners, open migrations, epochs, cluster health.
//! - [`nodes_file`]: the `cluster-config-file`, in Redis's `nodes.conf` format.
//! - [`bus`]: the node-to-node protocol (our own binary frames) on `port + 10000`.
//! - [`commands`]: CLUSTER, READONLY, READWRITE, ASKING.
//! - [`redirect`]: MOVED / ASK / TRYAGAIN / CROSSSLOT / CLUSTERDOWN, as Redis decides them.
//! - [`migrate`]: MIGRATE (client side) and RESTORE-ASKING.
//! - [`replicas`]: who replicates whom; [`role`] makes the replication follow it.
//! - [`failure`]: failure reports, `fail?` and `fail`.
//! - [`election`]: replica elections, automatic and manual failover.
//! - [`replica_migration`]: replicas moving to an orphaned master.
//!
//! Lock order: a command holds the keyspace lock and may then take the cluster lock; the
//! bus takes the cluster lock alone and releases it before touching the keyspace.

pub mod bus;
pub mod commands;
pub mod election;
pub mod failure;
pub mod migrate;
pub mod node;
pub mod nodes_file;
pub mod redirect;
pub mod replica_migration;
pub mod replicas;
pub mod role;
pub mod state;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::{mpsc, watch, Notify};

use crate::config::Config;
use crate::keyspace::unix_time_ms;
use crate::server::clients::lock;
use node::NodeId;
use state::ClusterState;

/// A node's cluster machinery, shared by commands and the bus.
pub struct Cluster {
    state: Mutex<ClusterState>,
    pub nodes_file: PathBuf,
    pub bus_port: u16,
    /// Outbound bus links, by the node they talk to: frames queued for them.
    links: Mutex<HashMap<NodeId, mpsc::UnboundedSender<Vec<u8>>>>,
    /// Bumped when every peer should hear from us now (a slot or epoch change).
    broadcast: watch::Sender<u64>,
    /// Wakes the bus cron early (a new node to connect to).
    pub kick: Notify,
    pub inbound_links: AtomicUsize,
}

impl Cluster {
    /// Loads the nodes file, or starts as a new node alone in its cluster.
    pub fn load_or_create(config: &Config, port: u16) -> Result<Cluster, String> {
        let nodes_file = config.dir.join(&config.cluster_config_file);
        let bus_port = if config.cluster_port == 0 {
            port.checked_add(10000)
                .ok_or("the cluster bus port (port + 10000) is out of range")?
        } else {
            config.cluster_port
        };
        let now = unix_time_ms();
        let mut state = match nodes_file::load(&nodes_file, now)? {
            Some(state) => state,
            None => ClusterState::new(port, bus_port, now),
        };
        {
            let me = state.me_mut();
            if me.port != port || me.cport != bus_port {
                me.port = port;
                me.cport = bus_port;
            }
        }
        nodes_file::save(&state, &nodes_file, now, true)
            .map_err(|e| format!("cannot write {}: {e}", nodes_file.display()))?;
        state.needs_save = false;
        state.node_timeout_ms = config.cluster_node_timeout;
        state.allow_replica_migration = config.cluster_ha.allow_replica_migration;
        Ok(Cluster {
            state: Mutex::new(state),
            nodes_file,
            bus_port,
            links: Mutex::new(HashMap::new()),
            broadcast: watch::channel(0).0,
            kick: Notify::new(),
            inbound_links: AtomicUsize::new(0),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, ClusterState> {
        lock(&self.state)
    }

    /// Brings a change into effect: recomputes the cluster state, writes the nodes file if
    /// anything persistent changed, and tells the peers if they should know at once.
    pub fn commit(&self, state: &mut ClusterState, config: &Config) -> std::io::Result<()> {
        let now = unix_time_ms();
        state.node_timeout_ms = config.cluster_node_timeout;
        state.allow_replica_migration = config.cluster_ha.allow_replica_migration;
        let no_failover = config.cluster_ha.replica_no_failover && state.me().is_replica();
        if state.me().flags.has(node::Flags::NOFAILOVER) != no_failover {
            state
                .me_mut()
                .flags
                .set(node::Flags::NOFAILOVER, no_failover);
            state.needs_save = true;
        }
        state.update_state(
            config.cluster_require_full_coverage,
            config.cluster_node_timeout,
            now,
        );
        let mut result = Ok(());
        if state.needs_save {
            result = nodes_file::save(state, &self.nodes_file, now, state.needs_fsync);
            state.needs_save = result.is_err();
            state.needs_fsync &= result.is_err();
        }
        if state.needs_broadcast {
            state.needs_broadcast = false;
            self.broadcast.send_modify(|generation| *generation += 1);
        }
        result
    }

    /// Queues a frame on the outbound link to `id`, if there is one.
    pub fn send_to(&self, id: &NodeId, frame: Vec<u8>) {
        if let Some(outbox) = lock(&self.links).get(id) {
            let _ = outbox.send(frame);
        }
    }

    /// Sends a PUBLISH to every other node, as Redis Cluster does, so subscribers anywhere
    /// in the cluster get it.
    pub fn broadcast_publish(&self, channel: &[u8], message: &[u8]) {
        let message = {
            let state = self.lock();
            bus::codec::Message {
                header: bus::gossip::header(&state),
                body: bus::codec::Body::Publish {
                    channel: channel.to_vec(),
                    message: message.to_vec(),
                },
            }
        };
        self.broadcast(&message);
    }

    /// Sends a message to every node this node has a link to (and counts it).
    pub fn broadcast(&self, message: &bus::codec::Message) {
        let frame = bus::codec::encode(message);
        let peers = lock(&self.links).len() as u64;
        self.lock().stats.sent[message.type_code() as usize] += peers;
        for outbox in lock(&self.links).values() {
            let _ = outbox.send(frame.clone());
        }
    }

    /// Bus connections in both directions (INFO `cluster_connections`).
    pub fn connection_count(&self) -> usize {
        let outbound = self
            .lock()
            .nodes
            .values()
            .filter(|n| n.link_since_ms.is_some())
            .count();
        outbound + self.inbound_links.load(Relaxed)
    }
}
