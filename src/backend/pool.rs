//! Shared connections per node and protocol, reopened with backoff when they die.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::connection::{BackendConn, ConnStats, ConnTotals};
use super::error::BackendError;
use super::reply_cap::LiveReplyCap;
use crate::resp::Proto;

const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Which shared connections a client uses: its worker thread's pool, and one connection per
/// node within it. All of a client's requests to a node go through that one connection, so
/// they reach the node in the order the client sent them, and never leave the thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lane {
    pub worker: usize,
    pub conn: usize,
}

struct Slot {
    conn: Arc<BackendConn>,
    opened: Instant,
    /// How long to wait before reopening after a connection that died young.
    backoff: Duration,
}

/// All multiplexed backend connections of one proxy.
pub struct Pool {
    per_node: usize,
    connect_timeout: Duration,
    reply_cap: Arc<LiveReplyCap>,
    /// Per node address, the connections of each kind: RESP2, RESP3, and the same two with
    /// `READONLY` sent (reads from replicas). Keyed by the address alone so the per-request
    /// look-up borrows a `&str` and allocates nothing.
    nodes: RwLock<HashMap<String, [Vec<Slot>; 4]>>,
    next: AtomicUsize,
    /// Counters of replaced connections, so per-node totals stay monotonic.
    retired: Mutex<Retired>,
}

/// Replaced connections whose tasks may still be finishing, and the final counts of those
/// that have finished, per node; plus requests refused while a node was in backoff.
#[derive(Default)]
struct Retired {
    finishing: Vec<(String, Arc<ConnStats>)>,
    totals: HashMap<String, ConnTotals>,
}

fn kind_index(proto: Proto, readonly: bool) -> usize {
    let proto = match proto {
        Proto::Resp2 => 0,
        Proto::Resp3 => 1,
    };
    proto + 2 * usize::from(readonly)
}

impl Pool {
    pub fn new(per_node: usize, connect_timeout: Duration, reply_cap: Arc<LiveReplyCap>) -> Pool {
        Pool {
            per_node: per_node.max(1),
            connect_timeout,
            reply_cap,
            nodes: RwLock::new(HashMap::new()),
            next: AtomicUsize::new(0),
            retired: Mutex::new(Retired::default()),
        }
    }

    /// A connection index for a new client (see [`Lane`]).
    pub fn assign_conn(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The live connection of `lane` to `addr`, opening or reopening it if needed. Fails fast
    /// while a node that keeps refusing connections is in backoff.
    pub fn get(
        &self,
        addr: &str,
        proto: Proto,
        lane: usize,
    ) -> Result<Arc<BackendConn>, BackendError> {
        self.get_kind(addr, proto, false, lane)
    }

    /// [`Pool::get`] for a connection that sent `READONLY`: reads served by a replica.
    pub fn get_readonly(
        &self,
        addr: &str,
        proto: Proto,
        lane: usize,
    ) -> Result<Arc<BackendConn>, BackendError> {
        self.get_kind(addr, proto, true, lane)
    }

    fn get_kind(
        &self,
        addr: &str,
        proto: Proto,
        readonly: bool,
        lane: usize,
    ) -> Result<Arc<BackendConn>, BackendError> {
        let index = lane % self.per_node;
        let protocol = kind_index(proto, readonly);
        {
            let nodes = self.nodes.read().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = nodes.get(addr).and_then(|slots| slots[protocol].get(index)) {
                if slot.conn.is_alive() {
                    return Ok(slot.conn.clone());
                }
            }
        }
        let mut nodes = self.nodes.write().unwrap_or_else(|p| p.into_inner());
        let slots = &mut nodes.entry(addr.to_string()).or_default()[protocol];
        while slots.len() <= index {
            slots.push(Slot {
                conn: Arc::new(BackendConn::open(
                    addr.to_string(),
                    proto,
                    readonly,
                    self.connect_timeout,
                    self.reply_cap.clone(),
                )),
                opened: Instant::now(),
                backoff: Duration::ZERO,
            });
        }
        let slot = &mut slots[index];
        if slot.conn.is_alive() {
            return Ok(slot.conn.clone());
        }
        let died_young = slot.opened.elapsed() < Duration::from_secs(1);
        if died_young && slot.opened.elapsed() < slot.backoff {
            let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
            retired.totals.entry(addr.to_string()).or_default().errors += 1;
            return Err(BackendError::Connect {
                addr: addr.to_string(),
                reason: "node unreachable, retrying with backoff".into(),
            });
        }
        slot.backoff = if died_young {
            (slot.backoff * 2).clamp(Duration::from_millis(50), MAX_BACKOFF)
        } else {
            Duration::ZERO
        };
        let fresh = Arc::new(BackendConn::open(
            addr.to_string(),
            proto,
            readonly,
            self.connect_timeout,
            self.reply_cap.clone(),
        ));
        let old = std::mem::replace(&mut slot.conn, fresh);
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finishing
            .push((addr.to_string(), old.stats.clone()));
        slot.opened = Instant::now();
        Ok(slot.conn.clone())
    }

    /// Request counters per node address: current connections plus every connection this
    /// pool has replaced (monotonic), and requests refused during a node's backoff.
    pub fn node_totals(&self) -> HashMap<String, ConnTotals> {
        // Locks in the order `get` takes them (nodes, then retired), and both at once, so a
        // connection being replaced is counted exactly once: a counter must never dip.
        let nodes = self.nodes.read().unwrap_or_else(|p| p.into_inner());
        let mut totals = {
            let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
            let Retired { finishing, totals } = &mut *retired;
            finishing.retain(|(addr, stats)| {
                if stats.is_finished() {
                    totals
                        .entry(addr.clone())
                        .or_default()
                        .merge(&stats.totals());
                    false
                } else {
                    true
                }
            });
            let mut all = totals.clone();
            for (addr, stats) in finishing.iter() {
                all.entry(addr.clone()).or_default().merge(&stats.totals());
            }
            all
        };
        for (addr, by_proto) in nodes.iter() {
            for slot in by_proto.iter().flatten() {
                totals
                    .entry(addr.clone())
                    .or_default()
                    .merge(&slot.conn.stats.totals());
            }
        }
        totals
    }

    /// Live connections per node address, for metrics and leak checks.
    pub fn connection_counts(&self) -> HashMap<String, usize> {
        let nodes = self.nodes.read().unwrap_or_else(|p| p.into_inner());
        let mut counts = HashMap::new();
        for (addr, by_proto) in nodes.iter() {
            *counts.entry(addr.clone()).or_insert(0) += by_proto
                .iter()
                .flatten()
                .filter(|s| s.conn.is_alive())
                .count();
        }
        counts
    }
}
