//! Running a job: recover open slots, plan, move slot after slot; and the two operations
//! that are not slot moves, adding a node (CLUSTER MEET) and forgetting one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::proxy::Proxy;

use super::link::{cmd, Links};
use super::migrate::{move_slots, Settings};
use super::plan::{self, Move};
use super::recover::finish_open_slots;
use super::view::{nodes_of, ClusterView, NodeInfo};
use super::{Job, Jobs, Operation};

/// MIGRATEs pipelined per write to the source.
const MIGRATE_DEPTH: usize = 4;
/// Slots opened, migrated and assigned together (consecutive moves between the same two
/// nodes). Small, so few slots are open at once and progress stays fine-grained.
const GROUP: usize = 8;
/// How long a new node may take to be known by every node (and to know them).
const MEET_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the other nodes may take to drop a forgotten node.
const FORGET_TIMEOUT: Duration = Duration::from_secs(15);
/// Interval between checks while waiting for the cluster to agree.
const POLL: Duration = Duration::from_millis(100);

/// The job's connections: dedicated, from the jobs' own permits.
pub fn links_for(proxy: &Proxy, jobs: &Jobs) -> Links {
    let config = proxy.config.load();
    Links::new(
        jobs.permits.clone(),
        Duration::from_millis(config.timeouts.connect_ms.max(100)),
        // Long enough for a pipeline of MIGRATEs, each bounded by its own timeout.
        Duration::from_millis(config.admin.migrate_timeout_ms * (MIGRATE_DEPTH as u64 + 1) + 5000),
    )
}

/// Nodes to learn the cluster from: the masters the proxy knows, then its seeds.
pub fn candidates(proxy: &Proxy) -> Vec<String> {
    let mut candidates = proxy.topology.load().master_addrs();
    for seed in &proxy.config.load().seeds {
        if !candidates.contains(seed) {
            candidates.push(seed.clone());
        }
    }
    candidates
}

/// Runs a job to the end.
pub async fn run(proxy: &Proxy, jobs: &Jobs, job: &Job) -> Result<(), String> {
    let config = proxy.config.load();
    let settings = Settings {
        batch: job
            .options
            .batch
            .unwrap_or(config.admin.migrate_batch)
            .max(1),
        depth: MIGRATE_DEPTH,
        timeout_ms: config.admin.migrate_timeout_ms,
        replace: job.options.replace,
    };
    let mut links = links_for(proxy, jobs);
    let candidates = candidates(proxy);
    let mut view = ClusterView::load(&mut links, &candidates).await?;
    if finish_open_slots(&mut links, &view, &settings, job).await? {
        view = ClusterView::load(&mut links, &candidates).await?;
    }
    let moves = match &job.operation {
        Operation::Reshard {
            from,
            to,
            slots,
            count,
        } => plan::reshard(&view, from, to, slots.as_deref(), *count)?,
        Operation::Rebalance { by_keys, threshold } => {
            rebalance(&mut links, &view, *by_keys, *threshold).await?
        }
        Operation::AddNode { addr, rebalance } => {
            add_node(&mut links, &view, addr).await?;
            if !rebalance {
                return Ok(());
            }
            view = ClusterView::load(&mut links, &candidates).await?;
            plan::rebalance_slots(&view.live_masters(), 0.0)
        }
        Operation::Drain { id } => plan::drain(&view, id)?,
        Operation::Forget { id } => return forget(&mut links, &view, id).await,
    };
    if moves.is_empty() {
        job.update(|p| p.note = Some("nothing to move".into()));
    }
    execute(proxy, &mut links, &view, &moves, &settings, job).await
}

/// Moves the planned slots, in groups of consecutive moves between the same two nodes.
async fn execute(
    proxy: &Proxy,
    links: &mut Links,
    view: &ClusterView,
    moves: &[Move],
    settings: &Settings,
    job: &Job,
) -> Result<(), String> {
    job.update(|p| p.slots_total = moves.len() as u64);
    let others = view.master_addrs_except(&[]);
    let mut rest = moves;
    let mut groups = 0usize;
    while let Some(first) = rest.first() {
        let len = rest
            .iter()
            .take(GROUP)
            .take_while(|m| m.from == first.from && m.to == first.to)
            .count();
        let (group, tail) = rest.split_at(len);
        rest = tail;
        let (Some(source), Some(target)) = (view.by_id(&first.from), view.by_id(&first.to)) else {
            return Err(format!("slot {}: node left the cluster", first.slot));
        };
        let slots: Vec<u16> = group.iter().map(|m| m.slot).collect();
        move_slots(links, &slots, source, target, &others, settings, job)
            .await
            .map_err(|e| format!("moving slots {slots:?}: {e}"))?;
        job.update(|p| p.slots_done += slots.len() as u64);
        groups += 1;
        // Let the proxy learn the new owners now and then (MOVED teaches it anyway).
        if groups.is_multiple_of(8) {
            proxy.request_refresh();
        }
    }
    Ok(())
}

