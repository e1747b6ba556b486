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
//! Redis checks client memory before each command; the node checks it `hz` times a second
//! from the cron (and the keyspace's own limit, `maxmemory`, before each command).

use std::sync::atomic::Ordering::Relaxed;

use super::client_peaks::output_waiting;
use super::clients::ClientHandle;
use super::stats::Stats;
use super::Shared;

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

/// Memory `maxmemory` does not count (Redis's `freeMemoryGetNotCountedMemory`): the AOF
/// buffer and replicas' output, which evicting keys would only make grow.
pub fn not_counted_for_evict(shared: &Shared) -> u64 {
    let replicas: u64 = shared
        .clients
        .snapshot()
        .iter()
        .filter(|c| c.replica.load(Relaxed))
        .map(|c| output_waiting(c) as u64)
        .sum();
    shared.aof.buffer_length() as u64 + replicas
}

/// `maxmemory-clients`: while normal clients use more than the limit, closes the one using
/// the most (never one with `CLIENT NO-EVICT on`). Returns how many were closed.
pub fn evict_clients(shared: &Shared) -> usize {
    let limit = shared.config().memory.clients_limit();
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
