//! Replica migration, as Redis Cluster does it (`clusterHandleSlaveMigration` and the
//! orphan scan of `clusterCron` in Redis 7.0): a replica moves to an orphaned master so
//! that one more failure does not leave slots without a master.
//!
//! - A master is *orphaned* when it serves slots, is not `fail`, has no working replica
//!   (one that is not `fail`; `fail?` still counts as working), and had replicas once or
//!   took over from a master that had ([`Node::migrate_to`](super::node::Node)). A master
//!   that never had replicas is not orphaned: nobody wanted it to have any.
//! - Only replicas of the masters with the most working replicas consider moving, and
//!   only when that most is at least two, `cluster-allow-replica-migration` is on, and the
//!   cluster state is ok.
//! - The replica's master must keep more than `cluster-migration-barrier` working replicas
//!   (here `fail?` does not count as working) once it leaves.
//! - Of the replicas of those masters, the one with the smallest node id moves (so two
//!   replicas rarely move at once), to the orphaned master with the smallest id, once that
//!   master has been orphaned for more than [`MIGRATION_DELAY_MS`] (a new master's
//!   natural replicas get that long to say they follow it after a failover).
//!
//! Working replica counts come from one pass over the node table (Redis keeps a replica
//! list per master; here the relation lives on the replicas), so a cron step stays linear
//! in the cluster's size.
//!
//! The move is [`ClusterState::set_my_master`], as CLUSTER REPLICATE; the bus cron then
//! makes the replication follow (`super::role`).

use std::collections::HashMap;

use super::node::{Flags, NodeId};
use super::state::ClusterState;

/// How long a master must stay orphaned before a replica migrates to it (Redis's
/// `CLUSTER_SLAVE_MIGRATION_DELAY`).
pub const MIGRATION_DELAY_MS: u64 = 5000;

/// The settings replica migration reads.
#[derive(Clone, Copy, Debug)]
pub struct MigrationSettings {
    /// `cluster-allow-replica-migration`.
    pub allowed: bool,
    /// `cluster-migration-barrier`.
    pub barrier: u64,
}

impl ClusterState {
    /// The replicas of each master that are not `fail` (Redis's
    /// `clusterCountNonFailingSlaves`), in one pass over the node table.
    fn working_replica_counts(&self) -> HashMap<NodeId, usize> {
        let mut counts = HashMap::new();
        for node in self.nodes.values() {
            if node.is_replica() && !node.in_handshake() && !node.flags.has(Flags::FAIL) {
                if let Some(master) = node.master {
                    *counts.entry(master).or_insert(0) += 1;
                }
            }
        }
        counts
    }

    /// Every master with a replica in the node table is one replicas may migrate to later
    /// (Redis sets `MIGRATE_TO` when it adds a replica to a master; noting it here, once
    /// per cron, covers every way a replica becomes known: gossip, the nodes file,
    /// CLUSTER REPLICATE).
    fn note_masters_with_replicas(&mut self) {
        let masters: Vec<NodeId> = self
            .nodes
            .values()
            .filter(|n| n.is_replica() && !n.in_handshake())
            .filter_map(|n| n.master)
            .collect();
        for id in masters {
            if let Some(master) = self.nodes.get_mut(&id) {
                master.migrate_to = true;
            }
        }
    }

    /// Starts the orphaned clock of each master that is orphaned and stops the others'.
    /// Redis starts a clock only while this replica may migrate, and leaves a stale one
    /// behind when the master gets a replica again; here the clock measures what the
    /// delay is for, how long the master itself has been orphaned.
    fn track_orphans(&mut self, working: &HashMap<NodeId, usize>, now_ms: u64) {
        for node in self.nodes.values_mut() {
            let orphaned = node.is_master()
                && !node.flags.has(Flags::FAIL)
                && node.migrate_to
                && !working.contains_key(&node.id);
            if !orphaned {
                node.orphaned_since_ms = 0;
            } else if node.orphaned_since_ms == 0 {
                node.orphaned_since_ms = now_ms;
            }
        }
    }

