//! Failure detection and failover in a storage-node cluster of 3 masters with one replica
//! each (`cluster-node-timeout` 2000 ms, the harness's): a stopped master loses no write a
//! replica acknowledged (WAIT); a minority never promotes anyone; twenty kills in a row all
//! fail over; TAKEOVER and FORCE switch roles.
//!
//! The load goes straight to the nodes, with a writer that follows the slot map
//! (`cluster_ha_fixture::write_load`). A kill -9 and a manual CLUSTER FAILOVER under a
//! write load *through slotproxy* (must-show 1 and 4) are `tests/proxy_failover.rs`, which
//! runs the same scenario against storage-nodes and redis-servers.

mod cluster_ha_fixture;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster_ha_fixture::*;
use test_harness::cluster::start_storage_node;
use test_harness::{wait_until, Cluster, RawClient};

const NODE_TIMEOUT_MS: u64 = 2000;

/// The cluster, settled, with a writer running against it.
fn loaded_cluster(
    wait_ms: Option<u64>,
) -> (Cluster, Arc<AtomicBool>, std::thread::JoinHandle<Written>) {
    let cluster = Cluster::storage_nodes_with_replicas(3);
    wait_replica_topology(&ports(&cluster), 3, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = write_load(ports(&cluster), "k", wait_ms, stop.clone());
    (cluster, stop, writer)
}

fn dbsize(port: u16) -> i64 {
    let mut c = RawClient::connect(port);
    c.call(&["DBSIZE"]).as_integer().unwrap_or(0)
}

/// Waits until the writer has put `more` keys on the node on `port` (it is writing).
fn wait_for_writes(port: u16, more: i64) {
    let start = dbsize(port);
    wait_until(DEADLINE, "the writer to make progress", || {
        dbsize(port) >= start + more
    });
}

/// The index of the node serving slot `slot` and of its replica.
fn shard(cluster: &Cluster, slot: u16) -> (usize, usize) {
    let master = cluster.node_for_slot(slot);
    let master_id = myid(cluster.nodes[master].port);
    let lines = cluster_nodes(cluster.nodes[master].port);
    let replica_port = lines
        .iter()
        .find(|l| l.has("slave") && l.master == master_id)
        .expect("a replica")
        .port;
    let replica = cluster
        .nodes
        .iter()
        .position(|n| n.port == replica_port)
        .expect("known replica");
    (master, replica)
}

/// The slots the node on `port` serves, from its own CLUSTER NODES line.
fn own_slots(port: u16) -> Vec<u16> {
    let lines = cluster_nodes(port);
    let me = lines.iter().find(|l| l.has("myself")).expect("myself");
    me.slots
        .iter()
        .filter(|s| !s.starts_with('['))
        .flat_map(|s| match s.split_once('-') {
            Some((a, b)) => a.parse().unwrap_or(0)..=b.parse().unwrap_or(0),
            None => {
                let one: u16 = s.parse().unwrap_or(0);
                one..=one
            }
        })
        .collect()
}

/// Ports of the nodes that answer.
fn live_ports(cluster: &Cluster, except: &[usize]) -> Vec<u16> {
    (0..cluster.nodes.len())
        .filter(|i| !except.contains(i))
        .map(|i| cluster.nodes[i].port)
        .collect()
}

/// Waits until every node in `ports` sees the node on `port` as a master serving slots.
fn wait_promoted(ports: &[u16], port: u16) {
    wait_until(DEADLINE, "every node to see the promoted replica", || {
        ports.iter().all(|&p| {
            cluster_nodes(p)
                .iter()
                .any(|l| l.port == port && l.has("master") && !l.slots.is_empty())
        })
    });
}

/// Waits until the node on `port` is a replica of the node on `master` with its link up.
fn wait_replica_of(port: u16, master: u16) {
    wait_until(DEADLINE, "the old master to replicate the new one", || {
        replicates(port, master)
    });
}

/// Once the replica on `replica_port` took over from the master on `master_port` (still
/// running): waits until the old master replicates it and the cluster settles, lets the
/// writer write to the new master, then stops the writer.
fn after_failover(
    cluster: &Cluster,
    master_port: u16,
    replica_port: u16,
    stop: Arc<AtomicBool>,
    writer: std::thread::JoinHandle<Written>,
) -> Written {
    wait_until(DEADLINE, "the replica to become master", || {
        role(replica_port) == "master"
    });
    wait_replica_of(master_port, replica_port);
    wait_replica_topology(&ports(cluster), 3, 1);
    wait_for_writes(replica_port, 100);
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer")
}

fn max_config_epoch(port: u16) -> u64 {
    cluster_nodes(port)
        .iter()
        .map(|l| l.config_epoch)
        .max()
        .unwrap_or(0)
}

#[test]
fn a_stopped_master_loses_no_write_a_replica_acknowledged() {
    let (cluster, stop, writer) = loaded_cluster(Some(500));
    let (master, replica) = shard(&cluster, 0);
    let (master_port, replica_port) = (cluster.nodes[master].port, cluster.nodes[replica].port);
    wait_for_writes(master_port, 200);
    cluster.nodes[master].signal("STOP");
    // The fault itself lasts 4 s (twice the node timeout): not a synchronisation.
    std::thread::sleep(Duration::from_secs(4));
    cluster.nodes[master].signal("CONT");
    let written = after_failover(&cluster, master_port, replica_port, stop, writer);
    let all = ports(&cluster);
    let lost_replicated = lost_writes(&all, &written.replicated);
    let lost_plain = lost_writes(&all, &written.acknowledged);
    println!(
        "SIGSTOP 4 s: {} WAIT-acknowledged writes, {} lost; {} acknowledged writes, {} lost",
        written.replicated.len(),
        lost_replicated.len(),
        written.acknowledged.len(),
        lost_plain.len()
    );
    assert!(!written.replicated.is_empty());
    assert_eq!(lost_replicated, Vec::<String>::new());
}

#[test]
fn a_minority_promotes_no_replica() {
    let cluster = Cluster::storage_nodes_with_replicas(3);
    wait_replica_topology(&ports(&cluster), 3, 1);
    let masters: Vec<usize> = (0..6)
        .filter(|&i| role(cluster.nodes[i].port) == "master")
        .collect();
    let (stopped, live_master) = (&masters[..2], masters[2]);
    for &i in stopped {
        cluster.nodes[i].signal("STOP");
    }
    let replicas: Vec<u16> = (0..6)
        .filter(|i| !masters.contains(i))
        .map(|i| cluster.nodes[i].port)
        .collect();
    let live_port = cluster.nodes[live_master].port;
    wait_until(DEADLINE, "the lone master to see the cluster down", || {
        cluster_info(live_port).contains("cluster_state:fail")
    });
    // Watch for four node timeouts: no replica may become a master.
    let until = Instant::now() + Duration::from_millis(NODE_TIMEOUT_MS * 4);
    while Instant::now() < until {
        for &port in &replicas {
            assert_eq!(
                role(port),
                "slave",
                "a replica was promoted without a majority"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped_id = myid_of_stopped(&cluster, stopped[0], live_port);
    let mut c = RawClient::connect(live_port);
    let reports = c.call(&["CLUSTER", "COUNT-FAILURE-REPORTS", &stopped_id]);
    assert_eq!(
        reports.as_integer(),
        Some(0),
        "no other master can report it"
    );
    // A key of the lone master's own slots: refused while down, unless reads are allowed
    // (`cluster-allow-reads-when-down`), and writes are refused either way.
    let own = own_slots(live_port);
    let key = (0..)
        .map(|i| format!("key:{i}"))
        .find(|k| own.contains(&slotproxy::cluster::key_slot(k.as_bytes())))
        .expect("a key of the live master");
    let mut c = RawClient::connect(live_port);
    let down = |text: &str| slotproxy::resp::Frame::Error(text.to_string().into());
    assert_eq!(
        c.call(&["GET", &key]),
        down("CLUSTERDOWN The cluster is down")
    );
    c.call(&["CONFIG", "SET", "cluster-allow-reads-when-down", "yes"]);
    assert_eq!(c.call(&["GET", &key]), slotproxy::resp::Frame::Null);
    assert_eq!(
        c.call(&["SET", &key, "v"]),
        down("CLUSTERDOWN The cluster is down and only accepts read commands")
    );
    c.call(&["CONFIG", "SET", "cluster-allow-reads-when-down", "no"]);
    for &i in stopped {
        cluster.nodes[i].signal("CONT");
    }
    wait_replica_topology(&ports(&cluster), 3, 1);
}

/// The id of a stopped node, from another node's CLUSTER NODES.
fn myid_of_stopped(cluster: &Cluster, index: usize, ask: u16) -> String {
    let port = cluster.nodes[index].port;
    cluster_nodes(ask)
        .into_iter()
        .find(|l| l.port == port)
        .expect("the stopped node")
        .id
}

fn set_node_timeout(port: u16, ms: u64) {
    let mut c = RawClient::connect(port);
    let ms = ms.to_string();
    assert_eq!(
        c.call(&["CONFIG", "SET", "cluster-node-timeout", &ms]),
        slotproxy::resp::Frame::Simple("OK".into())
    );
}

fn repl_offset(port: u16, field: &str) -> Option<u64> {
    let mut c = RawClient::connect(port);
    let info = text(c.call(&["INFO", "replication"]).as_bytes().unwrap_or(b""));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn twenty_kills_of_a_random_master_all_fail_over() {
    const SHORT_TIMEOUT_MS: u64 = 1000;
    let (mut cluster, stop, writer) = loaded_cluster(None);
    for port in ports(&cluster) {
        set_node_timeout(port, SHORT_TIMEOUT_MS);
    }
    let started = Instant::now();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut last_epoch = max_config_epoch(cluster.nodes[0].port);
    for round in 0..20 {
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "twenty rounds took too long"
        );
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let masters: Vec<usize> = (0..cluster.nodes.len())
            .filter(|&i| role(cluster.nodes[i].port) == "master")
            .collect();
        assert_eq!(masters.len(), 3, "round {round}");
        let victim = masters[(seed % 3) as usize];
        let victim_port = cluster.nodes[victim].port;
        let victim_id = myid(victim_port);
        let replica_port = cluster_nodes(victim_port)
            .iter()
            .find(|l| l.has("slave") && l.master == victim_id)
            .expect("the victim's replica")
            .port;
        let killed_at = Instant::now();
        cluster.nodes[victim].kill();
        let others = live_ports(&cluster, &[victim]);
        wait_until(DEADLINE, "the replica to become master", || {
            role(replica_port) == "master"
        });
        wait_promoted(&others, replica_port);
        let took = killed_at.elapsed();
        let epoch = max_config_epoch(replica_port);
        assert!(
            epoch > last_epoch,
            "round {round}: epoch {epoch} after {last_epoch}"
        );
        last_epoch = epoch;
        cluster.nodes[victim] = start_storage_node(victim_port);
        set_node_timeout(victim_port, SHORT_TIMEOUT_MS);
        wait_replica_of(victim_port, replica_port);
        wait_replica_topology(&ports(&cluster), 3, 1);
        println!(
            "round {round}: failover in {} ms, config epoch {epoch}",
            took.as_millis()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().expect("writer");
    // The data converges: every replica reaches its master's offset and holds as many keys.
    for master in ports(&cluster).into_iter().filter(|&p| role(p) == "master") {
        let id = myid(master);
        let replica = cluster_nodes(master)
            .iter()
            .find(|l| l.has("slave") && l.master == id)
            .expect("a replica")
            .port;
        wait_until(DEADLINE, "the replica to reach its master's offset", || {
            repl_offset(master, "master_repl_offset") == repl_offset(replica, "slave_repl_offset")
        });
        assert_eq!(dbsize(master), dbsize(replica), "shard of port {master}");
    }
    let lost = lost_writes(&ports(&cluster), &written.acknowledged);
    println!(
        "20 kills: {} acknowledged writes, {} lost with the killed masters (asynchronous replication)",
        written.acknowledged.len(),
        lost.len()
    );
    assert_check_ok(cluster.nodes[0].port, 3);
}

#[test]
fn takeover_and_force_switch_roles_back_and_forth() {
    let cluster = Cluster::storage_nodes_with_replicas(3);
    wait_replica_topology(&ports(&cluster), 3, 1);
    let (master, replica) = shard(&cluster, 0);
    let (master_port, replica_port) = (cluster.nodes[master].port, cluster.nodes[replica].port);
    let ok = slotproxy::resp::Frame::Simple("OK".into());
    // TAKEOVER: no election, a new config epoch of its own.
    let epoch_before = max_config_epoch(replica_port);
    let mut c = RawClient::connect(replica_port);
    assert_eq!(c.call(&["CLUSTER", "FAILOVER", "TAKEOVER"]), ok);
    wait_replica_of(master_port, replica_port);
    assert!(max_config_epoch(replica_port) > epoch_before);
    wait_replica_topology(&ports(&cluster), 3, 1);
    // FORCE: an election without waiting for the master's offset.
    let mut c = RawClient::connect(master_port);
    assert_eq!(c.call(&["CLUSTER", "FAILOVER", "FORCE"]), ok);
    wait_replica_of(replica_port, master_port);
    wait_replica_topology(&ports(&cluster), 3, 1);
    assert_check_ok(master_port, 3);
}
