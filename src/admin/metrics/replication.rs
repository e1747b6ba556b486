//! The high-availability families: failovers the proxy saw, and each replica's link to its
//! master and how far it lags.
//!
//! - `slotproxy_failovers_total`: shards whose slots a topology refresh found on a node that
//!   had been their master's replica (automatic or manual failover, as the proxy saw it).
//! - `slotproxy_replica_link_up{replica, master}`: 1 while the replica's INFO says
//!   `master_link_status:up`, else 0 (from the last poll).
//! - `slotproxy_replica_lag_bytes{replica, master}`: the master's `master_repl_offset`
//!   minus the replica's, both from the last poll (only while both answered).

use prometheus::proto::MetricFamily;

use super::family::Family;
use crate::proxy::stats::Stats;
use crate::proxy::Proxy;

pub fn families(proxy: &Proxy, out: &mut Vec<MetricFamily>) {
    let mut failovers = Family::counter(
        "slotproxy_failovers_total",
        "Shards whose slots moved to a node that was their master's replica (failovers seen by topology refreshes).",
    );
    failovers.add(&[], Stats::get(&proxy.stats.failovers) as f64);
    out.push(failovers.finish());
    let snapshot = proxy.metrics.snapshot();
    let mut link = Family::gauge(
        "slotproxy_replica_link_up",
        "1 while the replica's link to its master is up (master_link_status), else 0.",
    );
    let mut lag = Family::gauge(
        "slotproxy_replica_lag_bytes",
        "Replication stream bytes the replica is behind its master (master_repl_offset difference).",
    );
    for node in &snapshot.nodes {
        let Some((master, up)) = &node.master_link else {
            continue;
        };
        let labels = [("replica", node.addr.as_str()), ("master", master.as_str())];
        link.add(&labels, if *up { 1.0 } else { 0.0 });
        if let Some(master) = snapshot.nodes.iter().find(|n| &n.addr == master) {
            lag.add(
                &labels,
                master.repl_offset.saturating_sub(node.repl_offset) as f64,
            );
        }
    }
    out.extend([link.finish(), lag.finish()]);
}
