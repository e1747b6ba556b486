//! The cluster as this node sees it: the node table, who owns each slot, open slot
//! migrations, epochs, and whether the cluster is up.
//!
//! Ownership follows Redis's rules: a slot belongs to the master that claims it with the
//! highest config epoch; two masters that share a config epoch resolve the collision by
//! having the one with the lexicographically smaller id take a new epoch.

use std::collections::{BTreeMap, HashMap};

use slotproxy::cluster::SLOT_COUNT;

use super::node::{Flags, Node, NodeId};

/// How long a forgotten node is kept from coming back through gossip (Redis: 60 s).
pub const FORGET_BLACKLIST_MS: u64 = 60_000;
/// A master keeps the cluster down this long after start (Redis's writable delay).
const WRITABLE_DELAY_MS: u64 = 2_000;

/// A slot bitmap as bus messages carry it (bit `slot % 8` of byte `slot / 8`).
pub type SlotBitmap = [u8; SLOT_COUNT / 8];

/// Counters of bus messages, by type, for CLUSTER INFO.
#[derive(Clone, Debug, Default)]
pub struct MessageStats {
    pub sent: [u64; super::bus::codec::TYPE_NAMES.len()],
    pub received: [u64; super::bus::codec::TYPE_NAMES.len()],
}

pub struct ClusterState {
    pub myself: NodeId,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    pub nodes: BTreeMap<NodeId, Node>,
    /// The owner of each slot. Change it only through `assign` / `unassign` /
    /// `remove_node` / `unassign_all`, which keep the range cache right.
    pub slots: Vec<Option<NodeId>>,
    /// Each owner's slot ranges, computed when first needed after a change (CLUSTER NODES,
    /// INFO and the state check all need them; a slot scan is not free).
    ranges: std::cell::OnceCell<HashMap<NodeId, Vec<(u16, u16)>>>,
    pub migrating: BTreeMap<u16, NodeId>,
    pub importing: BTreeMap<u16, NodeId>,
    pub ok: bool,
    /// Masters serving at least one slot, as last computed.
    pub size: usize,
    /// Forgotten nodes and when they may be learned again.
    pub blacklist: HashMap<NodeId, u64>,
    pub stats: MessageStats,
    /// Set by every change that must reach the nodes file.
    pub needs_save: bool,
    /// Set by epoch changes: the nodes file must reach the disk.
    pub needs_fsync: bool,
    /// Set by changes other nodes should hear about at once.
    pub needs_broadcast: bool,
    started_ms: u64,
    among_minority_since_ms: u64,
    /// This node's replication offset, as its headers announce it (kept current by the
    /// bus cron).
    pub my_repl_offset: u64,
    /// `cluster-node-timeout`, as of the last commit (failure reports and votes expire by
    /// it).
    pub node_timeout_ms: u64,
    /// `cluster-allow-replica-migration`, as of the last commit.
    pub allow_replica_migration: bool,
    /// This node's election (as a replica) or manual failover (either side).
    pub election: super::election::Election,
}

impl ClusterState {
    /// A new node alone in its cluster.
    pub fn new(port: u16, cport: u16, now_ms: u64) -> ClusterState {
        let id = NodeId::random();
        let mut nodes = BTreeMap::new();
        nodes.insert(
            id,
            Node::new(id, "", port, cport, Flags::MYSELF | Flags::MASTER, now_ms),
        );
        ClusterState {
            myself: id,
            current_epoch: 0,
            last_vote_epoch: 0,
            nodes,
            slots: vec![None; SLOT_COUNT],
            ranges: std::cell::OnceCell::new(),
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            ok: false,
            size: 1,
            blacklist: HashMap::new(),
            stats: MessageStats::default(),
            needs_save: true,
            needs_fsync: true,
            needs_broadcast: false,
            started_ms: now_ms,
            among_minority_since_ms: 0,
            my_repl_offset: 0,
            node_timeout_ms: 15_000,
            allow_replica_migration: true,
            election: Default::default(),
        }
    }

    pub fn me(&self) -> &Node {
        &self.nodes[&self.myself]
    }

    pub fn me_mut(&mut self) -> &mut Node {
        self.nodes
            .get_mut(&self.myself)
            .expect("myself is always in the node table")
    }

    /// A node by the id text a command gave.
    pub fn lookup(&self, text: &[u8]) -> Option<&Node> {
        NodeId::parse(text).and_then(|id| self.nodes.get(&id))
    }

    pub fn owner(&self, slot: u16) -> Option<&Node> {
        self.slots[slot as usize].and_then(|id| self.nodes.get(&id))
    }

