//! The proxy: listener, client sessions, routing, fan-out, transactions, blocking commands
//! and pub/sub.
//!
//! A client is accepted by [`listener`]; a request goes: [`session`] decodes it ([`client_io`]) and [`dispatch`] serves it: → [`router`] classifies it with the command table →
//! it is answered by the proxy itself ([`answered_here`]), forwarded to one slot's master ([`forward`], batched per
//! node across the client's pipeline by [`batch`]), split over
//! several slots ([`fanout`]), or run on a dedicated connection ([`transaction`],
//! [`blocking`], [`pubsub`], [`wait`]). `BF.*` on a configured split Bloom filter is spread
//! over its part filters by [`split_bloom`]. Replies go back in request order.

pub mod answered_here;
pub mod batch;
pub mod blocking;
pub mod client_io;
pub mod clients;
pub mod cluster_info;
pub mod config_command;
mod dispatch;
pub mod failover;
pub mod fanout;
pub mod forward;
pub mod info;
pub mod listener;
pub mod pubsub;
pub mod read_from;
pub mod router;
pub mod session;
pub mod split_bloom;
pub mod stats;
pub mod transaction;
pub mod wait;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::backend::dedicated::DedicatedLimit;
use crate::backend::{topology, Lane, LiveReplyCap, Pool, Topology};
use crate::config::ProxyConfig;
use crate::metrics::Metrics;

/// State shared by all sessions of one proxy.
pub struct Proxy {
    pub config: ArcSwap<ProxyConfig>,
    pub topology: ArcSwap<Topology>,
    /// One pool of shared backend connections per worker thread, plus one (the last) for
    /// the control thread (topology refresh, INFO aggregation).
    pools: Vec<Pool>,
    pub dedicated: Arc<DedicatedLimit>,
    /// The cap on one backend reply, shared by every pool's connections.
    pub reply_cap: Arc<LiveReplyCap>,
    pub clients: clients::ClientRegistry,
    pub stats: stats::Stats,
    /// Prometheus metrics (`GET /metrics`); per-worker counters indexed like `pools`.
    pub metrics: Metrics,
    pub started: Instant,
    /// A 40-hex id, presented as the node id of the one-node cluster clients see.
    pub id: String,
    pub listen_addr: SocketAddr,
    refresh: Notify,
    /// Nodes the refreshes last saw as replicas: one of them seen as a master is a
    /// failover (see [`Topology::count_promotions`]).
    replicas_seen: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Where clients' requests ran after a redirect, for their next WAIT.
    pub wait_notes: wait::RedirectNotes,
}

impl Proxy {
    pub fn new(config: ProxyConfig, listen_addr: SocketAddr, workers: usize) -> Proxy {
        let reply_cap = Arc::new(LiveReplyCap::new(&config.limits));
        let pools: Vec<Pool> = (0..=workers)
            .map(|_| {
                Pool::new(
                    config.backend.connections_per_node,
                    Duration::from_millis(config.timeouts.connect_ms),
                    reply_cap.clone(),
                )
            })
            .collect();
        Proxy {
            dedicated: DedicatedLimit::new(config.limits.dedicated_connections),
            reply_cap,
            config: ArcSwap::from_pointee(config),
            topology: ArcSwap::from_pointee(Topology::default()),
            pools,
            clients: clients::ClientRegistry::default(),
            stats: stats::Stats::default(),
            metrics: Metrics::new(workers + 1),
            started: Instant::now(),
            id: clients::random_hex_id(),
            listen_addr,
            refresh: Notify::new(),
            replicas_seen: Default::default(),
            wait_notes: wait::RedirectNotes::default(),
        }
    }

    /// Applies a (re)loaded configuration: the live settings that are not read from
    /// `config` on use are updated here.
    pub fn set_config(&self, config: ProxyConfig) {
        self.reply_cap.set(&config.limits);
        self.config.store(Arc::new(config));
    }

    /// The pool of a lane's worker.
    pub fn pool(&self, lane: Lane) -> &Pool {
        &self.pools[lane.worker.min(self.pools.len() - 1)]
    }

    /// Every pool (workers', then the control thread's).
    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    /// The lane of the control thread.
    pub fn control_lane(&self) -> Lane {
        Lane {
            worker: self.pools.len() - 1,
            conn: 0,
        }
    }

