//! Replicas in a storage-node cluster, beside a real Redis 7.0 cluster of the same shape
//! (3 masters with one replica each, made by `redis-cli --cluster create --cluster-replicas
//! 1`): CLUSTER NODES, SLOTS, SHARDS, REPLICAS and COUNT-FAILURE-REPORTS have the same
//! shape, READONLY reads and redirects answer the same, CLUSTER REPLICATE refuses the same
//! way, `redis-cli --cluster check` and `add-node --cluster-slave` work, and a restarted
//! replica stays a replica.

mod cluster_ha_fixture;

use cluster_ha_fixture::*;
use slotproxy::cluster::key_slot;
use test_harness::cluster::start_storage_node;
use test_harness::{wait_until, Cluster, RawClient};

/// Both clusters, settled, each replica past offset 0 (CLUSTER SHARDS says `loading` for
/// a replica at offset 0, and when the first write or PING reaches it depends on timing).
fn both() -> [Cluster; 2] {
    let redis = Cluster::redis_with_replicas(3);
    let storage = Cluster::storage_nodes_with_replicas(3);
    for cluster in [&redis, &storage] {
        wait_replica_topology(&ports(cluster), 3, 1);
        write_to_every_shard(cluster);
        wait_until(DEADLINE, "every replica to announce its offset", || {
            cluster.nodes.iter().all(|n| {
                let mut c = RawClient::connect(n.port);
                c.call(&["HELLO", "3"]);
                let shards = format!("{:?}", c.call(&["CLUSTER", "SHARDS"]));
                !shards.contains("loading")
            })
        });
    }
    [redis, storage]
}

/// One key on every master.
fn write_to_every_shard(cluster: &Cluster) {
    let mut written = std::collections::HashSet::new();
    for i in 0.. {
        let key = format!("seed:{i}");
        let master = cluster.node_for_slot(key_slot(key.as_bytes()));
        if written.insert(master) {
            let mut c = RawClient::connect(cluster.nodes[master].port);
            c.call(&["SET", &key, "1"]);
        }
        if written.len() == 3 {
            return;
        }
    }
}

/// A master's port and its replica's port, by CLUSTER NODES of the first node.
fn master_and_replica(cluster: &Cluster, slot: u16) -> (u16, u16) {
    let lines = cluster_nodes(cluster.nodes[0].port);
    let master = &cluster.nodes[cluster.node_for_slot(slot)];
    let master_id = &lines
        .iter()
        .find(|l| l.port == master.port)
        .expect("master line")
        .id;
    let replica = lines
        .iter()
        .find(|l| l.has("slave") && &l.master == master_id)
        .expect("replica line");
    (master.port, replica.port)
}

/// CLUSTER NODES, SLOTS, SHARDS and REPLICAS in shapes, as one node sees them.
fn topology_shapes(port: u16) -> Vec<String> {
    let lines = cluster_nodes(port);
    let mut nodes: Vec<String> = lines.iter().map(line_shape).collect();
    nodes.sort();
    let mut c = RawClient::connect(port);
    let slots = c.call(&["CLUSTER", "SLOTS"]);
    let mut shapes = vec![nodes.join("\n"), shape(&slots)];
    c.call(&["HELLO", "3"]);
    let shards = c.call(&["CLUSTER", "SHARDS"]);
    let mut shard_shapes: Vec<String> =
        shards.as_array().unwrap_or(&[]).iter().map(shape).collect();
    shard_shapes.sort();
    shapes.push(shard_shapes.join("\n"));
    c.call(&["HELLO", "2"]);
    let master = lines.iter().find(|l| l.has("master")).expect("a master");
    let replicas = c.call(&["CLUSTER", "REPLICAS", &master.id]);
    let replica_lines: Vec<&[u8]> = replicas
        .as_array()
        .unwrap_or(&[])
        .iter()
        .filter_map(|f| f.as_bytes())
        .collect();
    assert_eq!(replica_lines.len(), 1, "{replicas:?}");
    let fields: Vec<String> = text(replica_lines[0])
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(fields[3], master.id, "a replica line names its master");
    // Which master is listed first (and so whether its replica is the node asked, flagged
    // `myself`) follows the random node ids, on both servers.
    let flags = fields[2].replace("myself,", "");
    shapes.push(format!("{} fields, flags {flags}", fields.len()));
    let reports = c.call(&["CLUSTER", "COUNT-FAILURE-REPORTS", &master.id]);
    shapes.push(format!("{reports:?}"));
    shapes
}

#[test]
fn replica_topology_has_redis_shape() {
    let [redis, storage] = both();
    let pick = |cluster: &Cluster, want: &str| {
        cluster
            .nodes
            .iter()
            .map(|n| n.port)
            .find(|&p| role(p) == want)
            .expect("a node of that role")
    };
    for want in ["master", "slave"] {
        // From a master and from a replica alike (node order differs: pick by role).
        let expected = topology_shapes(pick(&redis, want));
        let got = topology_shapes(pick(&storage, want));
        assert_eq!(got, expected, "seen from a {want}");
    }
}

