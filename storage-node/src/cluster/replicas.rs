//! Who replicates whom: the replica relation in the node table, as Redis's
//! `clusterSetMaster`, `clusterSetNodeAsMaster` and the "become a replica of the node that
//! took my slots" rule of `clusterUpdateSlotsConfigWith` keep it.
//!
//! The node table says what this node should be; `super::role` makes the replication
//! follow it.

use super::node::{Flags, Node, NodeId};
use super::state::{ClusterState, SlotBitmap};

impl ClusterState {
    /// The replicas of `master` this node knows, by id.
    pub fn replicas_of(&self, master: &NodeId) -> Vec<&Node> {
        self.nodes
            .values()
            .filter(|n| n.is_replica() && !n.in_handshake() && n.master.as_ref() == Some(master))
            .collect()
    }

    /// The master whose slots this node serves: itself, or the master it replicates.
    pub fn serving_master(&self) -> NodeId {
        let me = self.me();
        match me.master {
            Some(master) if me.is_replica() => master,
            _ => self.myself,
        }
    }

    /// Redis's `clusterSetMaster`: this node becomes a replica of `master`. A master
    /// drops its open slot migrations (it has no slots left to move).
    pub fn set_my_master(&mut self, master: NodeId) {
        let me = self.me_mut();
        if me.is_master() {
            me.flags.set(Flags::MASTER, false);
            me.flags.set(Flags::REPLICA, true);
            self.migrating.clear();
            self.importing.clear();
        }
        self.me_mut().master = Some(master);
        self.reset_manual_failover();
        self.needs_save = true;
        self.needs_broadcast = true;
    }

    /// Redis's `clusterSetNodeAsMaster` for another node: its header says it is a master.
    pub fn set_node_as_master(&mut self, id: &NodeId) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if node.is_master() && node.master.is_none() {
            return;
        }
        // A replica that took over from its master inherits the master's place: replicas
        // may migrate to it (Redis sets MIGRATE_TO here for any node but itself).
        if node.master.is_some() && !node.is_myself() {
            node.migrate_to = true;
        }
        node.flags.set(Flags::REPLICA, false);
        node.flags.set(Flags::MASTER, true);
        node.master = None;
        self.needs_save = true;
    }

    /// Another node's header says it replicates `master`: a former master's slots are
    /// unassigned (its master's claims decide who has them now).
    pub fn set_node_as_replica(&mut self, id: &NodeId, master: NodeId) {
        let Some(node) = self.nodes.get(id) else {
            return;
        };
        let was_master = node.is_master();
        if !was_master && node.master == Some(master) {
            return;
        }
        if was_master {
            let owned: Vec<u16> = self
                .ranges_of(id)
                .iter()
                .flat_map(|&(a, b)| a..=b)
                .collect();
            for slot in owned {
                self.unassign(slot);
            }
        }
        let known_master = self.nodes.contains_key(&master);
        if let Some(node) = self.nodes.get_mut(id) {
            node.flags.set(Flags::MASTER, false);
            node.flags.set(Flags::REPLICA, true);
            // Redis links a replica to its master only once it knows the master.
            if known_master {
                node.master = Some(master);
            }
        }
        self.needs_save = true;
    }

    /// A master's claim of slots (its header, or an UPDATE), applied as Redis's
    /// `clusterUpdateSlotsConfigWith` does: newer claims win slot by slot; when the master
    /// this node serves lost its last slot to `sender`, this node becomes a replica of
    /// `sender` (so a failed-over master rejoins as a replica of its successor). Returns
    /// the slots this node lost whose keys must go.
    pub fn apply_slot_claim(
        &mut self,
        sender: NodeId,
        config_epoch: u64,
        claimed: &SlotBitmap,
    ) -> Vec<u16> {
        let serving = self.serving_master();
        let before = self.bitmap_of(&serving);
        let claimed_slots = count_slots(claimed);
        let mut dirty = self.update_slots_with(sender, config_epoch, claimed);
        let after = self.bitmap_of(&serving);
        let taken_from_us = count_slots(&before) - count_slots(&after);
        let now_empty = count_slots(&after) == 0;
        if taken_from_us > 0
            && now_empty
            && sender != self.myself
            && (self.allow_replica_migration || claimed_slots == taken_from_us)
        {
            crate::log::warning!(
                "Configuration change detected. Reconfiguring myself as a replica of {sender}"
            );
            self.set_my_master(sender);
            // The sync from the new master replaces the data: nothing to delete.
            dirty.clear();
        }
        dirty
    }
}

fn count_slots(bitmap: &SlotBitmap) -> usize {
    bitmap.iter().map(|b| b.count_ones() as usize).sum()
}

#[cfg(test)]
mod tests {
    use crate::cluster::state::tests::state_with_peer as cluster_of_two;

    #[test]
    fn a_master_that_loses_every_slot_follows_the_new_owner() {
        let (mut state, peer) = cluster_of_two();
        let me = state.myself;
        for slot in 0..10 {
            state.assign(slot, me);
        }
        state.me_mut().config_epoch = 1;
        let mut claim = [0u8; 2048];
        claim[0] = 0xff;
        claim[1] = 0b11;
        let dirty = state.apply_slot_claim(peer, 5, &claim);
        assert!(dirty.is_empty(), "the sync replaces the data");
        assert!(state.me().is_replica());
        assert_eq!(state.me().master, Some(peer));
        assert_eq!(state.serving_master(), peer);
    }

    #[test]
    fn a_replica_header_moves_a_former_master_out_of_the_slot_table() {
        let (mut state, peer) = cluster_of_two();
        let me = state.myself;
        state.assign(3, peer);
        state.set_node_as_replica(&peer, me);
        assert_eq!(state.slots[3], None);
        assert_eq!(state.replicas_of(&me).len(), 1);
        state.set_node_as_master(&peer);
        assert!(state.replicas_of(&me).is_empty());
    }
}
