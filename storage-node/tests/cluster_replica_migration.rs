//! Replica migration (`cluster-migration-barrier`, `cluster-allow-replica-migration`) in a
//! cluster of 3 masters where master A has two replicas and B and C one each
//! (`cluster-node-timeout` 2000 ms, the harness's). When B's replica dies, B is orphaned:
//! the replica of A with the smallest id moves to B once B has been orphaned for more than
//! 5 s, and A keeps one; `cluster-allow-replica-migration no` or `cluster-migration-barrier
//! 2` keep it where it is. Every scenario also runs against real redis-servers, which must
//! behave the same.
//!
//! A replica that must *not* move is asserted by watching for a bounded window that
//! starts once every node sees B's replica `fail` (so B is orphaned everywhere) and lasts
//! well past the 5 s delay, polling each node's own CLUSTER NODES; then the setting is
//! turned back and the move must happen, so the window watched a cluster that would
//! have migrated.

mod cluster_ha_fixture;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cluster_ha_fixture::*;
use test_harness::{wait_until, Cluster, RawClient};

const NODE_TIMEOUT_MS: u64 = 2000;
/// Redis's `CLUSTER_SLAVE_MIGRATION_DELAY`.
const MIGRATION_DELAY_MS: u64 = 5000;

/// The cluster and who is who in it (indexes into `cluster.nodes`).
struct Shards {
    cluster: Cluster,
    a: usize,
    a_replicas: Vec<usize>,
    b: usize,
    b_replica: usize,
}

impl Shards {
    fn port(&self, index: usize) -> u16 {
        self.cluster.nodes[index].port
    }

    fn id(&self, index: usize) -> String {
        myid(self.port(index))
    }

    /// Ports of every node but B's replica (killed by the tests).
    fn live_ports(&self) -> Vec<u16> {
        (0..self.cluster.nodes.len())
            .filter(|&i| i != self.b_replica)
            .map(|i| self.port(i))
            .collect()
    }

    /// Sets a configuration parameter on every live node.
    fn config_set(&self, name: &str, value: &str) {
        for port in self.live_ports() {
            let mut c = RawClient::connect(port);
            let reply = c.call(&["CONFIG", "SET", name, value]);
            assert_eq!(reply.as_bytes(), Some(&b"OK"[..]), "{reply:?}");
        }
    }
}

/// Working (not `fail`) replicas of each master, by master id, as the node on `port`
/// sees them.
fn working_replicas(port: u16) -> BTreeMap<String, Vec<String>> {
    let lines = cluster_nodes(port);
    let mut by_master: BTreeMap<String, Vec<String>> = lines
        .iter()
        .filter(|l| l.has("master"))
        .map(|l| (l.id.clone(), Vec::new()))
        .collect();
    for line in lines.iter().filter(|l| l.has("slave") && !l.has("fail")) {
        if let Some(replicas) = by_master.get_mut(&line.master) {
            replicas.push(line.id.clone());
        }
    }
    by_master
}

/// 3 masters with one replica each (storage-nodes or redis-servers), and a seventh node
/// added with `redis-cli --cluster add-node --cluster-slave` as a second replica of A.
fn shards(storage: bool) -> Shards {
    let mut cluster = if storage {
        Cluster::storage_nodes_with_replicas(3)
    } else {
        Cluster::redis_with_replicas(3)
    };
    wait_replica_topology(&ports(&cluster), 3, 1);
    let a = cluster.node_for_slot(0);
    let b = cluster.node_for_slot(16383);
    let a_port = cluster.nodes[a].port;
    let spare = cluster.spare_node();
    let (ok, out) = redis_cli(&[
        "--cluster",
        "add-node",
        &format!("127.0.0.1:{}", spare.port),
        &format!("127.0.0.1:{a_port}"),
        "--cluster-slave",
        "--cluster-master-id",
        &myid(a_port),
    ]);
    assert!(ok, "{out}");
    cluster.nodes.push(spare);
    cluster.wait_until_consistent();
    cluster.wait_until_replicas_synced();
    let replicas_of = |master: usize| -> Vec<usize> {
        let port = cluster.nodes[master].port;
        (0..cluster.nodes.len())
            .filter(|&i| replicates(cluster.nodes[i].port, port))
            .collect()
    };
    let mut a_replicas = Vec::new();
    wait_until(DEADLINE, "A to have two replicas", || {
        a_replicas = replicas_of(a);
        a_replicas.len() == 2
    });
    let b_replica = replicas_of(b)[0];
    // Every node agrees: A has two working replicas, the other masters one each.
    let (a_id, b_id) = (myid(a_port), myid(cluster.nodes[b].port));
    wait_until(DEADLINE, "every node to see the replicas", || {
        cluster.nodes.iter().all(|n| {
            let seen = working_replicas(n.port);
            let counts: Vec<usize> = seen.values().map(Vec::len).collect();
            seen.get(&a_id).map(Vec::len) == Some(2)
                && seen.get(&b_id).map(Vec::len) == Some(1)
                && counts.iter().sum::<usize>() == 4
        })
    });
    Shards {
        cluster,
        a,
        a_replicas,
        b,
        b_replica,
    }
}

