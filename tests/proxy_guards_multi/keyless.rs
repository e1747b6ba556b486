//! Keyless commands that describe one server: merged over every master, or refused.

use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

use crate::{eventually, ok, text};

pub fn one_node_commands_are_refused(port: u16) {
    let mut c = RawClient::connect(port);
    for command in [
        &["ROLE"][..],
        &["MEMORY", "STATS"],
        &["MEMORY", "DOCTOR"],
        &["MEMORY", "MALLOC-STATS"],
        &["LATENCY", "LATEST"],
        &["LATENCY", "DOCTOR"],
        &["FUNCTION", "STATS"],
        &["DEBUG", "SLEEP", "0"],
        &["CONFIG", "REWRITE"],
    ] {
        let reply = c.call(command);
        let name = command[..command.len().min(2)].join("|").to_lowercase();
        let name = if command.len() > 1 && command[0] != "DEBUG" {
            name
        } else {
            command[0].to_lowercase()
        };
        assert_eq!(
            reply,
            Frame::Error(format!(
                "ERR slotproxy: '{name}' describes a single node, not the cluster behind the proxy; ask the nodes directly"
            ).into()),
            "{command:?}"
        );
    }
    // MEMORY USAGE has a key: its slot's master answers.
    assert_eq!(c.call(&["SET", "usage", "v"]), ok());
    assert!(matches!(c.call(&["MEMORY", "USAGE", "usage"]), Frame::Integer(n) if n > 0));
}

/// Shard channels live on their slot's master: SHARDNUMSUB sums, SHARDCHANNELS unites; the
/// replies equal a standalone server's with the same subscribers.
pub fn shard_pubsub_counts_are_summed(proxy_port: u16, redis_port: u16) {
    let channels = ["chan-a", "chan-b", "chan-c", "chan-d"];
    let subscribe = |port: u16, chans: &[&str]| {
        let mut c = RawClient::connect(port);
        let mut args = vec!["SSUBSCRIBE"];
        args.extend_from_slice(chans);
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        c.send(&refs);
        for _ in chans {
            let (frame, _) = c.read_reply();
            assert!(!frame.is_error(), "{frame:?}");
        }
        c
    };
    // Each SSUBSCRIBE of several channels needs one slot: one client per channel, two on a.
    let mut held = Vec::new();
    for port in [proxy_port, redis_port] {
        for chan in [channels[0], channels[0], channels[1], channels[2]] {
            held.push(subscribe(port, &[chan]));
        }
    }
    let mut proxy = RawClient::connect(proxy_port);
    let mut redis = RawClient::connect(redis_port);
    let numsub = [
        "PUBSUB",
        "SHARDNUMSUB",
        "chan-a",
        "chan-b",
        "chan-c",
        "chan-d",
    ];
    assert_eq!(proxy.call(&numsub), redis.call(&numsub));
    let sorted = |frame: Frame| {
        let mut items: Vec<String> = frame.as_array().unwrap_or(&[]).iter().map(text).collect();
        items.sort();
        items
    };
    // RESP3: Redis 7.0 answers a flat array there too.
    let mut proxy3 = RawClient::connect(proxy_port);
    let mut redis3 = RawClient::connect(redis_port);
    assert!(!proxy3.call(&["HELLO", "3"]).is_error());
    assert!(!redis3.call(&["HELLO", "3"]).is_error());
    let reply = proxy3.call(&numsub);
    assert_eq!(reply, redis3.call(&numsub));
    let list = ["PUBSUB", "SHARDCHANNELS"];
    assert_eq!(sorted(proxy.call(&list)), sorted(redis.call(&list)));
    assert_eq!(sorted(proxy.call(&list)).len(), 3);
    drop(held);
}

fn direct_len(cluster: &Cluster) -> i64 {
    cluster
        .nodes
        .iter()
        .map(|n| {
            RawClient::connect(n.port)
                .call(&["SLOWLOG", "LEN"])
                .as_integer()
                .unwrap_or(0)
        })
        .sum()
}

