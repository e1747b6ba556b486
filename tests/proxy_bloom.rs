//! Bloom filters (`BF.*`, storage-node's RedisBloom commands) through slotproxy in front of
//! three storage-nodes: the proxy routes them by their key from the command table, so each
//! filter lives on the node serving its slot and every command reaches it there; a reshard
//! job of the admin API moves a slot holding filters.

#[allow(dead_code)]
#[path = "reshard_jobs/admin.rs"]
mod admin;

use slotproxy::cluster::key_slot;
use test_harness::{start_proxy, Cluster, RawClient};

fn raw(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&client.call_raw(&args)).into_owned()
}

#[test]
fn bf_commands_are_routed_by_key() {
    let cluster = Cluster::storage_nodes(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    let mut c = RawClient::connect(proxy.port);
    let keys: Vec<String> = (0..12).map(|i| format!("filter:{i}")).collect();
    let mut owners = std::collections::HashSet::new();
    for key in &keys {
        assert_eq!(raw(&mut c, &["BF.RESERVE", key, "0.01", "100"]), "+OK\r\n");
        assert_eq!(
            raw(&mut c, &["BF.MADD", key, "a", key]),
            "*2\r\n:1\r\n:1\r\n"
        );
        assert_eq!(raw(&mut c, &["BF.ADD", key, "b"]), ":1\r\n");
        assert_eq!(
            raw(&mut c, &["BF.INSERT", key, "ITEMS", "c"]),
            "*1\r\n:1\r\n"
        );
        assert_eq!(raw(&mut c, &["BF.EXISTS", key, "a"]), ":1\r\n");
        assert_eq!(
            raw(&mut c, &["BF.MEXISTS", key, "b", "c", "nope"]),
            "*3\r\n:1\r\n:1\r\n:0\r\n"
        );
        assert_eq!(raw(&mut c, &["BF.CARD", key]), ":4\r\n");
        assert_eq!(raw(&mut c, &["BF.INFO", key, "ITEMS"]), "*1\r\n:4\r\n");
    }
    // Every request went straight to the right node: none was answered with MOVED.
    for node in &cluster.nodes {
        let mut direct = RawClient::connect(node.port);
        let stats = raw(&mut direct, &["INFO", "errorstats"]);
        assert!(!stats.contains("MOVED"), "{stats}");
    }
    // The filter is on the node that serves the key's slot, and only there.
    for key in &keys {
        let owner = cluster.node_for_slot(key_slot(key.as_bytes()));
        owners.insert(owner);
        for (i, node) in cluster.nodes.iter().enumerate() {
            let mut direct = RawClient::connect(node.port);
            let reply = raw(&mut direct, &["BF.CARD", key]);
            if i == owner {
                assert_eq!(reply, ":4\r\n");
            } else {
                assert!(reply.starts_with("-MOVED "), "{reply}");
            }
        }
    }
    assert_eq!(owners.len(), 3, "the keys spread over every node");
    // SCANDUMP/LOADCHUNK through the proxy copy a filter to a key on another node.
    let header = c.call(&["BF.SCANDUMP", "filter:0", "0"]);
    let header = header.as_array().expect("pair")[1]
        .as_bytes()
        .unwrap()
        .to_vec();
    let chunk = c.call(&["BF.SCANDUMP", "filter:0", "1"]);
    let (next, data) = match chunk.as_array() {
        Some([next, data]) => (
            next.as_integer().unwrap(),
            data.as_bytes().unwrap().to_vec(),
        ),
        other => panic!("{other:?}"),
    };
    let copy = (1..100)
        .map(|i| format!("copy:{i}"))
        .find(|k| {
            cluster.node_for_slot(key_slot(k.as_bytes()))
                != cluster.node_for_slot(key_slot(b"filter:0"))
        })
        .expect("a key on another node");
    let next = next.to_string();
    assert_eq!(
        c.call_raw(&[b"BF.LOADCHUNK", copy.as_bytes(), b"1", &header]),
        b"+OK\r\n"
    );
    assert_eq!(
        c.call_raw(&[b"BF.LOADCHUNK", copy.as_bytes(), next.as_bytes(), &data]),
        b"+OK\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.MEXISTS", &copy, "a", "b", "c", "filter:0"]),
        "*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n"
    );
}

/// Filters in one slot survive a reshard job that moves the slot to another node: the job
/// MIGRATEs them (DUMP payloads of the module type) and the proxy follows.
#[test]
fn a_reshard_job_moves_a_slot_holding_filters() {
    let cluster = Cluster::storage_nodes(3);
    let (proxy, admin_port) = admin::proxy_with_token(&cluster.seeds());
    let mut c = RawClient::connect(proxy.port);
    let keys: Vec<String> = (0..5).map(|i| format!("{{bloomslot}}f{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        let capacity = (100 * (i + 1)).to_string();
        assert_eq!(
            raw(&mut c, &["BF.RESERVE", key, "0.01", &capacity]),
            "+OK\r\n"
        );
        let items: Vec<String> = (0..150 * (i + 1)).map(|n| format!("{key}:{n}")).collect();
        let mut args: Vec<&str> = vec!["BF.MADD", key];
        args.extend(items.iter().map(String::as_str));
        c.call(&args);
    }
    assert_eq!(raw(&mut c, &["SET", "{bloomslot}plain", "v"]), "+OK\r\n");
    let before: Vec<String> = keys.iter().map(|k| raw(&mut c, &["BF.INFO", k])).collect();
    let slot = key_slot(b"{bloomslot}");
    let from = cluster.node_for_slot(slot);
    let to = (from + 1) % 3;
    let body = format!(
        r#"{{"from": "127.0.0.1:{}", "to": "127.0.0.1:{}", "slots": [{slot}]}}"#,
        cluster.nodes[from].port, cluster.nodes[to].port
    );
    let done = admin::run_job(admin_port, "POST", "/v1/reshard", &body);
    assert_eq!(done["slots_done"], 1, "{done}");
    assert_eq!(cluster.node_for_slot(slot), to);

    let mut target = RawClient::connect(cluster.nodes[to].port);
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(raw(&mut c, &["BF.INFO", key]), before[i]);
        assert_eq!(raw(&mut target, &["TYPE", key]), "+MBbloom--\r\n");
        let items: Vec<String> = (0..150 * (i + 1)).map(|n| format!("{key}:{n}")).collect();
        let mut args: Vec<&str> = vec!["BF.MEXISTS", key];
        args.extend(items.iter().map(String::as_str));
        let found = c.call(&args);
        let found = found.as_array().expect("array");
        assert!(found.iter().all(|f| f.as_integer() == Some(1)), "{key}");
    }
    assert_eq!(raw(&mut c, &["GET", "{bloomslot}plain"]), "$1\r\nv\r\n");
    let mut source = RawClient::connect(cluster.nodes[from].port);
    assert_eq!(raw(&mut source, &["DBSIZE"]), ":0\r\n");
}
