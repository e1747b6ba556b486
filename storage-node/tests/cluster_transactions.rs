//! MULTI/EXEC in cluster mode: every queued command is checked when queued, and EXEC checks
//! them all together (one slot, served here); a refused EXEC discards the transaction.
//! Compared byte for byte with a real Redis Cluster.

use slotproxy::cluster::key_slot;
use test_harness::{Cluster, RawClient};

#[test]
fn transactions_follow_redis_cluster_rules() {
    let ours = Cluster::storage_nodes(3);
    let theirs = Cluster::redis(3);
    let home = key_slot(b"a");
    let same_node =
        |k: &String, c: &Cluster| c.node_for_slot(key_slot(k.as_bytes())) == c.node_for_slot(home);
    let local_other_slot = (0..10_000)
        .map(|i| format!("j{i}"))
        .find(|k| key_slot(k.as_bytes()) != home && same_node(k, &ours) && same_node(k, &theirs))
        .expect("a local key in another slot");
    let remote = (0..10_000)
        .map(|i| format!("r{i}"))
        .find(|k| !same_node(k, &ours) && !same_node(k, &theirs))
        .expect("a remote key");
    let commands: Vec<Vec<String>> = [
        vec!["MULTI"],
        vec!["SET", "{a}1", "x"],
        vec!["INCR", "{a}2"],
        vec!["EXEC"],
        vec!["MULTI"],
        vec!["SET", "{a}1", "y"],
        vec!["SET", &local_other_slot, "z"],
        vec!["EXEC"],
        vec!["EXEC"],
        vec!["GET", "{a}1"],
        vec!["MULTI"],
        vec!["GET", &remote],
        vec!["EXEC"],
        vec!["MULTI"],
        vec!["PING"],
        vec!["EXEC"],
    ]
    .iter()
    .map(|c| c.iter().map(|s| s.to_string()).collect())
    .collect();
    let mut ours_client = RawClient::connect(ours.nodes[ours.node_for_slot(home)].port);
    let mut theirs_client = RawClient::connect(theirs.nodes[theirs.node_for_slot(home)].port);
    let normalize = |reply: Vec<u8>| {
        // MOVED names a node address, which differs between the clusters.
        let text = String::from_utf8_lossy(&reply).into_owned();
        match text.strip_prefix("-MOVED ") {
            Some(rest) => format!("-MOVED {}", rest.split(' ').next().unwrap_or("")),
            None => text,
        }
    };
    for command in &commands {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        let a = normalize(ours_client.call_raw(&args));
        let b = normalize(theirs_client.call_raw(&args));
        assert_eq!(a, b, "{command:?}");
    }
}
