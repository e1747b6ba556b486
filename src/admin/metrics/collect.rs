//! Builds the metric families that are read from the proxy's own state at scrape time:
//! commands, clients, backends, redirects, topology, fan-out, slots and the polled cluster.

use std::collections::BTreeMap;

use prometheus::proto::MetricFamily;

use super::family::{bucket, Family};
use crate::backend::connection::ConnTotals;
use crate::cluster::CommandTable;
use crate::metrics::workers::{self, FANOUT_BOUNDS};
use crate::proxy::stats::Stats;
use crate::proxy::Proxy;

/// Every scrape-time family of `proxy`.
pub fn families(proxy: &Proxy) -> Vec<MetricFamily> {
    let mut out = Vec::new();
    commands(proxy, &mut out);
    clients(proxy, &mut out);
    backends(proxy, &mut out);
    cluster(proxy, &mut out);
    slots(proxy, &mut out);
    super::replication::families(proxy, &mut out);
    out.retain(|f| !f.get_metric().is_empty());
    out
}

fn commands(proxy: &Proxy, out: &mut Vec<MetricFamily>) {
    let totals = workers::command_totals(proxy.metrics.workers());
    let names: Vec<&str> = CommandTable::get()
        .all_specs()
        .map(|s| s.name.as_str())
        .chain(std::iter::once("unknown"))
        .collect();
    let mut calls = Family::counter(
        "slotproxy_commands_total",
        "Requests served, by command (subcommands as container|sub; unknown commands as 'unknown').",
    );
    let mut errors = Family::counter(
        "slotproxy_command_errors_total",
        "Requests answered with an error reply, by command.",
    );
    let mut latency = Family::histogram(
        "slotproxy_command_duration_seconds",
        "Time from a request being decoded to its reply being ready, by command.",
    );
    for (name, total) in names.iter().zip(&totals) {
        if total.calls == 0 {
            continue;
        }
        let labels = [("command", *name)];
        calls.add(&labels, total.calls as f64);
        errors.add(&labels, total.errors as f64);
        latency.add_latency(&labels, &total.latency);
    }
    out.extend([calls.finish(), errors.finish(), latency.finish()]);

    let (buckets, sum) = workers::fanout(proxy.metrics.workers());
    let mut cumulative = 0;
    let finite = FANOUT_BOUNDS
        .iter()
        .zip(&buckets)
        .map(|(&bound, &n)| {
            cumulative += n;
            bucket(bound as f64, cumulative)
        })
        .collect();
    let mut fanout = Family::histogram(
        "slotproxy_fanout_children",
        "Child requests per fanned-out request (multi-key commands split by slot, commands sent to every master).",
    );
    fanout.add_histogram(&[], finite, buckets.iter().sum(), sum as f64);
    out.push(fanout.finish());
}

fn single(out: &mut Vec<MetricFamily>, mut family: Family, value: f64) {
    family.add(&[], value);
    out.push(family.finish());
}