    pub fn slot_count(&self, id: &NodeId) -> usize {
        self.all_ranges()
            .get(id)
            .map_or(0, |r| r.iter().map(|(a, b)| (b - a) as usize + 1).sum())
    }

    /// The slots a node owns, as a bitmap.
    pub fn bitmap_of(&self, id: &NodeId) -> SlotBitmap {
        let mut bitmap = [0u8; SLOT_COUNT / 8];
        for &(first, last) in self.all_ranges().get(id).map_or(&[][..], Vec::as_slice) {
            for slot in first as usize..=last as usize {
                bitmap[slot / 8] |= 1 << (slot % 8);
            }
        }
        bitmap
    }

    /// The contiguous slot ranges a node owns, in slot order.
    pub fn ranges_of(&self, id: &NodeId) -> Vec<(u16, u16)> {
        self.all_ranges().get(id).cloned().unwrap_or_default()
    }

    /// Every owner's contiguous slot ranges, in slot order, from one pass over the slots.
    pub fn all_ranges(&self) -> &HashMap<NodeId, Vec<(u16, u16)>> {
        self.ranges.get_or_init(|| self.compute_ranges())
    }

    fn compute_ranges(&self) -> HashMap<NodeId, Vec<(u16, u16)>> {
        let mut ranges: HashMap<NodeId, Vec<(u16, u16)>> = HashMap::new();
        let mut start = 0;
        for slot in 1..=SLOT_COUNT {
            if slot == SLOT_COUNT || self.slots[slot] != self.slots[start] {
                if let Some(owner) = self.slots[start] {
                    ranges
                        .entry(owner)
                        .or_default()
                        .push((start as u16, slot as u16 - 1));
                }
                start = slot;
            }
        }
        ranges
    }

    pub fn assign(&mut self, slot: u16, owner: NodeId) {
        self.slots[slot as usize] = Some(owner);
        self.ranges.take();
        self.needs_save = true;
    }

    pub fn unassign(&mut self, slot: u16) {
        self.slots[slot as usize] = None;
        self.ranges.take();
        self.needs_save = true;
    }

    /// The highest config epoch any node has, or the current epoch if higher.
    pub fn max_epoch(&self) -> u64 {
        self.nodes
            .values()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }

    /// Redis's `clusterBumpConfigEpochWithoutConsensus`: takes a new config epoch unless
    /// this node's is already the unique maximum. True when it bumped.
    pub fn bump_epoch_without_consensus(&mut self) -> bool {
        let max = self.max_epoch();
        let mine = self.me().config_epoch;
        if mine == 0 || mine != max {
            self.current_epoch += 1;
            let epoch = self.current_epoch;
            self.me_mut().config_epoch = epoch;
            self.needs_save = true;
            self.needs_fsync = true;
            self.needs_broadcast = true;
            true
        } else {
            false
        }
    }

    /// Redis's `clusterHandleConfigEpochCollision`: when another master has our config
    /// epoch, the node with the smaller id takes a new one.
    pub fn handle_epoch_collision(&mut self, sender: &NodeId) {
        let Some(other) = self.nodes.get(sender) else {
            return;
        };
        let me = self.me();
        if other.config_epoch != me.config_epoch || !other.is_master() || !me.is_master() {
            return;
        }
        if sender <= &self.myself {
            return;
        }
        self.current_epoch += 1;
        let epoch = self.current_epoch;
        self.me_mut().config_epoch = epoch;
        self.needs_save = true;
        self.needs_fsync = true;
        self.needs_broadcast = true;
    }

    /// Redis's `clusterUpdateSlotsConfigWith`: `sender` claims `claimed` with
    /// `config_epoch`; it takes every claimed slot that is unassigned or owned with a lower
    /// epoch, except slots this node is importing. Returns the slots this node lost: keys
    /// left in them must go (Redis's "dirty slots").
    pub fn update_slots_with(
        &mut self,
        sender: NodeId,
        config_epoch: u64,
        claimed: &SlotBitmap,
    ) -> Vec<u16> {
        let mut dirty = Vec::new();
        if sender == self.myself {
            return dirty;
        }
        let claimed_slots = (0..SLOT_COUNT as u16)
            .filter(|slot| claimed[*slot as usize / 8] != 0)
            .filter(|slot| claimed[*slot as usize / 8] & (1 << (slot % 8)) != 0);
        for slot in claimed_slots {
            let current = self.slots[slot as usize];
            if current == Some(sender) || self.importing.contains_key(&slot) {
                continue;
            }
            let current_epoch = current
                .and_then(|id| self.nodes.get(&id))
                .map(|n| n.config_epoch);
            let takes_over = match current_epoch {
                None => true,
                Some(epoch) => epoch < config_epoch,
            };
            if !takes_over {
                continue;
            }
            if current == Some(self.myself) {
                dirty.push(slot);
            }
            self.assign(slot, sender);
        }
        dirty
    }

