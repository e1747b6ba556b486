//! Replica elections and manual failover, as Redis Cluster runs them.
//!
//! # Automatic failover (a replica whose master is `fail`)
//! The replica waits 500 ms + a random 0–500 ms + 1,000 ms per rank (replicas of the same
//! master with a larger replication offset rank before it), takes a new current epoch and
//! asks every node for a vote (`auth-req`). A master that serves slots grants one vote
//! per epoch (`auth-ack`), and none for a replica of a master it voted for within 2 ×
//! node timeout, nor for one claiming slots a newer config epoch owns. With a majority of
//! the masters the replica takes its master's slots under the election's epoch, which
//! then wins everywhere ([`ClusterState::replace_my_master`]). A replica whose data is
//! too old (`cluster-replica-validity-factor`) or that has `cluster-replica-no-failover`
//! does not run.
//!
//! # Manual failover (`CLUSTER FAILOVER` on a replica)
//! The replica sends `mfstart`; its master pauses writes and sends its final offset (a
//! message flagged `PAUSED`); once the replica has applied that much it runs an election
//! at once, flagged `FORCEACK` so masters vote although its master is fine. `FORCE` skips
//! the wait for the master; `TAKEOVER` skips the election.

use rand::Rng;

use super::bus::codec::{Body, Message};
use super::bus::gossip::header;
use super::node::{Flags, NodeId};
use super::state::ClusterState;

/// How long a manual failover may take (Redis's `CLUSTER_MF_TIMEOUT`).
pub const MANUAL_FAILOVER_TIMEOUT_MS: u64 = 5000;

#[derive(Debug, Default)]
pub struct Election {
    /// Unix ms when this replica asks for votes (0: no election under way).
    pub auth_time_ms: u64,
    pub auth_count: usize,
    pub auth_sent: bool,
    pub auth_rank: usize,
    /// The current epoch the votes are asked for.
    pub auth_epoch: u64,
    /// Manual failover: Unix ms when it is given up (0: none under way).
    pub mf_end_ms: u64,
    /// Replica side: the master's offset is reached (or FORCE): elect now.
    pub mf_can_start: bool,
    /// Replica side: the paused master's final offset.
    pub mf_master_offset: Option<u64>,
    /// Master side: the replica the manual failover is for.
    pub mf_replica: Option<NodeId>,
    /// Master side: this node paused its clients for a manual failover (to undo once it
    /// ends, whichever way).
    pub master_paused: bool,
}

/// The settings an election reads.
pub struct Limits {
    pub node_timeout_ms: u64,
    pub validity_factor: u64,
    pub ping_period_ms: u64,
    pub no_failover: bool,
}

/// What the cron must do after an election step.
#[derive(Debug)]
pub enum Step {
    Wait,
    /// Send this vote request to every node.
    AskVotes(Box<Message>),
    /// This node took its master's slots: replication must follow.
    Won,
}

impl ClusterState {
    /// Redis's `clusterGetSlaveRank`: replicas of the same master that may fail over and
    /// have more data than this node.
    fn replica_rank(&self) -> usize {
        let Some(master) = self.me().master else {
            return 0;
        };
        self.replicas_of(&master)
            .iter()
            .filter(|r| !r.is_myself() && !r.flags.has(Flags::NOFAILOVER))
            .filter(|r| r.repl_offset > self.my_repl_offset)
            .count()
    }

    /// Ends a manual failover (either side). A master's paused clients are released by
    /// the bus cron once it sees `master_paused` without a failover under way.
    pub fn reset_manual_failover(&mut self) {
        let e = &mut self.election;
        e.mf_end_ms = 0;
        e.mf_can_start = false;
        e.mf_master_offset = None;
        e.mf_replica = None;
    }

    /// Redis's `manualFailoverCheckTimeout` and `clusterHandleManualFailover`, run by the
    /// cron before the election step.
    pub fn manual_failover_step(&mut self, now_ms: u64) {
        let e = &mut self.election;
        if e.mf_end_ms == 0 {
            return;
        }
        if now_ms > e.mf_end_ms {
            crate::log::warning!("Manual failover timed out.");
            self.reset_manual_failover();
            return;
        }
        if !e.mf_can_start
            && e.mf_master_offset
                .is_some_and(|at| self.my_repl_offset >= at)
        {
            e.mf_can_start = true;
            crate::log::warning!(
                "All master replication stream processed, manual failover can start."
            );
        }
    }