    /// One cron step of replica migration: this replica moves to an orphaned master if it
    /// is the one that should. Returns the new master when it moved.
    pub fn replica_migration_step(
        &mut self,
        settings: MigrationSettings,
        now_ms: u64,
    ) -> Option<NodeId> {
        self.note_masters_with_replicas();
        let me = self.me();
        if !me.is_replica() {
            return None;
        }
        let my_master = me.master?;
        let working = self.working_replica_counts();
        self.track_orphans(&working, now_ms);
        // The scan of `clusterCron`: orphaned masters serving slots, and the most working
        // replicas any working master has.
        let mut target = None;
        let mut max_replicas = 0;
        let mut my_master_replicas = 0;
        for node in self.nodes.values() {
            let skip = node.is_myself()
                || node.flags.has(Flags::NOADDR)
                || node.in_handshake()
                || !node.is_master()
                || node.flags.has(Flags::FAIL);
            if skip {
                continue;
            }
            let count = working.get(&node.id).copied().unwrap_or(0);
            if target.is_none() && node.orphaned_since_ms != 0 && self.slot_count(&node.id) > 0 {
                target = Some(node.id);
            }
            max_replicas = max_replicas.max(count);
            if node.id == my_master {
                my_master_replicas = count;
            }
        }
        // Nothing to move to; or moving makes no sense: no master has two working replicas.
        let target = target?;
        if max_replicas < 2 || my_master_replicas != max_replicas || !settings.allowed {
            return None;
        }
        self.migrate_if_candidate(target, my_master, max_replicas, &working, settings, now_ms)
    }