fn clients(proxy: &Proxy, out: &mut Vec<MetricFamily>) {
    let stats = &proxy.stats;
    let counter = |name: &str, help: &str| Family::counter(name, help);
    single(
        out,
        Family::gauge("slotproxy_client_connections", "Clients connected now."),
        proxy.clients.count() as f64,
    );
    single(
        out,
        counter(
            "slotproxy_client_connections_accepted_total",
            "Client connections accepted.",
        ),
        Stats::get(&stats.connections_accepted) as f64,
    );
    single(
        out,
        counter(
            "slotproxy_client_connections_rejected_total",
            "Client connections refused (limits.max_clients).",
        ),
        Stats::get(&stats.connections_rejected) as f64,
    );
    single(
        out,
        counter(
            "slotproxy_client_received_bytes_total",
            "Bytes read from clients.",
        ),
        Stats::get(&stats.bytes_in) as f64,
    );
    single(
        out,
        counter(
            "slotproxy_client_sent_bytes_total",
            "Bytes written to clients.",
        ),
        Stats::get(&stats.bytes_out) as f64,
    );
    let mut redirects = counter(
        "slotproxy_redirects_total",
        "Redirects followed by the proxy, by kind (tryagain includes CLUSTERDOWN retries).",
    );
    redirects
        .add(
            &[("kind", "moved")],
            Stats::get(&stats.redirects_moved) as f64,
        )
        .add(&[("kind", "ask")], Stats::get(&stats.redirects_ask) as f64)
        .add(
            &[("kind", "tryagain")],
            Stats::get(&stats.redirects_tryagain) as f64,
        );
    out.push(redirects.finish());
    single(
        out,
        counter(
            "slotproxy_topology_refreshes_total",
            "Slot map reloads from the nodes.",
        ),
        Stats::get(&stats.topology_refreshes) as f64,
    );
    single(
        out,
        counter(
            "slotproxy_topology_changes_total",
            "Slot map changes (refreshes that changed it, and MOVED redirects applied).",
        ),
        Stats::get(&stats.topology_changes) as f64,
    );
    single(
        out,
        Family::gauge(
            "slotproxy_uptime_seconds",
            "Seconds since the proxy started.",
        ),
        proxy.started.elapsed().as_secs_f64(),
    );
}

fn backends(proxy: &Proxy, out: &mut Vec<MetricFamily>) {
    let snapshot = proxy.metrics.snapshot();
    let mut nodes: BTreeMap<String, ConnTotals> = BTreeMap::new();
    for addr in proxy.topology.load().master_addrs() {
        nodes.entry(addr).or_default();
    }
    for (addr, _) in &snapshot.up {
        nodes.entry(addr.clone()).or_default();
    }
    let mut shared: BTreeMap<String, usize> = BTreeMap::new();
    for pool in proxy.pools() {
        for (addr, totals) in pool.node_totals() {
            nodes.entry(addr).or_default().merge(&totals);
        }
        for (addr, n) in pool.connection_counts() {
            *shared.entry(addr).or_default() += n;
        }
    }
    let dedicated = proxy.dedicated.open_per_node();
    let timeouts = proxy.metrics.timeouts();
    let mut up = Family::gauge(
        "slotproxy_backend_up",
        "1 if the master answered the last poll, else 0 (masters the cluster knows, failed ones included).",
    );
    let mut connections = Family::gauge(
        "slotproxy_backend_connections",
        "Open backend connections, by node and kind (shared multiplexed, dedicated).",
    );
    let mut in_flight = Family::gauge(
        "slotproxy_backend_requests_in_flight",
        "Requests written to a node and not answered yet.",
    );
    let mut requests = Family::counter(
        "slotproxy_backend_requests_total",
        "Requests sent to a node on shared connections.",
    );
    let mut errors = Family::counter(
        "slotproxy_backend_errors_total",
        "Requests to a node that failed without a reply (connect failed, connection lost, node in backoff).",
    );
    let mut timeout_family = Family::counter(
        "slotproxy_backend_timeouts_total",
        "Requests whose reply did not come within timeouts.operation_ms.",
    );
    let mut refused = Family::counter(
        "slotproxy_backend_replies_refused_total",
        "Replies over limits.max_reply_bytes or limits.max_reply_elements; each closed its connection.",
    );
    let mut latency = Family::histogram(
        "slotproxy_backend_duration_seconds",
        "Time from a request being written to a node to its reply, by node.",
    );
    for (addr, totals) in &nodes {
        let node = [("node", addr.as_str())];
        // Only nodes the cluster still knows: a removed node must not look "down".
        if let Some((_, ok)) = snapshot.up.iter().find(|(a, _)| a == addr) {
            up.add(&node, if *ok { 1.0 } else { 0.0 });
        }
        let count = |map: &BTreeMap<String, usize>| map.get(addr).copied().unwrap_or(0) as f64;
        connections.add(&[("node", addr), ("kind", "shared")], count(&shared));
        connections.add(
            &[("node", addr), ("kind", "dedicated")],
            dedicated.get(addr).copied().unwrap_or(0) as f64,
        );
        in_flight.add(&node, totals.in_flight as f64);
        requests.add(&node, totals.requests as f64);
        errors.add(&node, totals.errors as f64);
        refused.add(&node, totals.refused as f64);
        timeout_family.add(&node, timeouts.get(addr).copied().unwrap_or(0) as f64);
        latency.add_latency(&node, &totals.latency);
    }
    for (addr, n) in &timeouts {
        if !nodes.contains_key(addr) {
            timeout_family.add(&[("node", addr)], *n as f64);
        }
    }
    out.extend([
        up.finish(),
        connections.finish(),
        in_flight.finish(),
        requests.finish(),
        errors.finish(),
        refused.finish(),
        timeout_family.finish(),
        latency.finish(),
    ]);
}