/// Kills B's replica and waits until every live node flags it `fail`: B is orphaned.
fn orphan_b(shards: &mut Shards) {
    let dead = shards.id(shards.b_replica);
    shards.cluster.nodes[shards.b_replica].kill();
    wait_until(DEADLINE, "every node to flag B's replica fail", || {
        shards.live_ports().iter().all(|&port| {
            cluster_nodes(port)
                .iter()
                .any(|l| l.id == dead && l.has("fail"))
        })
    });
}

/// How long a move took, from when every node flagged B's replica `fail`.
struct Moved {
    /// Until the mover's own CLUSTER NODES says it replicates B.
    decided: Duration,
    /// Until its replication link to B is up and every node sees it as B's replica.
    settled: Duration,
}

/// Waits until the replica of A with the smallest id replicates B, every live node says
/// so, and A keeps its other replica.
fn wait_smallest_moves_to_b(shards: &Shards) -> Moved {
    let started = Instant::now();
    let mover = *shards
        .a_replicas
        .iter()
        .min_by_key(|&&i| shards.id(i))
        .expect("A's replicas");
    let stayer = *shards
        .a_replicas
        .iter()
        .find(|&&i| i != mover)
        .expect("A's other replica");
    let (a_id, b_id) = (shards.id(shards.a), shards.id(shards.b));
    let (mover_id, stayer_id) = (shards.id(mover), shards.id(stayer));
    wait_until(DEADLINE, "the smallest replica of A to move to B", || {
        cluster_nodes(shards.port(mover))
            .iter()
            .any(|l| l.has("myself") && l.master == b_id)
    });
    let decided = started.elapsed();
    wait_until(DEADLINE, "every node to see the move", || {
        replicates(shards.port(mover), shards.port(shards.b))
            && shards.live_ports().iter().all(|&port| {
                let seen = working_replicas(port);
                seen.get(&b_id) == Some(&vec![mover_id.clone()])
                    && seen.get(&a_id) == Some(&vec![stayer_id.clone()])
            })
    });
    assert!(replicates(shards.port(stayer), shards.port(shards.a)));
    shards.cluster.nodes[mover].wait_for_log(
        &format!("Migrating to orphaned master {b_id}"),
        Duration::from_secs(30),
    );
    Moved {
        decided,
        settled: started.elapsed(),
    }
}

/// For well past the migration delay, no replica of A moves: every live node still sees
/// A with both its replicas and B with none working.
fn watch_nobody_moves(shards: &Shards, why: &str) {
    let (a_id, b_id) = (shards.id(shards.a), shards.id(shards.b));
    let until = Instant::now() + Duration::from_millis(MIGRATION_DELAY_MS + 2 * NODE_TIMEOUT_MS);
    while Instant::now() < until {
        for port in shards.live_ports() {
            let seen = working_replicas(port);
            assert_eq!(seen.get(&a_id).map(Vec::len), Some(2), "{why}: {seen:?}");
            assert_eq!(seen.get(&b_id).map(Vec::len), Some(0), "{why}: {seen:?}");
        }
        for &replica in &shards.a_replicas {
            assert!(
                replicates(shards.port(replica), shards.port(shards.a)),
                "{why}"
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn the_smallest_replica_of_the_richest_master_moves_to_the_orphan(storage: bool) {
    let mut shards = shards(storage);
    let killed = Instant::now();
    orphan_b(&mut shards);
    let moved = wait_smallest_moves_to_b(&shards);
    println!(
        "{}: after every node flagged B's replica fail, the smallest replica of A moved to B \
         in {} ms and was synced and seen by every node in {} ms ({} ms after the kill)",
        if storage {
            "storage-node"
        } else {
            "redis-server"
        },
        moved.decided.as_millis(),
        moved.settled.as_millis(),
        killed.elapsed().as_millis()
    );
    // The delay runs from when the mover itself saw B orphaned, at most a moment before
    // the last node flagged B's replica.
    assert!(
        moved.decided >= Duration::from_millis(MIGRATION_DELAY_MS - 1000),
        "moved before the delay"
    );
}

#[test]
fn storage_nodes_migrate_a_replica_to_an_orphaned_master() {
    the_smallest_replica_of_the_richest_master_moves_to_the_orphan(true);
}

#[test]
fn redis_servers_migrate_a_replica_to_an_orphaned_master() {
    the_smallest_replica_of_the_richest_master_moves_to_the_orphan(false);
}

/// `cluster-allow-replica-migration no`, then `cluster-migration-barrier 2`: nobody moves;
/// back to the defaults, the replica moves.
fn the_settings_keep_replicas_where_they_are(storage: bool) {
    let mut shards = shards(storage);
    shards.config_set("cluster-allow-replica-migration", "no");
    orphan_b(&mut shards);
    watch_nobody_moves(&shards, "cluster-allow-replica-migration no");
    shards.config_set("cluster-migration-barrier", "2");
    shards.config_set("cluster-allow-replica-migration", "yes");
    watch_nobody_moves(&shards, "cluster-migration-barrier 2");
    shards.config_set("cluster-migration-barrier", "1");
    wait_smallest_moves_to_b(&shards);
}

#[test]
fn storage_nodes_keep_replicas_where_the_settings_say() {
    the_settings_keep_replicas_where_they_are(true);
}

#[test]
fn redis_servers_keep_replicas_where_the_settings_say() {
    the_settings_keep_replicas_where_they_are(false);
}