    /// Unassigns every slot (CLUSTER RESET).
    pub fn unassign_all(&mut self) {
        self.slots.iter_mut().for_each(|owner| *owner = None);
        self.ranges.take();
        self.needs_save = true;
    }

    /// Removes a node: its slots become unassigned and open migrations with it close.
    pub fn remove_node(&mut self, id: &NodeId) {
        self.nodes.remove(id);
        for owner in self.slots.iter_mut() {
            if owner.as_ref() == Some(id) {
                *owner = None;
            }
        }
        self.ranges.take();
        self.migrating.retain(|_, n| n != id);
        self.importing.retain(|_, n| n != id);
        self.needs_save = true;
    }

    /// Whether gossip may bring `id` back (it was not forgotten recently).
    pub fn blacklisted(&mut self, id: &NodeId, now_ms: u64) -> bool {
        self.blacklist.retain(|_, until| *until > now_ms);
        self.blacklist.contains_key(id)
    }

    /// Redis's `clusterUpdateState`: the cluster is up when every slot is served by a
    /// reachable master (if full coverage is required) and a majority of the masters that
    /// serve slots is reachable.
    pub fn update_state(&mut self, require_full_coverage: bool, node_timeout_ms: u64, now_ms: u64) {
        if self.me().is_master()
            && !self.ok
            && now_ms.saturating_sub(self.started_ms) < WRITABLE_DELAY_MS
        {
            return;
        }
        let mut ok = true;
        let ranges = self.all_ranges();
        if require_full_coverage {
            let covered: usize = ranges
                .iter()
                .filter(|(id, _)| {
                    self.nodes
                        .get(id)
                        .is_some_and(|n| !n.flags.has(Flags::FAIL))
                })
                .flat_map(|(_, r)| r.iter().map(|(a, b)| (b - a) as usize + 1))
                .sum();
            ok = covered == SLOT_COUNT;
        }
        let mut size = 0;
        let mut reachable = 0;
        for id in ranges.keys() {
            if let Some(node) = self.nodes.get(id).filter(|n| n.is_master()) {
                size += 1;
                if !node.failing() {
                    reachable += 1;
                }
            }
        }
        self.size = size;
        if reachable < size / 2 + 1 {
            ok = false;
            self.among_minority_since_ms = now_ms;
        }
        if ok != self.ok {
            let rejoin_delay = node_timeout_ms.clamp(500, 5000);
            if ok
                && self.me().is_master()
                && now_ms.saturating_sub(self.among_minority_since_ms) < rejoin_delay
            {
                return;
            }
            self.ok = ok;
        }
    }

    /// Slots assigned, and of those the ones whose owner is fine, PFAIL or FAIL.
    pub fn slot_health(&self) -> (usize, usize, usize, usize) {
        let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
        for (owner, ranges) in self.all_ranges() {
            let count: usize = ranges.iter().map(|(a, b)| (b - a) as usize + 1).sum();
            assigned += count;
            match self.nodes.get(owner) {
                Some(n) if n.flags.has(Flags::FAIL) => fail += count,
                Some(n) if n.flags.has(Flags::PFAIL) => pfail += count,
                _ => ok += count,
            }
        }
        (assigned, ok, pfail, fail)
    }

    /// One CLUSTER NODES line (without the newline), as Redis's
    /// `clusterGenNodeDescription` writes it.
    pub fn describe_node(&self, node: &Node, now_ms: u64) -> String {
        self.describe_node_with(node, &self.ranges_of(&node.id), now_ms)
    }

