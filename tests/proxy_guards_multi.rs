//! The proxy's guards inside MULTI, keyless commands that describe one server, CONFIG, SCRIPT
//! KILL and CLUSTER INFO: end to end through slotproxy in front of a real Redis Cluster and a
//! storage-node cluster, compared with a standalone redis-server where the proxy means to
//! answer as one server does.

use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::cluster::start_proxy_with_config;
use test_harness::{on_both_backends, Cluster, ServerProcess};

mod proxy_guards_multi {
    pub mod config;
    pub mod keyless;
    pub mod multi;
    pub mod script_kill;
}

/// A proxy in front of `cluster`, configured with `extra` YAML (deny list, users).
pub fn start_proxy_with(cluster: &Cluster, extra: &str) -> ServerProcess {
    start_proxy_with_config(&cluster.seeds(), "  poll_interval_ms: 200\n", extra).0
}

/// Polls `check` until it holds, for at most `limit`.
pub fn eventually(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn ok() -> Frame {
    Frame::Simple("OK".into())
}

pub fn queued() -> Frame {
    Frame::Simple("QUEUED".into())
}

pub fn text(frame: &Frame) -> String {
    match frame {
        Frame::Error(e) | Frame::Simple(e) | Frame::Bulk(e) => {
            String::from_utf8_lossy(e).into_owned()
        }
        other => format!("{other:?}"),
    }
}

on_both_backends!(
    every_route_class_inside_multi,
    start = |c: &Cluster| start_proxy_with(c, "deny_commands: [GETSET]\n"),
    |_: &mut Cluster, proxy: &ServerProcess| {
        let standalone = ServerProcess::redis_server(&[]);
        proxy_guards_multi::multi::queued_like_one_server(proxy.port, standalone.port);
        proxy_guards_multi::multi::refused_at_queue_time(proxy.port);
        proxy_guards_multi::multi::deny_list_holds_inside_multi(proxy.port);
    }
);

on_both_backends!(
    keyless_commands_merge_or_refuse,
    start = |c: &Cluster| start_proxy_with(c, ""),
    |cluster: &mut Cluster, proxy: &ServerProcess| {
        let standalone = ServerProcess::redis_server(&[]);
        proxy_guards_multi::keyless::one_node_commands_are_refused(proxy.port);
        proxy_guards_multi::keyless::shard_pubsub_counts_are_summed(proxy.port, standalone.port);
        proxy_guards_multi::keyless::slowlog_is_merged(cluster, proxy.port);
        proxy_guards_multi::keyless::everywhere_and_scalar_merges(cluster, proxy.port);
        proxy_guards_multi::config::config_reaches_every_node(cluster, proxy, standalone.port);
        proxy_guards_multi::keyless::cluster_info_follows_the_cluster(cluster, proxy.port);
    }
);

on_both_backends!(
    script_kill_reaches_the_busy_node,
    start = |c: &Cluster| start_proxy_with(
        c,
        "backend:\n  connections_per_node: 2\ntimeouts:\n  operation_ms: 60000\n"
    ),
    |_: &mut Cluster, proxy: &ServerProcess| {
        proxy_guards_multi::script_kill::kill_through_the_proxy(proxy.port);
    }
);

/// Redis Cluster only: storage-nodes have no CLUSTER REPLICATE (`ERR unknown subcommand`);
/// the proxy side is the same for both backends.
#[test]
fn config_set_reaches_replicas() {
    let cluster = Cluster::redis(3);
    let proxy = start_proxy_with(&cluster, "");
    proxy_guards_multi::config::config_set_reaches_replicas(&cluster, proxy.port);
}

#[test]
fn config_set_needs_the_admin_permission() {
    let cluster = Cluster::redis(3);
    let users = "users:\n  - { name: ops, password: opspass, admin: true }\n  - { name: app, password: apppass }\n";
    let proxy = start_proxy_with(&cluster, users);
    proxy_guards_multi::config::admin_permission(proxy.port);
}
