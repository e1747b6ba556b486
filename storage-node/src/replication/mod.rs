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
pub mod replica;

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
    /// replica feeders. Called under the keyspace lock.
    pub fn feed(&self, chunk: &Bytes, keep_from: u64) {
        let mut state = self.state();
        let Some(backlog) = state.backlog.as_mut() else {
            return;
        };
        backlog.push(chunk.clone(), keep_from);
        let end = backlog.end();
        drop(state);
        self.end_tx.send_replace(end);
    }

    /// Follows the stream's end offset (for a task that sends the stream to a replica).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.end_tx.subscribe()
    }
}

// ---------------------------------------------------------------------------------------
// Minimal versions of the replica side's entry points into the shared state, for the
// replica branch alone (R1's branch brings the real ones; on merge, keep R1's).
// ---------------------------------------------------------------------------------------
impl Replication {
    /// A replica passes its master's stream on unchanged: the bytes just applied move the
    /// offset and go into the backlog (for this node's own replicas, and for PSYNC after
    /// a promotion).
    pub fn feed_from_master(&self, chunk: &Bytes) {
        let mut state = self.state();
        state.offset += chunk.len() as u64;
        if let Some(backlog) = state.backlog.as_mut() {
            backlog.push(chunk.clone(), u64::MAX);
        }
        let end = state.end();
        drop(state);
        self.end_tx.send_replace(end);
    }

    /// After a full sync: the history is the master's `replid` at `offset`, with no
    /// second id, and a fresh backlog starts there (a replica keeps one, so its siblings
    /// can continue from it once it is promoted).
    pub fn reset_history(&self, replid: String, offset: u64) {
        let mut state = self.state();
        state.replid = replid;
        state.replid2 = "0".repeat(40);
        state.second_offset = -1;
        state.offset = offset;
        let size = state
            .backlog
            .as_ref()
            .map_or(DEFAULT_BACKLOG_SIZE, Backlog::size);
        state.backlog = Some(Backlog::new(size, offset));
        drop(state);
        self.end_tx.send_replace(offset);
    }

    /// A promotion: the history goes on under a new random id; the old one becomes the
    /// second id, valid up to the current offset, so former siblings can continue.
    pub fn shift_replid(&self) {
        let mut state = self.state();
        let end = state.end();
        state.replid2 = std::mem::replace(&mut state.replid, crate::server::random_hex_id());
        state.second_offset = end as i64 + 1;
    }
}
