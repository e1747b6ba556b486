//! CONFIG GET / SET / RESETSTAT through the proxy.

use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{http, Cluster, RawClient, ServerProcess};

use crate::{eventually, ok, text};

fn node_value(port: u16, name: &str) -> String {
    let reply = RawClient::connect(port).call(&["CONFIG", "GET", name]);
    reply
        .as_array()
        .and_then(|a| a.get(1))
        .map(text)
        .unwrap_or_default()
}

fn mismatch_metric(admin_port: u16, name: &str) -> Option<String> {
    let body = http::get(admin_port, "/metrics").body;
    let prefix = format!("slotproxy_config_mismatch{{name=\"{name}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
}

pub fn config_reaches_every_node(cluster: &Cluster, proxy: &ServerProcess, redis_port: u16) {
    let mut c = RawClient::connect(proxy.port);
    let mut redis = RawClient::connect(redis_port);
    // SET reaches every node; GET answers the nodes' value.
    let set = ["CONFIG", "SET", "loglevel", "verbose"];
    assert_eq!(c.call(&set), ok());
    for node in &cluster.nodes {
        assert_eq!(node_value(node.port, "loglevel"), "verbose");
    }
    let get = ["CONFIG", "GET", "loglevel"];
    assert_eq!(
        c.call(&get),
        Frame::Array(vec![Frame::bulk("loglevel"), Frame::bulk("verbose")])
    );
    // A refused value: the node's error, worded as one server words it.
    let bad = ["CONFIG", "SET", "loglevel", "nonsense"];
    assert_eq!(c.call(&bad), redis.call(&bad));
    // The proxy's own settings: answered and set by the proxy, as a server's are.
    for bad in [
        &["CONFIG", "SET", "maxclients", "abc"][..],
        &["CONFIG", "SET", "maxclients", "0"],
        &["CONFIG", "SET", "timeout", "-1"],
        &["CONFIG", "SET", "databases", "3"],
        &["CONFIG", "SET", "timeout", "1", "timeout", "2"],
        &["CONFIG", "SET", "timeout"],
    ] {
        assert_eq!(c.call(bad), redis.call(bad), "{bad:?}");
    }
    assert_eq!(c.call(&["CONFIG", "SET", "maxclients", "777"]), ok());
    assert_eq!(
        c.call(&["CONFIG", "GET", "maxclients"]),
        Frame::Array(vec![Frame::bulk("maxclients"), Frame::bulk("777")])
    );
    assert_ne!(node_value(cluster.nodes[0].port, "maxclients"), "777");
    assert_eq!(
        c.call(&["CONFIG", "GET", "databases"]),
        Frame::Array(vec![Frame::bulk("databases"), Frame::bulk("1")])
    );
    // A setting that differs between nodes: the first master's value, logged and counted.
    let admin = proxy.admin_port().expect("admin port");
    assert_eq!(mismatch_metric(admin, "loglevel").as_deref(), Some("0"));
    let mut last = RawClient::connect(cluster.nodes[2].port);
    assert_eq!(last.call(&["CONFIG", "SET", "loglevel", "warning"]), ok());
    let reply = c.call(&get);
    assert_eq!(reply.as_array().map(<[Frame]>::len), Some(2), "{reply:?}");
    assert_eq!(mismatch_metric(admin, "loglevel").as_deref(), Some("1"));
    // The log line reaches the file on the proxy's own time.
    eventually(Duration::from_secs(10), "the mismatch in the log", || {
        proxy.log().contains("nodes disagree on 'loglevel'")
    });
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", "notice"]), ok());
    c.call(&get);
    assert_eq!(mismatch_metric(admin, "loglevel").as_deref(), Some("0"));
    // RESETSTAT: every node's counters restart. Keyspace misses, because the proxy's
    // background poll of the nodes adds to their command counts but reads no key.
    let misses = |port: u16| -> i64 {
        let info = text(&RawClient::connect(port).call(&["INFO", "stats"]));
        info.lines()
            .find_map(|l| l.strip_prefix("keyspace_misses:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("keyspace_misses")
    };
    for i in 0..60 {
        assert_eq!(c.call(&["GET", &format!("missing{i}")]), Frame::Null);
    }
    let before: i64 = cluster.nodes.iter().map(|n| misses(n.port)).sum();
    assert!(before >= 60, "{before}");
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), ok());
    for node in &cluster.nodes {
        assert_eq!(misses(node.port), 0);
    }
    // The proxy's own counters restart too (INFO stats; no client connected since).
    let info = text(&c.call(&["INFO", "stats"]));
    assert!(info.contains("total_connections_received:0\r\n"), "{info}");
    // Commands count from the reset (the 60 GETs before it are gone; RESETSTAT itself may
    // count, as in Redis), and so does commandstats.
    let processed: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_commands_processed");
    assert!(processed <= 2, "{info}");
    let commandstats = text(&c.call(&["INFO", "commandstats"]));
    assert!(!commandstats.contains("cmdstat_get:"), "{commandstats}");
}

pub fn admin_permission(port: u16) {
    let mut app = RawClient::connect(port);
    assert_eq!(app.call(&["AUTH", "app", "apppass"]), ok());
    assert_eq!(
        app.call(&["CONFIG", "SET", "loglevel", "notice"]),
        Frame::Error("NOPERM this user has no permissions to run the 'config|set' command".into())
    );
    assert_eq!(
        app.call(&["CONFIG", "RESETSTAT"]),
        Frame::Error(
            "NOPERM this user has no permissions to run the 'config|resetstat' command".into()
        )
    );
    assert!(!app.call(&["CONFIG", "GET", "loglevel"]).is_error());
    let mut ops = RawClient::connect(port);
    assert_eq!(ops.call(&["AUTH", "ops", "opspass"]), ok());
    assert_eq!(ops.call(&["CONFIG", "SET", "loglevel", "notice"]), ok());
    assert_eq!(ops.call(&["CONFIG", "RESETSTAT"]), ok());
}

/// CONFIG SET reaches replicas too: a spare node made a replica of the first master.
pub fn config_set_reaches_replicas(cluster: &Cluster, port: u16) {
    let spare = cluster.spare_node();
    let master_port = cluster.nodes[0].port;
    let master_id = text(&RawClient::connect(master_port).call(&["CLUSTER", "MYID"]));
    let mut replica = RawClient::connect(spare.port);
    assert_eq!(
        replica.call(&["CLUSTER", "MEET", "127.0.0.1", &master_port.to_string()]),
        ok()
    );
    eventually(Duration::from_secs(60), "the replica to follow", || {
        replica.call(&["CLUSTER", "REPLICATE", &master_id]) == ok()
    });
    let spare_addr = format!("127.0.0.1:{}", spare.port);
    eventually(
        Duration::from_secs(60),
        "the master to list the replica",
        || {
            let nodes = text(&RawClient::connect(master_port).call(&["CLUSTER", "NODES"]));
            nodes
                .lines()
                .any(|l| l.contains(&spare_addr) && l.contains("slave"))
        },
    );
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", "verbose"]), ok());
    assert_eq!(node_value(spare.port, "loglevel"), "verbose");
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", "notice"]), ok());
    assert_eq!(node_value(spare.port, "loglevel"), "notice");
}
