//! Replication, as Redis 7.0 speaks it: a node is a master that feeds replicas, or a
//! replica of another master (`replica`), and either way keeps a [`Backlog`] of the
//! stream so that replicas can continue after a short disconnect (PSYNC2).
//!
//! # The stream
//! On a master the stream is what `crate::propagation` produces (the same bytes the AOF
//! gets), plus what only replicas see (PING heartbeats, `REPLCONF GETACK`). It is fed
//! here by [`Replication::feed`] under the keyspace lock, so in order. On a replica the
//! stream is the master's bytes, passed on unchanged (chained replicas, PSYNC2 after a
//! promotion); its own propagation feeds only its AOF.
//!
//! # Identity
//! `replid` names the history the offsets count in; `replid2` and `second_offset` name
//! the previous one after a promotion, so the former siblings can continue partially.

pub mod backlog;
pub mod failover;
pub mod info;
pub mod master;
pub mod replica;
pub mod wait;

pub use backlog::Backlog;

use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::watch;

use crate::server::clients::lock;

/// Redis 7.0's default `repl-backlog-size`.
pub const DEFAULT_BACKLOG_SIZE: u64 = 1024 * 1024;

/// The replication state of one node (in `Shared`).
pub struct Replication {
    state: Mutex<State>,
    /// The stream's end offset after every feed: replica feeders wait on it.
    end_tx: watch::Sender<u64>,
    /// The replica side (when this node replicates from a master).
    pub link: replica::Link,
    /// The master side: the replicas of this node.
    pub master: master::Replicas,
    /// FAILOVER's state.
    pub failover: failover::Failover,
}

/// What PSYNC and INFO replication read, under one lock.
pub struct State {
    /// `master_replid`: 40 hex characters.
    pub replid: String,
    /// `master_replid2` ("0" x 40 when none) and `second_repl_offset` (-1 when none).
    pub replid2: String,
    pub second_offset: i64,
    /// Created when the first replica attaches (Redis does the same), kept for
    /// `repl-backlog-ttl` after the last one left.
    pub backlog: Option<Backlog>,
    /// `master_repl_offset` while there is no backlog.
    pub offset: u64,
}

impl State {
    /// `master_repl_offset`.
    pub fn end(&self) -> u64 {
        self.backlog.as_ref().map_or(self.offset, Backlog::end)
    }
}

impl Default for Replication {
    fn default() -> Replication {
        Replication {
            state: Mutex::new(State {
                replid: crate::server::random_hex_id(),
                replid2: "0".repeat(40),
                second_offset: -1,
                backlog: None,
                offset: 0,
            }),
            end_tx: watch::channel(0).0,
            link: replica::Link::default(),
            master: master::Replicas::default(),
            failover: Default::default(),
        }
    }
}

impl Replication {
    /// The state, locked. Never held across an await or while taking the keyspace lock
    /// (the keyspace lock is taken first when both are needed).
    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Appends a piece of the stream to the backlog, if there is one, and wakes the
    /// replica feeders. Called under the keyspace lock. The backlog keeps the bytes from
    /// `keep_from` and those a replica has not been sent yet.
    pub fn feed(&self, chunk: &Bytes, keep_from: u64) {
        let mut state = self.state();
        let Some(backlog) = state.backlog.as_mut() else {
            return;
        };
        backlog.push(chunk.clone(), keep_from.min(self.master.keep_from()));
        let end = backlog.end();
        drop(state);
        self.end_tx.send_replace(end);
    }

    /// A replica passes its master's stream on unchanged (chained replicas, PSYNC2 after
    /// a promotion): the bytes go to the backlog as they came, which is created at the
    /// current offset if there is none yet.
    pub fn feed_from_master(&self, chunk: &Bytes) {
        let mut state = self.state();
        let offset = state.offset;
        let backlog = state
            .backlog
            .get_or_insert_with(|| Backlog::new(DEFAULT_BACKLOG_SIZE, offset));
        backlog.push(chunk.clone(), u64::MAX);
        let end = backlog.end();
        drop(state);
        self.end_tx.send_replace(end);
    }