/// Plans a rebalance; weighting by keys asks every master how many keys each of its slots
/// holds (pipelined CLUSTER COUNTKEYSINSLOT).
async fn rebalance(
    links: &mut Links,
    view: &ClusterView,
    by_keys: bool,
    threshold: f64,
) -> Result<Vec<Move>, String> {
    let masters = view.live_masters();
    if !by_keys {
        return Ok(plan::rebalance_slots(&masters, threshold));
    }
    let mut weights = HashMap::new();
    for master in &masters {
        for chunk in master.slots.chunks(1024) {
            let commands: Vec<_> = chunk
                .iter()
                .map(|s| cmd(&["CLUSTER", "COUNTKEYSINSLOT", &s.to_string()]))
                .collect();
            let replies = links.pipeline(&master.addr, &commands).await?;
            for (slot, reply) in chunk.iter().zip(replies) {
                weights.insert(*slot, reply.as_integer().unwrap_or(0).max(0) as u64);
            }
        }
    }
    Ok(plan::rebalance_keys(&masters, &weights, threshold))
}

/// The id a node gives itself.
pub async fn own_id(links: &mut Links, addr: &str) -> Result<String, String> {
    nodes_of(links, addr)
        .await?
        .into_iter()
        .find(|n| n.flags.iter().any(|f| f == "myself"))
        .map(|n| n.id)
        .ok_or_else(|| format!("{addr} does not list itself in CLUSTER NODES"))
}

/// CLUSTER MEET from an existing master, then waits until every node knows the new one and
/// it knows them all (so SETSLOT NODE naming it is accepted everywhere).
pub async fn add_node(links: &mut Links, view: &ClusterView, addr: &str) -> Result<(), String> {
    let new_id = own_id(links, addr).await?;
    let resolved = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr} resolves to no address"))?;
    let introducer = view
        .live_masters()
        .first()
        .map(|n| n.addr.clone())
        .ok_or("no live master to introduce the node")?;
    links
        .ok(
            &introducer,
            cmd(&[
                "CLUSTER".to_string(),
                "MEET".to_string(),
                resolved.ip().to_string(),
                resolved.port().to_string(),
            ]),
        )
        .await?;
    let members: Vec<(String, String)> = view
        .nodes
        .iter()
        .filter(|n| !n.is_down())
        .map(|n| (n.id.clone(), n.addr.clone()))
        .collect();
    let deadline = Instant::now() + MEET_TIMEOUT;
    loop {
        let mut agreed = true;
        for (_, member_addr) in &members {
            let known = nodes_of(links, member_addr).await.unwrap_or_default();
            agreed &= known.iter().any(|n| n.id == new_id && !n.is_down());
        }
        let seen = nodes_of(links, addr).await.unwrap_or_default();
        agreed &= members
            .iter()
            .all(|(id, _)| seen.iter().any(|n| &n.id == id && !n.is_down()));
        // It must also have learned who serves every slot, or it refuses the keys MIGRATE
        // sends it (CLUSTERDOWN) until gossip catches up.
        let served = |nodes: &[NodeInfo]| nodes.iter().map(|n| n.slots.len()).sum::<usize>();
        agreed &= served(&seen) == served(&view.nodes);
        if agreed && cluster_ok(links, &introducer).await {
            agreed &= cluster_ok(links, addr).await;
        }
        if agreed {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{addr} ({new_id}) was not known by every node within {MEET_TIMEOUT:?}"
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether a node says `cluster_state:ok`.
async fn cluster_ok(links: &mut Links, addr: &str) -> bool {
    match links.call(addr, cmd(&["CLUSTER", "INFO"])).await {
        Ok(frame) => frame
            .as_bytes()
            .is_some_and(|text| String::from_utf8_lossy(text).contains("cluster_state:ok")),
        Err(_) => false,
    }
}

/// CLUSTER FORGET on every other node, CLUSTER RESET on the node itself, then waits until
/// no node lists it.
async fn forget(links: &mut Links, view: &ClusterView, id: &str) -> Result<(), String> {
    let node = view
        .by_id(id)
        .ok_or_else(|| format!("node {id} is not in the cluster"))?;
    if !node.slots.is_empty() {
        return Err(format!("node {id} still owns {} slots", node.slots.len()));
    }
    let others: Vec<String> = view
        .nodes
        .iter()
        .filter(|n| n.id != id && !n.is_down())
        .map(|n| n.addr.clone())
        .collect();
    links
        .ok_on_all(&others, &[cmd(&["CLUSTER", "FORGET", id])])
        .await?;
    // The node may already be gone; what matters is that the others forgot it.
    if let Err(e) = links.ok(&node.addr, cmd(&["CLUSTER", "RESET"])).await {
        tracing::warn!("CLUSTER RESET on the forgotten node {}: {e}", node.addr);
    }
    let deadline = Instant::now() + FORGET_TIMEOUT;
    loop {
        let mut still_known = false;
        for addr in &others {
            let known = nodes_of(links, addr).await.unwrap_or_default();
            still_known |= known.iter().any(|n| n.id == id);
        }
        if !still_known {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("some nodes still list {id} after CLUSTER FORGET"));
        }
        tokio::time::sleep(POLL).await;
    }
}
