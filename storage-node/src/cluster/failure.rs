//! Failure detection, as Redis Cluster does it.
//!
//! - A node that has not answered a PING for `cluster-node-timeout` is flagged `fail?`
//!   (PFAIL) by the bus cron of each observer, on its own.
//! - Masters say whom they suspect in their gossip; each such mention is a failure report,
//!   valid for 2 × node timeout ([`FAIL_REPORT_VALIDITY_MULT`]).
//! - A node suspected here and reported by a majority of the masters that serve slots
//!   (this node counts itself when it is a master) is flagged `fail` (FAIL), and a FAIL
//!   message tells every other node at once.
//! - `fail` is cleared when the node answers again: at once for a replica or a master
//!   without slots, after 2 × node timeout for a master that still has slots (its
//!   replicas had that long to take over; [`FAIL_UNDO_TIME_MULT`]).

use super::node::{Flags, NodeId};
use super::state::ClusterState;

/// Failure reports older than this many node timeouts are ignored (Redis's
/// `CLUSTER_FAIL_REPORT_VALIDITY_MULT`).
pub const FAIL_REPORT_VALIDITY_MULT: u64 = 2;
/// A master with slots keeps `fail` this many node timeouts after it answers again
/// (Redis's `CLUSTER_FAIL_UNDO_TIME_MULT`).
pub const FAIL_UNDO_TIME_MULT: u64 = 2;

impl ClusterState {
    fn report_validity_ms(&self) -> u64 {
        self.node_timeout_ms * FAIL_REPORT_VALIDITY_MULT
    }

    /// `reporter` (a master) says `failing` is down. True if the report is new.
    pub fn add_failure_report(&mut self, failing: &NodeId, reporter: NodeId, now_ms: u64) -> bool {
        let Some(node) = self.nodes.get_mut(failing) else {
            return false;
        };
        match node.fail_reports.iter_mut().find(|(id, _)| *id == reporter) {
            Some(report) => {
                report.1 = now_ms;
                false
            }
            None => {
                node.fail_reports.push((reporter, now_ms));
                true
            }
        }
    }

    /// `reporter` now says `failing` is fine.
    pub fn remove_failure_report(&mut self, failing: &NodeId, reporter: &NodeId) {
        if let Some(node) = self.nodes.get_mut(failing) {
            node.fail_reports.retain(|(id, _)| id != reporter);
        }
    }

    /// The failure reports about `id` still valid (expired ones are dropped).
    pub fn failure_report_count(&mut self, id: &NodeId, now_ms: u64) -> usize {
        let validity = self.report_validity_ms();
        let Some(node) = self.nodes.get_mut(id) else {
            return 0;
        };
        node.fail_reports
            .retain(|(_, at)| now_ms.saturating_sub(*at) <= validity);
        node.fail_reports.len()
    }

    /// Redis's `markNodeAsFailingIfNeeded`: flags `id` FAIL when this node suspects it and
    /// a majority of masters agree. True when it did (the caller broadcasts FAIL).
    pub fn mark_failing_if_needed(&mut self, id: &NodeId, now_ms: u64) -> bool {
        let quorum = self.size / 2 + 1;
        match self.nodes.get(id) {
            Some(node) if node.flags.has(Flags::PFAIL) && !node.flags.has(Flags::FAIL) => {}
            _ => return false,
        }
        let mut failures = self.failure_report_count(id, now_ms);
        if self.me().is_master() {
            failures += 1;
        }
        if failures < quorum {
            return false;
        }
        crate::log::notice!("Marking node {id} as failing (quorum reached).");
        self.mark_failed(id, now_ms);
        true
    }

    /// Flags `id` FAIL (a quorum here, or a FAIL message from another node).
    pub fn mark_failed(&mut self, id: &NodeId, now_ms: u64) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if node.flags.has(Flags::FAIL) || node.is_myself() {
            return;
        }
        node.flags.set(Flags::FAIL, true);
        node.flags.set(Flags::PFAIL, false);
        node.fail_time_ms = now_ms;
        self.needs_save = true;
    }

    /// The node answered (a PONG): `fail?` goes at once; `fail` as Redis's
    /// `clearNodeFailureIfNeeded` decides.
    pub fn node_answered(&mut self, id: &NodeId, now_ms: u64) {
        let undo_after = self.node_timeout_ms * FAIL_UNDO_TIME_MULT;
        let serves_slots = self.slot_count(id) > 0;
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if node.flags.has(Flags::PFAIL) {
            node.flags.set(Flags::PFAIL, false);
            return;
        }
        if !node.flags.has(Flags::FAIL) {
            return;
        }
        let clear = if node.is_replica() || !serves_slots {
            true
        } else {
            now_ms.saturating_sub(node.fail_time_ms) > undo_after
        };
        if clear {
            crate::log::notice!("Clear FAIL state for node {id}: it is reachable again.");
            node.flags.set(Flags::FAIL, false);
            node.fail_time_ms = 0;
            self.needs_save = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::node::Node;

    /// Three masters serving slots; this node is one of them.
    fn three_masters() -> (ClusterState, NodeId, NodeId) {
        let mut state = ClusterState::new(7000, 17000, 0);
        state.node_timeout_ms = 1000;
        let me = state.myself;
        let (a, b) = (NodeId::random(), NodeId::random());
        for (i, id) in [a, b].into_iter().enumerate() {
            let port = 7001 + i as u16;
            state.nodes.insert(
                id,
                Node::new(id, "127.0.0.1", port, port + 10000, Flags::MASTER, 0),
            );
        }
        state.assign(0, me);
        state.assign(1, a);
        state.assign(2, b);
        state.update_state(false, 1000, 10_000);
        assert_eq!(state.size, 3);
        (state, a, b)
    }

    #[test]
    fn fail_needs_a_majority_of_masters() {
        let (mut state, a, b) = three_masters();
        assert!(!state.mark_failing_if_needed(&a, 0), "not suspected here");
        state
            .nodes
            .get_mut(&a)
            .unwrap()
            .flags
            .set(Flags::PFAIL, true);
        assert!(
            !state.mark_failing_if_needed(&a, 0),
            "only this node suspects it"
        );
        assert!(state.add_failure_report(&a, b, 0));
        assert!(state.mark_failing_if_needed(&a, 0));
        assert!(state.nodes[&a].flags.has(Flags::FAIL));
        assert!(!state.nodes[&a].flags.has(Flags::PFAIL));
    }

    #[test]
    fn reports_expire_after_twice_the_node_timeout() {
        let (mut state, a, b) = three_masters();
        state.add_failure_report(&a, b, 0);
        assert_eq!(state.failure_report_count(&a, 2000), 1);
        assert_eq!(state.failure_report_count(&a, 2001), 0);
    }

    #[test]
    fn a_master_with_slots_keeps_fail_for_a_while() {
        let (mut state, a, _) = three_masters();
        state.mark_failed(&a, 1000);
        state.node_answered(&a, 1500);
        assert!(state.nodes[&a].flags.has(Flags::FAIL));
        state.node_answered(&a, 3001);
        assert!(!state.nodes[&a].flags.has(Flags::FAIL));
        // A master without slots (its replica took them) is cleared at once.
        state.unassign(1);
        state.mark_failed(&a, 5000);
        state.node_answered(&a, 5001);
        assert!(!state.nodes[&a].flags.has(Flags::FAIL));
    }
}