/// Every reply of the READONLY / redirect script, with the cluster's ports and ids
/// replaced by their roles.
fn readonly_script(cluster: &Cluster) -> Vec<String> {
    let key = "user:1000";
    let slot = key_slot(key.as_bytes());
    let (master, replica) = master_and_replica(cluster, slot);
    let other_key = (0..)
        .map(|i| format!("other:{i}"))
        .find(|k| cluster.node_for_slot(key_slot(k.as_bytes())) != cluster.node_for_slot(slot))
        .expect("a key of another master");
    let mut m = RawClient::connect(master);
    assert_eq!(
        m.call(&["SET", key, "hello"]),
        slotproxy::resp::Frame::Simple("OK".into())
    );
    let mut r = RawClient::connect(replica);
    r.call(&["READONLY"]);
    wait_until(DEADLINE, "the replica to have the key", || {
        r.call(&["GET", key]).as_bytes() == Some(b"hello")
    });
    r.call(&["READWRITE"]);
    let script: &[&[&str]] = &[
        &["GET", key],
        &["READONLY"],
        &["GET", key],
        &["EXISTS", key],
        &["SET", key, "x"],
        &["GET", &other_key],
        &["READWRITE"],
        &["GET", key],
        &["CLUSTER", "REPLICATE", &myid(replica)],
        &[
            "CLUSTER",
            "REPLICATE",
            "0000000000000000000000000000000000000000",
        ],
        &["ROLE"],
    ];
    let mut out = Vec::new();
    for command in script {
        let raw = r.call_raw(&command.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
        let mut line = text(&raw)
            .replace(&format!("127.0.0.1:{master}"), "<master>")
            .replace(&master.to_string(), "<master-port>");
        if let Some((moved, _)) = line.split_once("127.0.0.1:") {
            line = format!("{moved}<other-master>");
        }
        if command[0] == "ROLE" {
            // The offsets differ between the two clusters: keep role, host, state.
            line = line.split("\r\n").take(8).collect::<Vec<_>>().join("|");
        }
        out.push(line);
    }
    let mut c = RawClient::connect(master);
    let lines = cluster_nodes(master);
    let replica_of_master = lines.iter().find(|l| l.port == replica).expect("replica");
    out.push(text(&c.call_raw(&[
        b"CLUSTER",
        b"REPLICATE",
        replica_of_master.id.as_bytes(),
    ])));
    let own_id = myid(master);
    out.push(text(&c.call_raw(&[
        b"CLUSTER",
        b"REPLICATE",
        own_id.as_bytes(),
    ])));
    let other = lines
        .iter()
        .find(|l| l.has("master") && l.port != master)
        .expect("another master");
    out.push(text(&c.call_raw(&[
        b"CLUSTER",
        b"REPLICATE",
        other.id.as_bytes(),
    ])));
    out.push(text(&c.call_raw(&[
        b"CLUSTER",
        b"REPLICAS",
        replica_of_master.id.as_bytes(),
    ])));
    out.push(text(&c.call_raw(&[b"CLUSTER", b"FAILOVER"])));
    out.push(text(&r.call_raw(&[b"CLUSTER", b"FAILOVER", b"SOMETIMES"])));
    out.iter()
        .map(|l| {
            l.replace(&replica_of_master.id, "<replica-id>")
                .replace(&other.id, "<other-id>")
        })
        .collect()
}

#[test]
fn readonly_reads_and_redirects_match_redis() {
    let [redis, storage] = both();
    assert_eq!(readonly_script(&storage), readonly_script(&redis));
}

#[test]
fn redis_cli_checks_and_adds_a_replica() {
    let storage = Cluster::storage_nodes_with_replicas(3);
    wait_replica_topology(&ports(&storage), 3, 1);
    let out = assert_check_ok(storage.nodes[0].port, 3);
    assert_eq!(out.matches("1 additional replica(s)").count(), 3, "{out}");
    // A spare node joins as a second replica of the master of slot 0.
    let spare = storage.spare_node();
    let master = &storage.nodes[storage.node_for_slot(0)];
    let master_id = myid(master.port);
    let (ok, out) = redis_cli(&[
        "--cluster",
        "add-node",
        &format!("127.0.0.1:{}", spare.port),
        &format!("127.0.0.1:{}", master.port),
        "--cluster-slave",
        "--cluster-master-id",
        &master_id,
    ]);
    assert!(ok, "{out}");
    wait_until(DEADLINE, "the new replica to sync", || {
        let mut c = RawClient::connect(spare.port);
        let info = text(c.call(&["INFO", "replication"]).as_bytes().unwrap_or(b""));
        info.contains("master_link_status:up")
            && info.contains(&format!("master_port:{}", master.port))
    });
    let mut all = ports(&storage);
    all.push(spare.port);
    wait_until(DEADLINE, "every node to know the new replica", || {
        all.iter().all(|&p| {
            cluster_nodes(p)
                .iter()
                .filter(|l| l.has("slave") && l.master == master_id)
                .count()
                == 2
        })
    });
    let out = assert_check_ok(spare.port, 3);
    assert!(out.contains("2 additional replica(s)"), "{out}");
}

#[test]
fn a_restarted_replica_stays_a_replica() {
    let mut storage = Cluster::storage_nodes_with_replicas(3);
    wait_replica_topology(&ports(&storage), 3, 1);
    let index = storage
        .nodes
        .iter()
        .position(|n| role(n.port) == "slave")
        .expect("a replica");
    let port = storage.nodes[index].port;
    let before = cluster_nodes(port);
    let me = before
        .iter()
        .find(|l| l.has("myself"))
        .expect("myself")
        .clone();
    storage.nodes[index].kill();
    storage.nodes[index] = start_storage_node(port);
    let after = cluster_nodes(port);
    let me_after = after.iter().find(|l| l.has("myself")).expect("myself");
    assert_eq!(me_after.id, me.id);
    assert_eq!(me_after.flags, vec!["myself", "slave"]);
    assert_eq!(
        me_after.master, me.master,
        "the nodes file keeps the master"
    );
    wait_replica_topology(&ports(&storage), 3, 1);
    wait_until(DEADLINE, "the restarted replica to sync again", || {
        let mut c = RawClient::connect(port);
        text(c.call(&["INFO", "replication"]).as_bytes().unwrap_or(b""))
            .contains("master_link_status:up")
    });
}