/// SLOWLOG LEN is the nodes' sum, GET every node's entries newest first, RESET everywhere.
/// Storage-nodes have no slow log: their own unknown-command error comes through.
pub fn slowlog_is_merged(cluster: &Cluster, port: u16) {
    let mut c = RawClient::connect(port);
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        ok()
    );
    assert_eq!(c.call(&["SLOWLOG", "RESET"]), ok());
    for i in 0..30 {
        assert_eq!(c.call(&["SET", &format!("slow{i}"), "v"]), ok());
    }
    // Logging off again, so the figures stand still while they are compared.
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]),
        ok()
    );
    let total = direct_len(cluster);
    assert!(total >= 30, "{total}");
    assert_eq!(c.call(&["SLOWLOG", "LEN"]), Frame::Integer(total));
    let all = c.call(&["SLOWLOG", "GET", "-1"]);
    let entries = all.as_array().expect("array");
    assert_eq!(entries.len() as i64, total);
    let times: Vec<i64> = entries
        .iter()
        .map(|e| e.as_array().and_then(|f| f[1].as_integer()).unwrap_or(-1))
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    // Newest first within each node too (entries of one second tie on time): a node's
    // entries, told apart by the proxy connection they name, come with falling ids.
    let mut last_id: std::collections::HashMap<String, i64> = Default::default();
    for entry in entries {
        let fields = entry.as_array().expect("entry");
        let id = fields[0].as_integer().expect("id");
        let previous = last_id.insert(text(&fields[4]), id);
        assert!(previous.is_none_or(|p| p > id), "{entries:?}");
    }
    assert_eq!(
        c.call(&["SLOWLOG", "GET", "5"])
            .as_array()
            .map(<[Frame]>::len),
        Some(5)
    );
    assert_eq!(
        c.call(&["SLOWLOG", "GET"]).as_array().map(<[Frame]>::len),
        Some(10)
    );
    assert_eq!(c.call(&["SLOWLOG", "RESET"]), ok());
    assert_eq!(direct_len(cluster), 0);
}

pub fn everywhere_and_scalar_merges(cluster: &Cluster, port: u16) {
    let mut c = RawClient::connect(port);
    // MEMORY PURGE on every master.
    assert_eq!(c.call(&["MEMORY", "PURGE"]), ok());
    // LASTSAVE: the oldest master's.
    let lastsave = c.call(&["LASTSAVE"]);
    let oldest = cluster
        .nodes
        .iter()
        .filter_map(|n| RawClient::connect(n.port).call(&["LASTSAVE"]).as_integer())
        .min()
        .expect("LASTSAVE");
    assert_eq!(lastsave, Frame::Integer(oldest));
    // TIME: a [seconds, microseconds] pair no earlier than a node's clock read before.
    let before = RawClient::connect(cluster.nodes[0].port).call(&["TIME"]);
    let seconds = |f: &Frame| {
        f.as_array()
            .and_then(|a| a.first())
            .map(text)
            .and_then(|s| s.parse::<i64>().ok())
            .expect("TIME seconds")
    };
    let time = c.call(&["TIME"]);
    assert!(seconds(&time) >= seconds(&before), "{time:?} {before:?}");
    // FUNCTION LIST: the library loaded through the proxy is on every master, listed once.
    let library =
        "#!lua name=guardlib\nredis.register_function('guardfn', function() return 1 end)";
    assert_eq!(
        c.call(&["FUNCTION", "LOAD", "REPLACE", library]),
        Frame::bulk("guardlib")
    );
    let list = c.call(&["FUNCTION", "LIST", "LIBRARYNAME", "guardlib"]);
    assert_eq!(list.as_array().map(<[Frame]>::len), Some(1), "{list:?}");
    // A library on one master only: the masters disagree, and the proxy says so.
    let mut one = RawClient::connect(cluster.nodes[0].port);
    assert_eq!(one.call(&["FUNCTION", "DELETE", "guardlib"]), ok());
    let reply = c.call(&["FUNCTION", "LIST"]);
    assert_eq!(
        reply,
        Frame::Error(
            "ERR slotproxy: the masters answer FUNCTION LIST differently; ask the nodes directly"
                .into()
        )
    );
    assert_eq!(c.call(&["FUNCTION", "FLUSH"]), ok());
    assert_eq!(c.call(&["FUNCTION", "LIST"]), Frame::Array(vec![]));
}

fn cluster_info(c: &mut RawClient) -> String {
    text(&c.call(&["CLUSTER", "INFO"]))
}

/// CLUSTER INFO says ok while every slot's master answers, fail once one is gone.
pub fn cluster_info_follows_the_cluster(cluster: &mut Cluster, port: u16) {
    let mut c = RawClient::connect(port);
    let info = cluster_info(&mut c);
    assert!(info.contains("cluster_state:ok\r\n"), "{info}");
    assert!(info.contains("cluster_slots_ok:16384\r\n"), "{info}");
    cluster.nodes[2].kill();
    eventually(Duration::from_secs(30), "cluster_state:fail", || {
        let info = cluster_info(&mut c);
        info.contains("cluster_state:fail\r\n") && !info.contains("cluster_slots_fail:0\r\n")
    });
}
