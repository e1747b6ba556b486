//! Client buffers as memory: what INFO `mem_clients_normal` / `mem_clients_slaves` and
//! `mem_not_counted_for_evict` report, and `maxmemory-clients`, which closes the clients
//! using the most memory once all normal clients together use more than the limit
//! (Redis 7.0's client eviction; `CLIENT NO-EVICT on` exempts a client).
//!
//! A client's memory is its query buffer (the bytes received and not yet executed) and
//! its output waiting to be written. On purpose unlike Redis 7.0, a client that announces
//! a big bulk (`$536870912`) holds only the bytes it actually sent: the decoder never
//! allocates from an announced length, so such a client neither evicts keys nor counts
//! for more than it sent.
//!
//! As Redis 7.0 (`evictClients` in `processCommand` and after reading a query), the limit
//! is checked before each command, after each read into a query buffer and when a reply
//! waits for its socket, and also from the cron. The check is one comparison: every
//! normal client keeps its share of a running total ([`Share`]) up to date whenever one of
//! its buffers changes; only over the limit are the clients visited to pick the biggest.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::client_peaks::output_waiting;
use super::clients::ClientHandle;
use super::stats::Stats;
use super::Shared;
use crate::config::Config;

/// The running total of normal clients' buffers, shared by their handles. Signed: the
/// shares' additions and subtractions land in any order.
pub type Total = Arc<AtomicI64>;

/// The running total and the limit it is compared with (`Shared::client_memory`).
#[derive(Debug, Default)]
pub struct ClientsMemory {
    total: Total,
    /// `maxmemory-clients` in bytes, 0 for none (copied from the settings on change).
    limit: AtomicU64,
}

impl ClientsMemory {
    pub fn apply_settings(&self, config: &Config) {
        self.limit.store(config.memory.clients_limit(), Relaxed);
    }

    /// The total a connected client's handle counts in.
    pub fn total(&self) -> Total {
        self.total.clone()
    }

    /// Whether normal clients together may be over `maxmemory-clients`.
    pub fn over_limit(&self) -> bool {
        let limit = self.limit.load(Relaxed);
        limit != 0 && self.total.load(Relaxed) >= limit as i64
    }
}

/// One client's part of the [`Total`]: what it last added, so a change adds only the
/// difference. The total always equals the sum of the shares; a share can lag its client's
/// buffers only while two threads recount it at once (a publisher and the connection),
/// until the next change.
#[derive(Debug, Default)]
pub struct Share {
    total: Total,
    counted: AtomicI64,
    left: std::sync::atomic::AtomicBool,
}

impl Share {
    pub fn new(total: Total) -> Share {
        Share {
            total,
            ..Share::default()
        }
    }

    /// Brings the share up to `client`'s buffers (nothing for a replica or a client gone).
    pub fn recount(&self, client: &ClientHandle) {
        let now = if self.left.load(Relaxed) || client.replica.load(Relaxed) {
            0
        } else {
            client_memory(client) as i64
        };
        let before = self.counted.swap(now, Relaxed);
        if now != before {
            self.total.fetch_add(now - before, Relaxed);
        }
    }

    /// Takes the share out of the total for good.
    pub fn leave(&self, client: &ClientHandle) {
        self.left.store(true, Relaxed);
        self.recount(client);
    }
}

/// The check made before each command and when a client's buffers grow: one comparison,
/// and the eviction of the biggest clients only when over the limit. Returns how many
/// clients were closed.
pub fn check(shared: &Shared) -> usize {
    if shared.client_memory.over_limit() {
        evict_clients(shared)
    } else {
        0
    }
}

/// Bytes a client's buffers hold.
pub fn client_memory(client: &ClientHandle) -> u64 {
    (client.query_buffer.load(Relaxed) + output_waiting(client)) as u64
}

/// Buffers of normal clients and of replicas (INFO `mem_clients_normal`,
/// `mem_clients_slaves`).
pub fn clients_memory(shared: &Shared) -> (u64, u64) {
    shared
        .clients
        .snapshot()
        .iter()
        .fold((0, 0), |(normal, replicas), client| {
            let bytes = client_memory(client);
            if client.replica.load(Relaxed) {
                (normal, replicas + bytes)
            } else {
                (normal + bytes, replicas)
            }
        })
}

/// Memory `maxmemory` does not count (Redis 7.0's `freeMemoryGetNotCountedMemory`): the
/// AOF buffer, and the replication stream held beyond `repl-backlog-size` for replicas
/// that have not been sent it yet (the backlog is the replicas' shared output buffer, as
/// in Redis 7.0; see `replication::backlog`). Evicting keys would only make these grow.
/// Redis adds an estimate of its buffer blocks' headers to the backlog size; the node's
/// chunks are shared `Bytes` with no such per-block cost to estimate.
///
/// It is asked for before every command while the node is over `maxmemory`: it used to
/// take a snapshot of every client to sum replicas' output, 8% of the node's CPU under
/// SETs that each evict a key, and missed what the replicas' feeders had yet to send.
pub fn not_counted_for_evict(shared: &Shared) -> u64 {
    let held_for_replicas = shared
        .replication
        .state()
        .backlog
        .as_ref()
        .map_or(0, |backlog| {
            backlog.histlen().saturating_sub(backlog.size())
        });
    shared.aof.buffer_length() as u64 + held_for_replicas
}

/// `maxmemory-clients`: while normal clients use more than the limit, closes the one using
/// the most (never one with `CLIENT NO-EVICT on`). Returns how many were closed.
pub fn evict_clients(shared: &Shared) -> usize {
    let limit = shared.client_memory.limit.load(Relaxed);
    if limit == 0 {
        return 0;
    }
    let mut candidates: Vec<(u64, std::sync::Arc<ClientHandle>)> = shared
        .clients
        .snapshot()
        .into_iter()
        .filter(|c| !c.replica.load(Relaxed) && !c.killed.load(Relaxed))
        .map(|c| (client_memory(&c), c))
        .collect();
    let mut total: u64 = candidates.iter().map(|(bytes, _)| bytes).sum();
    candidates.retain(|(_, c)| !c.no_evict.load(Relaxed));
    candidates.sort_by_key(|(bytes, _)| std::cmp::Reverse(*bytes));
    let mut closed = 0;
    for (bytes, client) in candidates {
        if total < limit || bytes == 0 {
            break;
        }
        client.request_kill();
        total -= bytes;
        closed += 1;
        Stats::add(&shared.stats.evicted_clients, 1);
    }
    closed
}
