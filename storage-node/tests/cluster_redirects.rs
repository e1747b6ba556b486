//! MOVED, ASK, TRYAGAIN, CROSSSLOT and CLUSTERDOWN during a hand-driven slot migration:
//! the same steps run on a two-node storage-node cluster and a two-node redis-server
//! cluster, and every reply must be the same once node ids and ports are replaced by
//! placeholders.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use test_harness::{RawClient, ServerProcess};

#[derive(Clone, Copy)]
enum Kind {
    StorageNode,
    Redis,
}

/// Two masters: node 0 serves slots 0-8191, node 1 serves 8192-16383.
struct Pair {
    _nodes: Vec<ServerProcess>,
    ports: Vec<u16>,
    ids: Vec<String>,
    clients: Vec<RawClient>,
}

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

fn start_node(kind: Kind) -> ServerProcess {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    match kind {
        Kind::Redis => ServerProcess::redis_server(&[
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            "2000",
        ]),
        Kind::StorageNode => {
            let dir = std::env::temp_dir().join(format!(
                "storage-node-cluster-redirects-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("node dir");
            let dir = dir.display().to_string();
            ServerProcess::storage_node(&[
                "--dir",
                &dir,
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "2000",
            ])
        }
    }
}

impl Pair {
    fn start(kind: Kind) -> Pair {
        let nodes = vec![start_node(kind), start_node(kind)];
        let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
        let mut clients: Vec<RawClient> = ports.iter().map(|&p| RawClient::connect(p)).collect();
        let ids: Vec<String> = clients
            .iter_mut()
            .map(|c| text(c.call(&["CLUSTER", "MYID"]).as_bytes().expect("id")))
            .collect();
        clients[0].call(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]);
        clients[1].call(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]);
        clients[0].call(&["CLUSTER", "SET-CONFIG-EPOCH", "1"]);
        clients[1].call(&["CLUSTER", "SET-CONFIG-EPOCH", "2"]);
        let port0 = ports[0].to_string();
        clients[1].call(&["CLUSTER", "MEET", "127.0.0.1", &port0]);
        let mut pair = Pair {
            _nodes: nodes,
            ports,
            ids,
            clients,
        };
        pair.wait_until(|info| {
            info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:2")
        });
        pair
    }

    /// Waits (bounded) until every node's CLUSTER INFO satisfies `done`.
    fn wait_until(&mut self, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let all = self.clients.iter_mut().all(|c| {
                let info = c.call(&["CLUSTER", "INFO"]);
                done(&text(info.as_bytes().unwrap_or(b"")))
            });
            if all {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not settle");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Fills `{ID0}`, `{ID1}`, `{PORT0}`, `{PORT1}` in an argument.
    fn fill(&self, arg: &str) -> String {
        let mut arg = arg.to_string();
        for i in 0..2 {
            arg = arg
                .replace(&format!("{{ID{i}}}"), &self.ids[i])
                .replace(&format!("{{PORT{i}}}"), &self.ports[i].to_string());
        }
        arg
    }

    /// Sends a command to node `i` and returns its raw reply with ids and ports replaced.
    fn run(&mut self, i: usize, args: &[&str]) -> String {
        let filled: Vec<String> = args.iter().map(|a| self.fill(a)).collect();
        let bytes: Vec<&[u8]> = filled.iter().map(|a| a.as_bytes()).collect();
        let mut reply = text(&self.clients[i].call_raw(&bytes));
        for n in 0..2 {
            reply = reply
                .replace(&self.ids[n], &format!("<ID{n}>"))
                .replace(
                    &(self.ports[n] as u32 + 10000).to_string(),
                    &format!("<CPORT{n}>"),
                )
                .replace(&self.ports[n].to_string(), &format!("<PORT{n}>"));
        }
        reply
    }
}

/// Runs the steps on both clusters and compares every reply.
fn compare(steps: &[(usize, &[&str])]) {
    let mut node = Pair::start(Kind::StorageNode);
    let mut redis = Pair::start(Kind::Redis);
    for (i, args) in steps {
        let a = node.run(*i, args);
        let b = redis.run(*i, args);
        assert_eq!(a, b, "node {i}: {args:?}");
    }
}

// Slots: "bar" 5061 and "{bar}..." on node 0; "foo" 12182 on node 1.
#[test]
fn moved_and_crossslot() {
    compare(&[
        (0, &["SET", "bar", "1"]),
        (0, &["GET", "foo"]),
        (0, &["SET", "foo", "x"]),
        (1, &["GET", "bar"]),
        (1, &["SET", "foo", "2"]),
        (0, &["MGET", "bar", "foo"]),
        (0, &["MGET", "bar", "{bar}x"]),
        (1, &["MSET", "{bar}a", "1", "{bar}b", "2"]),
        (0, &["DEL", "{bar}a", "{bar}b", "bar"]),
        (1, &["EXISTS", "foo", "foo"]),
        (0, &["CLUSTER", "COUNTKEYSINSLOT", "12182"]),
        (1, &["CLUSTER", "COUNTKEYSINSLOT", "12182"]),
        (0, &["READONLY"]),
        (0, &["GET", "foo"]),
        (0, &["ASKING"]),
        (0, &["GET", "foo"]),
        (0, &["CLUSTER", "SLOTS"]),
        // A GEO search's STORE destination counts as a key.
        (0, &["GEOADD", "{bar}g", "13.361389", "38.115556", "p"]),
        (
            0,
            &[
                "GEORADIUS",
                "{bar}g",
                "13",
                "38",
                "100",
                "km",
                "STORE",
                "foo",
            ],
        ),
        (
            0,
            &[
                "GEORADIUS",
                "{bar}g",
                "13",
                "38",
                "100",
                "km",
                "STORE",
                "{bar}d",
            ],
        ),
        (
            0,
            &[
                "GEOSEARCHSTORE",
                "foo",
                "{bar}g",
                "FROMMEMBER",
                "p",
                "BYRADIUS",
                "1",
                "km",
            ],
        ),
        (
            1,
            &[
                "GEOSEARCH",
                "{bar}g",
                "FROMMEMBER",
                "p",
                "BYRADIUS",
                "1",
                "km",
            ],
        ),
        (1, &["GEORADIUS_RO", "{bar}g", "13", "38", "100", "km"]),
    ]);
}

#[test]
fn ask_and_tryagain_during_a_migration() {
    compare(&[
        (0, &["SET", "{bar}1", "one"]),
        (0, &["SET", "{bar}2", "two"]),
        (1, &["CLUSTER", "SETSLOT", "5061", "IMPORTING", "{ID0}"]),
        (0, &["CLUSTER", "SETSLOT", "5061", "MIGRATING", "{ID1}"]),
        (0, &["GET", "{bar}1"]),
        (0, &["GET", "{bar}3"]),
        (0, &["SET", "{bar}3", "x"]),
        (0, &["MGET", "{bar}1", "{bar}3"]),
        (0, &["MGET", "{bar}1", "{bar}2"]),
        (1, &["GET", "{bar}1"]),
        (1, &["ASKING"]),
        (1, &["GET", "{bar}1"]),
        (1, &["GET", "{bar}1"]),
        (1, &["ASKING"]),
        (1, &["MGET", "{bar}1", "{bar}2"]),
        (1, &["ASKING"]),
        (1, &["PING"]),
        (1, &["GET", "{bar}1"]),
        (1, &["ASKING"]),
        (1, &["NOSUCHCOMMAND"]),
        (1, &["GET", "{bar}1"]),
        (
            0,
            &[
                "MIGRATE",
                "127.0.0.1",
                "{PORT1}",
                "",
                "0",
                "5000",
                "KEYS",
                "{bar}1",
            ],
        ),
        (0, &["GET", "{bar}1"]),
        (0, &["EXISTS", "{bar}2"]),
        (0, &["MGET", "{bar}1", "{bar}2"]),
        (1, &["ASKING"]),
        (1, &["GET", "{bar}1"]),
        (1, &["ASKING"]),
        (1, &["MGET", "{bar}1", "{bar}2"]),
        (1, &["ASKING"]),
        (1, &["MGET", "{bar}1", "{bar}1"]),
        (1, &["CLUSTER", "COUNTKEYSINSLOT", "5061"]),
        (
            0,
            &["MIGRATE", "127.0.0.1", "{PORT1}", "{bar}2", "0", "5000"],
        ),
        (
            0,
            &["MIGRATE", "127.0.0.1", "{PORT1}", "{bar}2", "0", "5000"],
        ),
        (0, &["SET", "{bar}2", "again"]),
        (
            0,
            &["MIGRATE", "127.0.0.1", "{PORT1}", "{bar}2", "0", "5000"],
        ),
        (
            0,
            &[
                "MIGRATE",
                "127.0.0.1",
                "{PORT1}",
                "{bar}2",
                "0",
                "5000",
                "COPY",
                "REPLACE",
            ],
        ),
        (0, &["GET", "{bar}2"]),
        (
            0,
            &[
                "MIGRATE",
                "127.0.0.1",
                "{PORT1}",
                "{bar}2",
                "0",
                "5000",
                "REPLACE",
            ],
        ),
        (1, &["CLUSTER", "SETSLOT", "5061", "NODE", "{ID1}"]),
        (0, &["CLUSTER", "SETSLOT", "5061", "NODE", "{ID1}"]),
        (0, &["GET", "{bar}1"]),
        (1, &["GET", "{bar}1"]),
        (1, &["GET", "{bar}2"]),
        (0, &["CLUSTER", "COUNTKEYSINSLOT", "5061"]),
        (1, &["CLUSTER", "SETSLOT", "5061", "NODE", "{ID0}"]),
    ]);
}

#[test]
fn unserved_slots_and_a_down_cluster() {
    compare(&[
        (0, &["CLUSTER", "DELSLOTS", "5061"]),
        (0, &["GET", "bar"]),
        (0, &["GET", "{bar}x"]),
        (0, &["GET", "x"]),
        (0, &["PING"]),
        (0, &["CLUSTER", "ADDSLOTS", "5061"]),
        (0, &["CLUSTER", "SETSLOT", "5061", "STABLE"]),
    ]);
}