    /// Redis's `clusterHandleSlaveFailover`: one step of this replica's election.
    pub fn replica_failover_step(&mut self, limits: &Limits, data_age_ms: u64, now: u64) -> Step {
        let me = self.me();
        if !me.is_replica() {
            return Step::Wait;
        }
        let Some(master_id) = me.master else {
            return Step::Wait;
        };
        let Some(master) = self.nodes.get(&master_id) else {
            return Step::Wait;
        };
        let manual = self.election.mf_end_ms != 0 && self.election.mf_can_start;
        let master_failed = master.flags.has(Flags::FAIL);
        // Automatic failover needs a failed master and may be turned off; a manual one
        // needs neither. Either way the master must have slots to hand over.
        let allowed = manual || (master_failed && !limits.no_failover);
        if !allowed || self.slot_count(&master_id) == 0 {
            return Step::Wait;
        }
        let node_timeout = limits.node_timeout_ms;
        let data_age = if data_age_ms > node_timeout {
            data_age_ms - node_timeout
        } else {
            data_age_ms
        };
        let auth_timeout = (node_timeout * 2).max(2000);
        let auth_retry = auth_timeout * 2;
        let too_old = limits.validity_factor > 0
            && data_age
                > limits
                    .ping_period_ms
                    .saturating_add(node_timeout.saturating_mul(limits.validity_factor));
        if too_old && !manual {
            return Step::Wait;
        }
        if now.saturating_sub(self.election.auth_time_ms) > auth_retry {
            let rank = self.replica_rank();
            let e = &mut self.election;
            e.auth_time_ms = now + 500 + rand::thread_rng().gen_range(0..500) + rank as u64 * 1000;
            e.auth_count = 0;
            e.auth_sent = false;
            e.auth_rank = rank;
            if manual {
                e.auth_time_ms = now;
                e.auth_rank = 0;
            }
            crate::log::warning!(
                "Start of election delayed for {} milliseconds (rank #{}, offset {}).",
                e.auth_time_ms - now,
                e.auth_rank,
                self.my_repl_offset
            );
            // The other replicas learn our offset now, to rank themselves.
            self.needs_broadcast = true;
            return Step::Wait;
        }
        if !self.election.auth_sent && !manual {
            let rank = self.replica_rank();
            let e = &mut self.election;
            if rank > e.auth_rank {
                e.auth_time_ms += (rank - e.auth_rank) as u64 * 1000;
                e.auth_rank = rank;
            }
        }
        if now < self.election.auth_time_ms || now - self.election.auth_time_ms > auth_timeout {
            return Step::Wait;
        }
        if !self.election.auth_sent {
            self.current_epoch += 1;
            self.election.auth_epoch = self.current_epoch;
            self.election.auth_sent = true;
            self.needs_save = true;
            self.needs_fsync = true;
            crate::log::warning!(
                "Starting a failover election for epoch {}.",
                self.current_epoch
            );
            let mut request = Message {
                header: header(self),
                body: Body::AuthRequest,
            };
            if manual {
                request.header.flags |= Flags::FORCEACK;
            }
            return Step::AskVotes(Box::new(request));
        }
        let quorum = self.size / 2 + 1;
        if self.election.auth_count >= quorum {
            crate::log::warning!("Failover election won: I'm the new master.");
            let epoch = self.election.auth_epoch;
            if self.me().config_epoch < epoch {
                self.me_mut().config_epoch = epoch;
            }
            self.replace_my_master();
            return Step::Won;
        }
        Step::Wait
    }

    /// Redis's `clusterSendFailoverAuthIfNeeded`: a master's vote for `sender`, if it may
    /// have one (the reply to send back).
    pub fn vote_request(&mut self, message: &Message, now: u64) -> Option<Message> {
        let h = &message.header;
        let me = self.me();
        if !me.is_master() || self.slot_count(&self.myself) == 0 {
            return None;
        }
        if h.current_epoch < self.current_epoch || self.last_vote_epoch == self.current_epoch {
            return None;
        }
        let node = self.nodes.get(&h.sender)?;
        let master_id = node.master.filter(|_| node.is_replica())?;
        let master = self.nodes.get(&master_id)?;
        let force_ack = h.flags & Flags::FORCEACK != 0;
        if !master.flags.has(Flags::FAIL) && !force_ack {
            return None;
        }
        if now.saturating_sub(master.voted_time_ms) < self.node_timeout_ms * 2 {
            return None;
        }
        // A slot the request claims must not be owned with a newer config epoch.
        let stale = (0..h.slots.len() * 8)
            .filter(|slot| h.slots[slot / 8] & (1 << (slot % 8)) != 0)
            .filter_map(|slot| self.owner(slot as u16))
            .any(|owner| owner.config_epoch > h.config_epoch);
        if stale {
            return None;
        }
        self.last_vote_epoch = self.current_epoch;
        if let Some(master) = self.nodes.get_mut(&master_id) {
            master.voted_time_ms = now;
        }
        self.needs_save = true;
        self.needs_fsync = true;
        crate::log::warning!(
            "Failover auth granted to {} for epoch {}",
            h.sender,
            self.current_epoch
        );
        Some(Message {
            header: header(self),
            body: Body::AuthAck,
        })
    }

    /// A vote arrived: it counts if a master serving slots cast it for this election.
    pub fn count_vote(&mut self, message: &Message) {
        let h = &message.header;
        let serves = self
            .nodes
            .get(&h.sender)
            .is_some_and(|n| n.is_master() && !n.is_myself())
            && self.slot_count(&h.sender) > 0;
        if serves && h.current_epoch >= self.election.auth_epoch && self.election.auth_sent {
            self.election.auth_count += 1;
        }
    }

    /// Redis's `clusterFailoverReplaceYourMaster`: this replica becomes a master and takes
    /// its master's slots, under its own config epoch (set by the caller).
    pub fn replace_my_master(&mut self) {
        let Some(old) = self.me().master else {
            return;
        };
        let me = self.me_mut();
        me.flags.set(Flags::REPLICA, false);
        me.flags.set(Flags::MASTER, true);
        me.master = None;
        let owned: Vec<u16> = self
            .ranges_of(&old)
            .iter()
            .flat_map(|&(a, b)| a..=b)
            .collect();
        let myself = self.myself;
        for slot in owned {
            self.assign(slot, myself);
        }
        self.election.auth_time_ms = 0;
        self.election.auth_sent = false;
        self.reset_manual_failover();
        self.needs_save = true;
        self.needs_fsync = true;
        self.needs_broadcast = true;
    }
}