    /// A full sync from a master loaded its data: this node's history is now the
    /// master's `replid`, at `offset`. The backlog (if any) starts afresh there, the
    /// previous ids are forgotten, and this node's own replicas are disconnected: they
    /// followed the old history and must sync again (Redis's `disconnectSlaves`).
    pub fn reset_history(&self, replid: String, offset: u64) {
        for replica in self.master.all() {
            replica.handle.request_kill();
        }
        let mut state = self.state();
        state.replid = replid;
        state.replid2 = "0".repeat(40);
        state.second_offset = -1;
        state.offset = offset;
        if let Some(backlog) = state.backlog.as_mut() {
            let size = backlog.size();
            *backlog = Backlog::new(size, offset);
        }
        drop(state);
        self.end_tx.send_replace(offset);
    }

    /// A replica becomes a master (REPLICAOF NO ONE, FAILOVER): the old history stays
    /// valid as `replid2` up to the current offset, so former siblings that followed it
    /// continue with `+CONTINUE`; a new `replid` starts (Redis's `shiftReplicationId`).
    pub fn shift_replid(&self) {
        let mut state = self.state();
        let end = state.end();
        state.replid2 = std::mem::replace(&mut state.replid, crate::server::random_hex_id());
        // Redis's second_replid_offset is the 1-based offset of the first byte the new
        // history adds.
        state.second_offset = end as i64 + 1;
    }

    /// `master_repl_offset`: bytes ever fed to the stream.
    pub fn end(&self) -> u64 {
        self.state().end()
    }

    /// Creates the backlog at the current offset if there is none (the first replica
    /// arrived), with `repl-backlog-size`. Returns whether it was created. Called under
    /// the keyspace lock, which must then turn propagation on.
    pub fn ensure_backlog(&self, size: u64) -> bool {
        let mut state = self.state();
        if state.backlog.is_some() {
            return false;
        }
        let offset = state.offset;
        state.backlog = Some(Backlog::new(size, offset));
        true
    }

    /// Frees the backlog (`repl-backlog-ttl` passed without replicas); the offset stays.
    pub fn free_backlog(&self) {
        let mut state = self.state();
        if let Some(backlog) = state.backlog.take() {
            state.offset = backlog.end();
        }
    }

    /// Whether a backlog exists (propagation must then be on).
    pub fn has_backlog(&self) -> bool {
        self.state().backlog.is_some()
    }

    /// `CONFIG SET repl-backlog-size`.
    pub fn resize_backlog(&self, size: u64) {
        if let Some(backlog) = self.state().backlog.as_mut() {
            backlog.set_size(size);
        }
    }

    /// Feeds bytes only replicas get (PING heartbeats, `REPLCONF GETACK`), not the AOF.
    /// Called under the keyspace lock after [`crate::propagation::publish`], so they
    /// follow everything propagated before.
    pub fn feed_replicas_only(&self, bytes: &'static [u8]) {
        self.feed(&Bytes::from_static(bytes), u64::MAX);
    }

    /// Follows the stream's end offset (for a task that sends the stream to a replica).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.end_tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_resets_and_shifts_as_redis_does() {
        let replication = Replication::default();
        assert!(replication.ensure_backlog(100));
        replication.feed(&Bytes::from_static(b"abcdef"), u64::MAX);
        let old = replication.state().replid.clone();
        // Promotion: the old history stays valid up to the offset, the new one follows.
        replication.shift_replid();
        {
            let state = replication.state();
            assert_eq!(state.replid2, old);
            assert_ne!(state.replid, old);
            assert_eq!(state.second_offset, 7);
            assert_eq!(state.end(), 6);
        }
        // A full sync from a master: its id and offset, the backlog empty from there.
        replication.reset_history("f".repeat(40), 1000);
        let state = replication.state();
        assert_eq!(state.replid, "f".repeat(40));
        assert_eq!(
            (state.replid2.as_str(), state.second_offset),
            (&*"0".repeat(40), -1)
        );
        let backlog = state.backlog.as_ref().unwrap();
        assert_eq!((backlog.start(), backlog.end()), (1000, 1000));
        drop(state);
        // A replica passes its master's bytes on unchanged.
        replication.feed_from_master(&Bytes::from_static(b"xyz"));
        assert_eq!(replication.end(), 1003);
    }
}
