//! Storage-node clusters driven by Debian's `redis-cli --cluster`, as operators drive real
//! Redis Clusters: create, check, reshard (under load from the `redis` crate's cluster
//! client), add-node, rebalance, del-node, and a node restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod cluster_ha_fixture;

use cluster_ha_fixture::{assert_check_ok, cluster_info, myid, text};
use slotproxy::cluster::{key_slot, SLOT_COUNT};
use test_harness::cluster::start_storage_node;
use test_harness::{free_port, Cluster, RawClient};

const KEYS: usize = 100_000;
const RESHARD_SLOTS: usize = 1000;

/// Runs `redis-cli args...`, asserts it succeeded and returns its output.
fn redis_cli(args: &[&str]) -> String {
    let (ok, out) = cluster_ha_fixture::redis_cli(args);
    assert!(ok, "redis-cli {args:?} failed:\n{out}");
    out
}

/// Waits (bounded) until every node is up and knows exactly `ports.len()` nodes.
fn wait_converged(ports: &[u16]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let known = format!("cluster_known_nodes:{}\r\n", ports.len());
    loop {
        let done = ports.iter().all(|&p| {
            let info = cluster_info(p);
            info.contains("cluster_state:ok") && info.contains(&known)
        });
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "the cluster did not converge");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The port serving each slot, from CLUSTER SLOTS.
fn slot_owners(port: u16) -> Vec<u16> {
    let mut c = RawClient::connect(port);
    let slots = c.call(&["CLUSTER", "SLOTS"]);
    let mut owners = vec![0u16; SLOT_COUNT];
    for range in slots.as_array().unwrap_or(&[]) {
        let items = range.as_array().expect("range");
        let first = items[0].as_integer().expect("start") as usize;
        let last = items[1].as_integer().expect("end") as usize;
        let owner = items[2].as_array().expect("node")[1]
            .as_integer()
            .expect("port") as u16;
        owners[first..=last].iter_mut().for_each(|o| *o = owner);
    }
    owners
}

/// Sends `commands` to one node in pipelined batches and returns the raw replies.
fn pipeline(port: u16, commands: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    let mut client = RawClient::connect(port);
    let mut replies = Vec::with_capacity(commands.len());
    for batch in commands.chunks(1000) {
        let mut bytes = Vec::new();
        for command in batch {
            let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
            bytes.extend(RawClient::encode(&args));
        }
        client.send_raw(&bytes);
        for _ in batch {
            replies.push(client.read_reply().1);
        }
    }
    replies
}

fn key(i: usize) -> String {
    format!("key:{i}")
}

fn value(i: usize) -> String {
    format!("value:{i}:{}", "x".repeat(i % 50))
}

/// Loads the keys, each straight to the node that serves its slot.
fn load_keys(owners: &[u16]) {
    let mut per_node: std::collections::HashMap<u16, Vec<Vec<Vec<u8>>>> = Default::default();
    for i in 0..KEYS {
        let k = key(i);
        let owner = owners[key_slot(k.as_bytes()) as usize];
        per_node.entry(owner).or_default().push(vec![
            b"SET".to_vec(),
            k.into_bytes(),
            value(i).into_bytes(),
        ]);
    }
    for (port, commands) in per_node {
        for reply in pipeline(port, &commands) {
            assert_eq!(reply, b"+OK\r\n");
        }
    }
}

/// Every loaded key holds its value on the node that now serves its slot.
fn verify_keys(owners: &[u16]) {
    let mut per_node: std::collections::HashMap<u16, Vec<usize>> = Default::default();
    for i in 0..KEYS {
        per_node
            .entry(owners[key_slot(key(i).as_bytes()) as usize])
            .or_default()
            .push(i);
    }
    for (port, indexes) in per_node {
        let commands: Vec<Vec<Vec<u8>>> = indexes
            .iter()
            .map(|&i| vec![b"GET".to_vec(), key(i).into_bytes()])
            .collect();
        for (reply, &i) in pipeline(port, &commands).iter().zip(&indexes) {
            let expected = value(i);
            let wanted = format!("${}\r\n{expected}\r\n", expected.len());
            assert_eq!(text(reply), wanted, "key {} on port {port}", key(i));
        }
    }
}

/// What the cluster client saw while the reshard ran.
#[derive(Debug, Default)]
struct Traffic {
    writes: usize,
    reads: usize,
    errors: Vec<String>,
    wrong_values: usize,
    lost_keys: usize,
}

/// Writes and reads keys through the `redis` crate's cluster client until told to stop (or
/// a bound is reached), then reads every key it wrote back.
fn client_traffic(seed_port: u16, keys: Vec<String>, stop: Arc<AtomicBool>) -> Traffic {
    use redis::Commands;
    let client = redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{seed_port}")])
        .expect("cluster client");
    let mut connection = client.get_connection().expect("cluster connection");
    let mut traffic = Traffic::default();
    let mut last: Vec<Option<String>> = vec![None; keys.len()];
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut round = 0usize;
    while round < 2_000_000 && Instant::now() < deadline {
        let done = stop.load(Ordering::Relaxed);
        for (i, key) in keys.iter().enumerate() {
            let value = format!("{key}:{round}");
            match connection.set::<_, _, ()>(key, &value) {
                Ok(()) => {
                    traffic.writes += 1;
                    last[i] = Some(value);
                }
                Err(e) => traffic.errors.push(format!("SET {key}: {e}")),
            }
            let other = (i * 7 + round) % keys.len();
            match connection.get::<_, Option<String>>(&keys[other]) {
                Ok(got) => {
                    traffic.reads += 1;
                    if got != last[other] {
                        traffic.wrong_values += 1;
                    }
                }
                Err(e) => traffic.errors.push(format!("GET {}: {e}", keys[other])),
            }
        }
        round += 1;
        if done {
            break;
        }
    }
    for (key, expected) in keys.iter().zip(&last) {
        match connection.get::<_, Option<String>>(key) {
            Ok(got) if got == *expected => {}
            Ok(None) => traffic.lost_keys += 1,
            Ok(_) => traffic.wrong_values += 1,
            Err(e) => traffic.errors.push(format!("final GET {key}: {e}")),
        }
    }
    traffic
}

#[test]
fn redis_cli_manages_a_storage_node_cluster() {
    let mut cluster = Cluster::storage_nodes(3);
    let mut ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    assert_check_ok(ports[0], 3);

    // Reshard 1,000 slots holding about 6,000 of 100,000 keys, under client traffic.
    let owners = slot_owners(ports[0]);
    load_keys(&owners);
    let source = owners[0];
    let target = *ports.iter().find(|&&p| p != source).expect("another node");
    let moving: Vec<u16> = (0..SLOT_COUNT)
        .filter(|&s| owners[s] == source)
        .take(RESHARD_SLOTS)
        .map(|s| s as u16)
        .collect();
    let traffic_keys: Vec<String> = (0..)
        .map(|i| format!("rw:{i}"))
        .filter(|k| {
            let slot = key_slot(k.as_bytes());
            moving.contains(&slot) || slot.is_multiple_of(97)
        })
        .take(200)
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let traffic = {
        let stop = stop.clone();
        let seed = ports[0];
        std::thread::spawn(move || client_traffic(seed, traffic_keys, stop))
    };
    let (from, to) = (myid(source), myid(target));
    redis_cli(&[
        "--cluster",
        "reshard",
        &format!("127.0.0.1:{}", ports[0]),
        "--cluster-from",
        &from,
        "--cluster-to",
        &to,
        "--cluster-slots",
        &RESHARD_SLOTS.to_string(),
        "--cluster-yes",
    ]);
    stop.store(true, Ordering::Relaxed);
    let traffic = traffic.join().expect("traffic thread");
    eprintln!("cluster client during the reshard: {traffic:?}");
    assert!(traffic.writes > 0 && traffic.reads > 0, "{traffic:?}");
    assert!(traffic.errors.is_empty(), "{:?}", traffic.errors);
    assert_eq!(
        (traffic.lost_keys, traffic.wrong_values),
        (0, 0),
        "{traffic:?}"
    );
    assert_check_ok(ports[0], 3);
    let owners = slot_owners(ports[0]);
    assert!(moving.iter().all(|&s| owners[s as usize] == target));
    verify_keys(&owners);

    // add-node, then rebalance onto it (a small weight keeps the move short).
    let new_port = free_port();
    let _ = std::fs::remove_dir_all(test_harness::cluster::node_dir(new_port));
    cluster.nodes.push(start_storage_node(new_port));
    redis_cli(&[
        "--cluster",
        "add-node",
        &format!("127.0.0.1:{new_port}"),
        &format!("127.0.0.1:{}", ports[0]),
    ]);
    ports.push(new_port);
    wait_converged(&ports);
    assert_check_ok(ports[0], 4);
    let new_id = myid(new_port);
    redis_cli(&[
        "--cluster",
        "rebalance",
        &format!("127.0.0.1:{}", ports[0]),
        "--cluster-use-empty-masters",
        "--cluster-weight",
        &format!("{new_id}=0.15"),
    ]);
    assert_check_ok(ports[0], 4);
    let owners = slot_owners(ports[0]);
    let moved_in = owners.iter().filter(|&&p| p == new_port).count();
    assert!(moved_in > 0, "rebalance moved nothing to the new node");
    verify_keys(&owners);

    // del-node, after moving its slots away.
    redis_cli(&[
        "--cluster",
        "reshard",
        &format!("127.0.0.1:{}", ports[0]),
        "--cluster-from",
        &new_id,
        "--cluster-to",
        &myid(ports[0]),
        "--cluster-slots",
        &moved_in.to_string(),
        "--cluster-yes",
    ]);
    redis_cli(&[
        "--cluster",
        "del-node",
        &format!("127.0.0.1:{}", ports[0]),
        &new_id,
    ]);
    ports.pop();
    drop(cluster.nodes.pop());
    wait_converged(&ports);
    assert_check_ok(ports[0], 3);
    verify_keys(&slot_owners(ports[0]));

    // Kill a node and start it again from its nodes file: same id, same slots.
    let victim = 1;
    let port = ports[victim];
    let id_before = myid(port);
    let slots_before: Vec<bool> = slot_owners(port).iter().map(|&p| p == port).collect();
    cluster.nodes[victim].kill();
    cluster.nodes[victim] = start_storage_node(port);
    assert_eq!(myid(port), id_before);
    wait_converged(&ports);
    let slots_after: Vec<bool> = slot_owners(ports[0]).iter().map(|&p| p == port).collect();
    assert_eq!(slots_before, slots_after);
    assert_check_ok(ports[0], 3);
}