    fn describe_node_with(&self, node: &Node, ranges: &[(u16, u16)], now_ms: u64) -> String {
        let master = match node.master.filter(|_| node.is_replica()) {
            Some(id) => id.to_string(),
            None => "-".into(),
        };
        // A replica shows its master's config epoch, as Redis does.
        let epoch = node
            .master
            .filter(|_| node.is_replica())
            .and_then(|id| self.nodes.get(&id))
            .map_or(node.config_epoch, |m| m.config_epoch);
        let pong = if node.is_myself() {
            // Redis shows the current second for itself once it has peers.
            if self.nodes.len() > 1 {
                now_ms / 1000 * 1000
            } else {
                0
            }
        } else {
            node.pong_received_ms
        };
        let link = if node.is_myself() || node.link_since_ms.is_some() {
            "connected"
        } else {
            "disconnected"
        };
        let mut line = format!(
            "{} {} {} {} {} {} {} {}",
            node.id,
            node.address(),
            node.flags.describe(),
            master,
            node.ping_sent_ms,
            pong,
            epoch,
            link
        );
        for &(start, end) in ranges {
            if start == end {
                line.push_str(&format!(" {start}"));
            } else {
                line.push_str(&format!(" {start}-{end}"));
            }
        }
        if node.is_myself() {
            // In slot order; a slot both migrating and importing shows as migrating.
            let mut open: Vec<(u16, String)> = self
                .migrating
                .iter()
                .map(|(slot, target)| (*slot, format!(" [{slot}->-{target}]")))
                .collect();
            open.extend(
                self.importing
                    .iter()
                    .filter(|(slot, _)| !self.migrating.contains_key(slot))
                    .map(|(slot, source)| (*slot, format!(" [{slot}-<-{source}]"))),
            );
            open.sort_by_key(|(slot, _)| *slot);
            for (_, text) in open {
                line.push_str(&text);
            }
        }
        line
    }

    /// The CLUSTER NODES text: myself first, then the others by id.
    pub fn describe(&self, now_ms: u64) -> String {
        let ranges = self.all_ranges();
        let me = self.me();
        let mut text = String::new();
        for node in std::iter::once(me).chain(self.nodes.values().filter(|n| !n.is_myself())) {
            let own = ranges.get(&node.id).map_or(&[][..], Vec::as_slice);
            text.push_str(&self.describe_node_with(node, own, now_ms));
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A new node and one other master it knows (for the cluster modules' unit tests).
    pub(crate) fn state_with_peer() -> (ClusterState, NodeId) {
        let mut state = ClusterState::new(7000, 17000, 0);
        let peer = NodeId::random();
        state.nodes.insert(
            peer,
            Node::new(peer, "127.0.0.1", 7001, 17001, Flags::MASTER, 0),
        );
        (state, peer)
    }

    fn bitmap(slots: &[u16]) -> SlotBitmap {
        let mut b = [0u8; SLOT_COUNT / 8];
        for &s in slots {
            b[s as usize / 8] |= 1 << (s % 8);
        }
        b
    }

    #[test]
    fn higher_config_epoch_takes_the_slot() {
        let (mut state, peer) = state_with_peer();
        let me = state.myself;
        state.assign(5, me);
        state.me_mut().config_epoch = 3;
        let lost = state.update_slots_with(peer, 2, &bitmap(&[5, 6]));
        assert!(lost.is_empty());
        assert_eq!(state.slots[5], Some(me), "lower epoch does not win");
        assert_eq!(state.slots[6], Some(peer), "unassigned slot is taken");
        let lost = state.update_slots_with(peer, 4, &bitmap(&[5]));
        assert_eq!(lost, vec![5]);
        assert_eq!(state.slots[5], Some(peer));
    }

    #[test]
    fn importing_slots_are_left_alone() {
        let (mut state, peer) = state_with_peer();
        state.importing.insert(9, peer);
        state.update_slots_with(peer, 10, &bitmap(&[9]));
        assert_eq!(state.slots[9], None);
    }

    #[test]
    fn smaller_id_bumps_on_collision() {
        let (mut state, peer) = state_with_peer();
        state.me_mut().config_epoch = 1;
        state.nodes.get_mut(&peer).unwrap().config_epoch = 1;
        state.current_epoch = 1;
        state.handle_epoch_collision(&peer);
        let bumped = state.me().config_epoch == 2;
        assert_eq!(bumped, state.myself < peer);
    }

    #[test]
    fn bump_without_consensus_only_when_not_unique_max() {
        let (mut state, _) = state_with_peer();
        assert!(state.bump_epoch_without_consensus());
        assert_eq!(state.me().config_epoch, 1);
        assert!(!state.bump_epoch_without_consensus());
    }

    #[test]
    fn ranges_and_description() {
        let (mut state, peer) = state_with_peer();
        let me = state.myself;
        for s in [0, 1, 2, 7] {
            state.assign(s, me);
        }
        state.migrating.insert(7, peer);
        state.importing.insert(9, peer);
        assert_eq!(state.ranges_of(&me), vec![(0, 2), (7, 7)]);
        let line = state.describe_node(state.me(), 0);
        assert!(
            line.ends_with(&format!(" 0-2 7 [7->-{peer}] [9-<-{peer}]")),
            "{line}"
        );
        assert!(line.contains(" myself,master - 0 "));
    }
}
