//! Redirects during a slot migration, clients that vanish, dead masters, and
//! redis-benchmark's default test list through the proxy.

use std::process::Command;
use std::time::{Duration, Instant};

use slotproxy::cluster::key_slot;
use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

fn node_id(port: u16) -> String {
    let id = RawClient::connect(port).call(&["CLUSTER", "MYID"]);
    String::from_utf8_lossy(id.as_bytes().expect("id")).into_owned()
}

/// Moves one slot by hand (the steps `redis-cli --cluster reshard` takes) while a client
/// reads and writes its keys through the proxy: before, during (ASK) and after (MOVED).
pub fn slot_migration_is_invisible_to_clients(cluster: &Cluster, port: u16) {
    let mut client = RawClient::connect(port);
    let keys: Vec<String> = (0..50).map(|i| format!("{{mig}}:{i}")).collect();
    for k in &keys {
        assert_eq!(
            client.call(&["SET", k, "before"]),
            Frame::Simple("OK".into())
        );
    }
    let slot = key_slot(b"mig");
    let source = cluster.node_for_slot(slot);
    let target = (source + 1) % cluster.nodes.len();
    let (source_port, target_port) = (cluster.nodes[source].port, cluster.nodes[target].port);
    let (source_id, target_id) = (node_id(source_port), node_id(target_port));
    let mut src = RawClient::connect(source_port);
    let mut dst = RawClient::connect(target_port);
    let slot_text = slot.to_string();
    assert_eq!(
        dst.call(&["CLUSTER", "SETSLOT", &slot_text, "IMPORTING", &source_id]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        src.call(&["CLUSTER", "SETSLOT", &slot_text, "MIGRATING", &target_id]),
        Frame::Simple("OK".into())
    );
    // Move half the keys: the rest still live on the source, the moved ones answer ASK.
    for k in &keys[..25] {
        let reply = src.call(&[
            "MIGRATE",
            "127.0.0.1",
            &target_port.to_string(),
            k,
            "0",
            "5000",
        ]);
        assert_eq!(reply, Frame::Simple("OK".into()), "MIGRATE {k}");
    }
    for k in &keys {
        assert_eq!(
            client.call(&["GET", k]),
            Frame::bulk("before"),
            "GET {k} mid-migration"
        );
    }
    for k in &keys[..25] {
        assert_eq!(
            client.call(&["SET", k, "during"]),
            Frame::Simple("OK".into())
        );
    }
    for k in &keys[25..] {
        src.call(&[
            "MIGRATE",
            "127.0.0.1",
            &target_port.to_string(),
            k,
            "0",
            "5000",
        ]);
    }
    for node in &cluster.nodes {
        let mut c = RawClient::connect(node.port);
        c.call(&["CLUSTER", "SETSLOT", &slot_text, "NODE", &target_id]);
    }
    for (i, k) in keys.iter().enumerate() {
        let expected = if i < 25 { "during" } else { "before" };
        assert_eq!(
            client.call(&["GET", k]),
            Frame::bulk(expected),
            "GET {k} after MOVED"
        );
    }
    let info = RawClient::connect(port).call(&["INFO", "stats"]);
    let text = String::from_utf8_lossy(info.as_bytes().unwrap_or(b"")).into_owned();
    assert!(
        text.contains("redirects_ask:") && !text.contains("redirects_ask:0\r"),
        "{text}"
    );
}

fn connected_clients(port: u16) -> i64 {
    let info = RawClient::connect(port).call(&["INFO", "clients"]);
    let text = String::from_utf8_lossy(info.as_bytes().unwrap_or(b"")).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(-1)
}

pub fn client_killed_during_fanout(cluster: &Cluster, port: u16) {
    let mut loader = RawClient::connect(port);
    let mut mset: Vec<String> = vec!["MSET".into()];
    for i in 0..5000 {
        mset.push(format!("kill:{i}"));
        mset.push("x".repeat(100));
    }
    let refs: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(loader.call(&refs), Frame::Simple("OK".into()));
    let mut mget: Vec<&[u8]> = vec![b"MGET"];
    let keys: Vec<String> = (0..5000).map(|i| format!("kill:{i}")).collect();
    mget.extend(keys.iter().map(|k| k.as_bytes()));
    let request = RawClient::encode(&mget);
    for _ in 0..30 {
        let mut victim = RawClient::connect(port);
        victim.send_raw(&request);
        victim.send_raw(&request);
        drop(victim);
    }
    // The proxy still serves everyone, and it holds no more backend connections than its
    // pools: 2 per node for each of the 2 workers and the control thread, plus our own INFO
    // connection.
    let mut client = RawClient::connect(port);
    assert_eq!(
        client.call(&["GET", "kill:1"]),
        Frame::bulk("x".repeat(100))
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    for node in &cluster.nodes {
        loop {
            let clients = connected_clients(node.port);
            if clients <= 7 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {} still has {clients} clients",
                node.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub fn dead_master_fails_only_its_slots(cluster: &mut Cluster, port: u16) {
    let mut client = RawClient::connect(port);
    let keys: Vec<String> = (0..300).map(|i| format!("dead:{i}")).collect();
    for k in &keys {
        client.call(&["SET", k, "v"]);
    }
    let victim = cluster.node_for_slot(key_slot(keys[0].as_bytes()));
    let owners: Vec<usize> = keys
        .iter()
        .map(|k| cluster.node_for_slot(key_slot(k.as_bytes())))
        .collect();
    cluster.nodes[victim].kill();
    for (k, owner) in keys.iter().zip(&owners) {
        let reply = client.call(&["GET", k]);
        if *owner == victim {
            assert!(reply.is_error(), "{k} on the dead master: {reply:?}");
        } else {
            assert_eq!(reply, Frame::bulk("v"), "{k} on a live master");
        }
    }
    assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
}

pub fn redis_benchmark_runs_clean(port: u16) {
    let output = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-q", "-n", "100000"])
        .output()
        .expect("run redis-benchmark");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    for test in [
        "PING_INLINE",
        "SET",
        "GET",
        "INCR",
        "LPUSH",
        "SADD",
        "HSET",
        "ZADD",
        "LRANGE_600",
        "MSET",
    ] {
        let listed = stdout.contains(&format!("{test}: ")) || stdout.contains(&format!("{test} ("));
        assert!(listed, "{test} missing:\n{stdout}{stderr}");
    }
    assert!(
        !stdout.contains("ERR") && !stderr.contains("ERR"),
        "{stdout}{stderr}"
    );
}