fn cluster(proxy: &Proxy, out: &mut Vec<MetricFamily>) {
    let snapshot = proxy.metrics.snapshot();
    if let Some(epoch) = snapshot.epoch() {
        single(
            out,
            Family::gauge(
                "slotproxy_cluster_config_epoch",
                "Highest cluster_current_epoch the masters reported at the last poll.",
            ),
            epoch as f64,
        );
    }
    let mut memory = Family::gauge(
        "slotproxy_node_used_memory_bytes",
        "used_memory from the node's INFO.",
    );
    let mut keys = Family::gauge("slotproxy_node_keys", "Keys on the node (all databases).");
    let mut ops = Family::gauge(
        "slotproxy_node_ops_per_second",
        "instantaneous_ops_per_sec from the node's INFO.",
    );
    let mut clients = Family::gauge(
        "slotproxy_node_connected_clients",
        "connected_clients from the node's INFO.",
    );
    let mut role = Family::gauge(
        "slotproxy_node_role",
        "1 for the node's role (master or slave) at the last poll.",
    );
    let mut offset = Family::gauge(
        "slotproxy_node_replication_offset",
        "master_repl_offset from the node's INFO (bytes of replication stream).",
    );
    for node in &snapshot.nodes {
        let labels = [("node", node.addr.as_str())];
        memory.add(&labels, node.used_memory as f64);
        keys.add(&labels, node.keys as f64);
        ops.add(&labels, node.ops_per_sec as f64);
        clients.add(&labels, node.connected_clients as f64);
        role.add(&[("node", &node.addr), ("role", &node.role)], 1.0);
        offset.add(&labels, node.repl_offset as f64);
    }
    out.extend([
        memory.finish(),
        keys.finish(),
        ops.finish(),
        clients.finish(),
        role.finish(),
        offset.finish(),
    ]);
}

fn slots(proxy: &Proxy, out: &mut Vec<MetricFamily>) {
    let top = proxy.config.load().admin.top_slots;
    let topology = proxy.topology.load();
    let owner = |slot: u16| {
        topology
            .master_for(slot)
            .map_or_else(String::new, |n| n.addr.clone())
    };
    let mut ops = Family::counter(
        "slotproxy_slot_ops_total",
        "Requests routed to a slot through this proxy, for the busiest slots only.",
    );
    let counts = workers::slot_ops(proxy.metrics.workers());
    for (slot, n) in workers::top_n(&counts, top) {
        let slot = slot as u16;
        ops.add(
            &[("slot", &slot.to_string()), ("node", &owner(slot))],
            n as f64,
        );
    }
    out.push(ops.finish());
    let snapshot = proxy.metrics.snapshot();
    let mut keys = Family::gauge(
        "slotproxy_slot_keys",
        "Keys in a slot (CLUSTER COUNTKEYSINSLOT), for the fullest slots only.",
    );
    for (slot, node, n) in &snapshot.slot_keys {
        keys.add(&[("slot", &slot.to_string()), ("node", node)], *n as f64);
    }
    out.push(keys.finish());
}