    /// A lane for a new client served by `worker`.
    pub fn assign_lane(&self, worker: usize) -> Lane {
        let lane = Lane { worker, conn: 0 };
        Lane {
            worker,
            conn: self.pool(lane).assign_conn(),
        }
    }

    /// Asks the refresher to reload the topology soon (after MOVED or a connection error).
    pub fn request_refresh(&self) {
        self.refresh.notify_one();
    }

    /// Applies a MOVED redirect to the slot map at once; a full refresh follows.
    pub fn apply_moved(&self, slot: u16, addr: &str) {
        let current = self.topology.load();
        if current.master_for(slot).map(|n| n.addr.as_str()) != Some(addr) {
            self.topology
                .store(Arc::new(current.with_moved(slot, addr)));
            stats::Stats::inc(&self.stats.topology_changes);
        }
        self.request_refresh();
    }

    /// Reloads the topology from the current masters and the seeds.
    pub async fn refresh_topology(&self) -> Result<(), String> {
        let config = self.config.load();
        // Masters first, then replicas (one of them may be the master now), then the seeds.
        let current = self.topology.load();
        let mut candidates = current.master_addrs();
        candidates.extend(current.replicas.iter().flatten().map(|r| r.addr.clone()));
        candidates.extend(config.seeds.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        candidates.retain(|addr| seen.insert(addr.clone()));
        let timeout = Duration::from_millis(config.timeouts.connect_ms.max(500));
        let mut fresh =
            topology::fetch(self.pool(self.control_lane()), &candidates, timeout).await?;
        let failovers = fresh
            .count_promotions(&mut self.replicas_seen.lock().unwrap_or_else(|p| p.into_inner()));
        let current = self.topology.load();
        if fresh.differs_from(&current) {
            fresh.version = current.version + 1;
            self.topology.store(Arc::new(fresh));
            stats::Stats::inc(&self.stats.topology_changes);
        }
        if failovers > 0 {
            tracing::info!("topology refresh: {failovers} shard(s) failed over to a replica");
            stats::Stats::add(&self.stats.failovers, failovers as u64);
        }
        stats::Stats::inc(&self.stats.topology_refreshes);
        Ok(())
    }

    /// Refreshes periodically and whenever asked, at most every 100 ms.
    async fn refresher(self: Arc<Self>) {
        loop {
            let interval =
                Duration::from_millis(self.config.load().backend.refresh_interval_ms.max(100));
            let _ = tokio::time::timeout(interval, self.refresh.notified()).await;
            if let Err(e) = self.refresh_topology().await {
                tracing::warn!("topology refresh failed: {e}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Binds, learns the topology, starts the worker threads and serves until the process ends.
/// Runs on the control runtime; `ready` is called with the bound address once clients can
/// connect.
///
/// Threading: the control thread accepts clients and hands each to a worker thread, round
/// robin. Each worker runs its own single-threaded runtime with its own backend connections,
/// so serving a request never crosses threads (no cross-thread wake-ups or locks on the
/// request path), in the manner of twemproxy's event loop, once per core.
pub async fn run(
    config: ProxyConfig,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<Arc<Proxy>> {
    let listener = TcpListener::bind(&config.listen).await?;
    let addr = listener.local_addr()?;
    let workers = match config.workers {
        // Half the cores: a proxy spends about as much CPU in the kernel's network stack as
        // in its own threads, so workers on every core starve that work (measured on 2
        // cores: 1 worker reached 0.91-0.96x twemproxy at -P 1, 2 workers 0.77x).
        0 => std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
        n => n,
    };
    let proxy = Arc::new(Proxy::new(config, addr, workers));
    let mut senders = Vec::with_capacity(workers);
    for index in 0..workers {
        senders.push(listener::spawn_worker(proxy.clone(), index)?);
    }
    // Start serving even if no seed answers yet: slots then answer CLUSTERDOWN until the
    // refresher reaches a node, which is what a client of a starting cluster expects.
    if let Err(e) = proxy.refresh_topology().await {
        tracing::warn!("initial topology not available yet: {e}");
    }
    tokio::spawn(proxy.clone().refresher());
    tokio::spawn(listener::accept_loop(proxy.clone(), listener, senders));
    ready(addr);
    Ok(proxy)
}