    /// Redis's `clusterHandleSlaveMigration`: moves to `target` (the orphaned master with
    /// the smallest id) if this replica is the candidate and the barrier and the delay
    /// allow.
    fn migrate_if_candidate(
        &mut self,
        target: NodeId,
        my_master: NodeId,
        max_replicas: usize,
        working: &HashMap<NodeId, usize>,
        settings: MigrationSettings,
        now_ms: u64,
    ) -> Option<NodeId> {
        if !self.ok {
            return None;
        }
        // My master must keep more than the barrier's working replicas: here a replica
        // suspected (`fail?`) does not count.
        let staying = self
            .replicas_of(&my_master)
            .iter()
            .filter(|r| !r.failing())
            .count();
        if staying as u64 <= settings.barrier {
            return None;
        }
        // The candidate: the smallest id among the replicas (all of them, as Redis picks,
        // `fail` ones too) of the masters with the most working replicas.
        let candidate = self
            .nodes
            .values()
            .filter(|n| n.is_replica() && !n.in_handshake())
            .filter(|n| {
                n.master.is_some_and(|m| {
                    self.nodes.get(&m).is_some_and(|m| m.is_master())
                        && working.get(&m) == Some(&max_replicas)
                })
            })
            .map(|n| n.id)
            .min();
        if candidate != Some(self.myself) {
            return None;
        }
        let orphaned_for = now_ms.saturating_sub(self.nodes[&target].orphaned_since_ms);
        if orphaned_for <= MIGRATION_DELAY_MS {
            return None;
        }
        crate::log::warning!("Migrating to orphaned master {target}");
        self.set_my_master(target);
        Some(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::node::Node;

    const ALLOWED: MigrationSettings = MigrationSettings {
        allowed: true,
        barrier: 1,
    };

    fn add(state: &mut ClusterState, flags: u16, master: Option<NodeId>) -> NodeId {
        let id = NodeId::random();
        let mut node = Node::new(id, "127.0.0.1", 7001, 17001, flags, 0);
        node.master = master;
        state.nodes.insert(id, node);
        id
    }

    /// Masters `a` and `b` serving slots; `a` has this node and another replica (whose id
    /// sorts before this node's if `other_smaller`), `b` has one replica. Returns (state,
    /// b, the other replica of `a`, b's replica).
    fn two_shards(other_smaller: bool) -> (ClusterState, NodeId, NodeId, NodeId) {
        let mut state = ClusterState::new(7000, 17000, 0);
        let me = state.myself;
        let a = add(&mut state, Flags::MASTER, None);
        let b = add(&mut state, Flags::MASTER, None);
        let b_replica = add(&mut state, Flags::REPLICA, Some(b));
        let mut other = add(&mut state, Flags::REPLICA, Some(a));
        // Bounded: each try sorts on either side of this node's id with odds of one half.
        for _ in 0..200 {
            if (other < me) == other_smaller {
                break;
            }
            state.nodes.remove(&other);
            other = add(&mut state, Flags::REPLICA, Some(a));
        }
        assert_eq!(other < me, other_smaller);
        let myself = state.me_mut();
        myself.flags = Flags(Flags::MYSELF | Flags::REPLICA);
        myself.master = Some(a);
        state.assign(0, a);
        state.assign(1, b);
        state.ok = true;
        (state, b, other, b_replica)
    }

    fn set_flag(state: &mut ClusterState, id: &NodeId, flag: u16, on: bool) {
        if let Some(node) = state.nodes.get_mut(id) {
            node.flags.set(flag, on);
        }
    }

    #[test]
    fn the_smallest_replica_moves_once_the_master_stayed_orphaned() {
        let (mut state, b, _, b_replica) = two_shards(false);
        assert_eq!(
            state.replica_migration_step(ALLOWED, 1000),
            None,
            "b has a replica"
        );
        // A suspected replica still counts as working.
        set_flag(&mut state, &b_replica, Flags::PFAIL, true);
        assert_eq!(state.replica_migration_step(ALLOWED, 1000), None);
        assert_eq!(state.nodes[&b].orphaned_since_ms, 0);
        set_flag(&mut state, &b_replica, Flags::FAIL, true);
        assert_eq!(
            state.replica_migration_step(ALLOWED, 2000),
            None,
            "orphaned just now"
        );
        assert_eq!(
            state.replica_migration_step(ALLOWED, 7000),
            None,
            "5 s, not more"
        );
        assert_eq!(state.replica_migration_step(ALLOWED, 7001), Some(b));
        assert_eq!(state.me().master, Some(b));
        assert!(state.needs_broadcast && state.needs_save);
    }

    #[test]
    fn a_larger_id_stays() {
        let (mut state, _, _, b_replica) = two_shards(true);
        set_flag(&mut state, &b_replica, Flags::FAIL, true);
        state.replica_migration_step(ALLOWED, 1000);
        assert_eq!(state.replica_migration_step(ALLOWED, 60_000), None);
    }

    /// Each condition holds the replica back while it lasts; once it goes, the replica
    /// moves (the master has been orphaned long enough since the first step).
    #[test]
    fn settings_barrier_state_and_history_hold_replicas_back() {
        type Hold = fn(&mut ClusterState, NodeId, bool);
        let holds: [(MigrationSettings, Hold); 5] = [
            (
                MigrationSettings {
                    allowed: false,
                    barrier: 1,
                },
                |_, _, _| {},
            ),
            (
                MigrationSettings {
                    allowed: true,
                    barrier: 2,
                },
                |_, _, _| {},
            ),
            (ALLOWED, |state, _, on| state.ok = !on),
            // A suspected sibling does not count towards the barrier.
            (ALLOWED, |state, other, on| {
                set_flag(state, &other, Flags::PFAIL, on)
            }),
            // A failed sibling leaves the master one working replica: not the most.
            (ALLOWED, |state, other, on| {
                set_flag(state, &other, Flags::FAIL, on)
            }),
        ];
        for (held_settings, hold) in holds {
            let (mut state, b, other, b_replica) = two_shards(false);
            set_flag(&mut state, &b_replica, Flags::FAIL, true);
            assert_eq!(state.replica_migration_step(ALLOWED, 1000), None);
            hold(&mut state, other, true);
            assert_eq!(state.replica_migration_step(held_settings, 60_000), None);
            assert_eq!(state.me().master.map(|m| m == b), Some(false));
            hold(&mut state, other, false);
            assert_eq!(state.replica_migration_step(ALLOWED, 60_001), Some(b));
        }
    }

    #[test]
    fn a_master_that_never_had_replicas_is_not_orphaned() {
        let (mut state, b, _, b_replica) = two_shards(false);
        state.nodes.remove(&b_replica);
        state.replica_migration_step(ALLOWED, 1000);
        assert_eq!(state.replica_migration_step(ALLOWED, 60_000), None);
        // Once a replica of it took over (its master failed), it is one to migrate to.
        let c = add(&mut state, Flags::REPLICA, Some(b));
        state.set_node_as_master(&c);
        state.nodes.remove(&b);
        state.assign(1, c);
        state.replica_migration_step(ALLOWED, 61_000);
        assert_eq!(state.replica_migration_step(ALLOWED, 66_001), Some(c));
    }
}
