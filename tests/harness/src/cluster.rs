//! Clusters for proxy tests: real redis-server nodes (or storage-nodes) in cluster mode,
//! joined with `redis-cli --cluster create`, and the proxy in front of them.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::client::RawClient;
use crate::process::{free_port, ServerProcess};

/// How long a cluster may take to agree on its slots.
const CLUSTER_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The cluster flags every test node gets, real redis-server and storage-node alike.
const CLUSTER_FLAGS: &[&str] = &[
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "2000",
    "--cluster-require-full-coverage",
    "no",
];

/// The working directory (and so the nodes file) of the test cluster node on `port`.
pub fn node_dir(port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("slotproxy-cluster-{port}"))
}

/// An empty working directory for a new cluster node on `port`.
fn fresh_node_dir(port: u16) -> PathBuf {
    crate::process::emptied_dir(node_dir(port))
}

/// The arguments a cluster-mode storage-node on `port` gets: its own working directory
/// (which holds its nodes file) and the cluster flags. Starting a node again with the same
/// arguments brings it back with the same identity.
pub fn storage_node_args(port: u16) -> Vec<String> {
    let mut args = vec![
        "--port".to_string(),
        port.to_string(),
        "--dir".to_string(),
        node_dir(port).display().to_string(),
        // No save points, as the redis-servers of the harness.
        "--save".to_string(),
        String::new(),
    ];
    args.extend(CLUSTER_FLAGS.iter().map(|s| s.to_string()));
    args
}

/// A cluster-mode storage-node on `port`, working in [`node_dir`] (kept if it exists, so a
/// restarted node finds its nodes file).
pub fn start_storage_node(port: u16) -> ServerProcess {
    let _ = std::fs::create_dir_all(node_dir(port));
    ServerProcess::spawn(
        "storage-node",
        &crate::process::storage_node_binary(),
        &storage_node_args(port),
        port,
        "Ready to accept connections",
    )
}

/// A running cluster of masters.
pub struct Cluster {
    pub nodes: Vec<ServerProcess>,
    /// Storage-nodes rather than redis-servers (what [`spare_node`](Self::spare_node) starts).
    pub storage: bool,
}

impl Cluster {
    /// `masters` real redis-server nodes in one cluster, without replicas. Losing a master
    /// leaves the other slots serving (`cluster-require-full-coverage no`), as a proxy test
    /// of a dead node needs.
    pub fn redis(masters: usize) -> Cluster {
        let nodes: Vec<ServerProcess> = (0..masters)
            .map(|_| {
                let port = free_port();
                ServerProcess::redis_server_on(port, &fresh_node_dir(port), CLUSTER_FLAGS)
            })
            .collect();
        Self::create(nodes, false)
    }

    /// `masters` real redis-server masters with one replica each (`--cluster-replicas 1`),
    /// returned once every replica's link to its master is up. `nodes` holds the masters
    /// and the replicas; [`replica_of`](Self::replica_of) tells which is which.
    pub fn redis_with_replicas(masters: usize) -> Cluster {
        let nodes: Vec<ServerProcess> = (0..masters * 2)
            .map(|_| {
                let port = free_port();
                ServerProcess::redis_server_on(port, &fresh_node_dir(port), CLUSTER_FLAGS)
            })
            .collect();
        let cluster = Self::create_with_replicas(nodes, false, 1);
        cluster.wait_until_replicas_synced();
        cluster
    }

    /// A new cluster-mode node of the same kind on a free port, not yet part of the cluster
    /// (for add-node tests).
    pub fn spare_node(&self) -> ServerProcess {
        let port = free_port();
        let dir = fresh_node_dir(port);
        if self.storage {
            start_storage_node(port)
        } else {
            ServerProcess::redis_server_on(port, &dir, CLUSTER_FLAGS)
        }
    }

    /// Starts the node at `index` again (after a kill) on its port and in its working
    /// directory: it finds its nodes file and rejoins with the same identity, as a node
    /// restarted by an operator does.
    pub fn restart(&mut self, index: usize) {
        let port = self.nodes[index].port;
        self.nodes[index] = if self.storage {
            start_storage_node(port)
        } else {
            ServerProcess::redis_server_on(port, &node_dir(port), CLUSTER_FLAGS)
        };
    }

    /// The same as [`redis`](Self::redis), with storage-nodes instead of redis-servers.
    pub fn storage_nodes(masters: usize) -> Cluster {
        let nodes: Vec<ServerProcess> = (0..masters)
            .map(|_| {
                let port = free_port();
                fresh_node_dir(port);
                start_storage_node(port)
            })
            .collect();
        Self::create(nodes, true)
    }

    /// The same as [`redis_with_replicas`](Self::redis_with_replicas), with storage-nodes.
    pub fn storage_nodes_with_replicas(masters: usize) -> Cluster {
        let nodes: Vec<ServerProcess> = (0..masters * 2)
            .map(|_| {
                let port = free_port();
                fresh_node_dir(port);
                start_storage_node(port)
            })
            .collect();
        let cluster = Self::create_with_replicas(nodes, true, 1);
        cluster.wait_until_replicas_synced();
        cluster
    }

    /// Joins fresh nodes with `redis-cli --cluster create` and waits until they agree.
    fn create(nodes: Vec<ServerProcess>, storage: bool) -> Cluster {
        Self::create_with_replicas(nodes, storage, 0)
    }

    /// Joins fresh nodes, `replicas` per master, and waits until they agree.
    fn create_with_replicas(nodes: Vec<ServerProcess>, storage: bool, replicas: usize) -> Cluster {
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let output = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            output.status.success(),
            "cluster create failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = Cluster { nodes, storage };
        cluster.wait_until_consistent();
        cluster
    }

    pub fn seeds(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect()
    }

    /// Waits (bounded) until every live node says `cluster_state:ok` and knows all others.
    pub fn wait_until_consistent(&self) {
        let deadline = Instant::now() + CLUSTER_READY_TIMEOUT;
        loop {
            let ok = self.nodes.iter().all(|n| {
                let mut c = RawClient::connect(n.port);
                let info = c.call(&["CLUSTER", "INFO"]);
                let text = String::from_utf8_lossy(info.as_bytes().unwrap_or(b"")).into_owned();
                text.contains("cluster_state:ok")
                    && text.contains(&format!("cluster_known_nodes:{}", self.nodes.len()))
            });
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cluster did not become consistent"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (bounded) until every replica reports its link to its master up.
    pub fn wait_until_replicas_synced(&self) {
        let deadline = Instant::now() + CLUSTER_READY_TIMEOUT;
        for node in &self.nodes {
            loop {
                let mut c = RawClient::connect(node.port);
                let info = c.call(&["INFO", "replication"]);
                let text = String::from_utf8_lossy(info.as_bytes().unwrap_or(b"")).into_owned();
                if text.contains("role:master") || text.contains("master_link_status:up") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "replica on port {} did not sync: {text}",
                    node.port
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// The index in `nodes` of a replica of the master at index `master`, by asking every
    /// node its `ROLE`.
    pub fn replica_of(&self, master: usize) -> Option<usize> {
        let master_port = self.nodes[master].port as i64;
        self.nodes.iter().position(|n| {
            let mut c = RawClient::connect(n.port);
            let role = c.call(&["ROLE"]);
            let items = role.as_array().unwrap_or(&[]);
            items.first().and_then(|r| r.as_bytes()) == Some(&b"slave"[..])
                && items.get(2).and_then(|p| p.as_integer()) == Some(master_port)
        })
    }

    /// The node serving `slot`, by index into `nodes`.
    pub fn node_for_slot(&self, slot: u16) -> usize {
        let mut c = RawClient::connect(self.nodes[0].port);
        let slots = c.call(&["CLUSTER", "SLOTS"]);
        for range in slots.as_array().unwrap_or(&[]) {
            let items = range.as_array().unwrap_or(&[]);
            let (Some(start), Some(end)) = (items[0].as_integer(), items[1].as_integer()) else {
                continue;
            };
            if (start..=end).contains(&(slot as i64)) {
                let port = items[2]
                    .as_array()
                    .and_then(|m| m[1].as_integer())
                    .unwrap_or(0);
                return self
                    .nodes
                    .iter()
                    .position(|n| n.port as i64 == port)
                    .expect("known node");
            }
        }
        panic!("slot {slot} not served");
    }
}

/// The slotproxy binary built next to the test.
pub fn proxy_binary() -> PathBuf {
    if let Ok(path) = std::env::var("SLOTPROXY_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>/deps");
    profile_dir.join("slotproxy")
}

/// A proxy on a free port in front of `seeds`, with extra flags.
pub fn start_proxy(seeds: &[String], extra: &[&str]) -> ServerProcess {
    let port = free_port();
    // The admin endpoint on an ephemeral port; `admin_port` reads it back from the log.
    let mut args = vec![
        "--listen".to_string(),
        format!("127.0.0.1:{port}"),
        "--admin".to_string(),
        "127.0.0.1:0".to_string(),
    ];
    for seed in seeds {
        args.push("--seed".into());
        args.push(seed.clone());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    ServerProcess::spawn(
        "slotproxy",
        &proxy_binary(),
        &args,
        port,
        "Ready to accept connections",
    )
}

/// Writes a proxy configuration file: `listen` on `port`, the admin endpoint on an
/// ephemeral port (plus `admin_extra`, lines indented under `admin:`), `seeds`, then the
/// top-level sections in `extra`.
pub fn write_proxy_config(
    path: &std::path::Path,
    port: u16,
    seeds: &[String],
    admin_extra: &str,
    extra: &str,
) {
    let seeds: Vec<String> = seeds.iter().map(|s| format!("  - {s}")).collect();
    let text = format!(
        "listen: 127.0.0.1:{port}\nadmin:\n  listen: 127.0.0.1:0\n{admin_extra}seeds:\n{}\n{extra}",
        seeds.join("\n")
    );
    std::fs::write(path, text).expect("write the proxy configuration");
}

/// A proxy started from the configuration file at `path`, listening on `port`.
pub fn start_proxy_from(path: &std::path::Path, port: u16) -> ServerProcess {
    let args = vec!["--config".to_string(), path.display().to_string()];
    ServerProcess::spawn(
        "slotproxy",
        &proxy_binary(),
        &args,
        port,
        "Ready to accept connections",
    )
}

/// A proxy on a free port, configured by a file in a fresh directory (see
/// [`write_proxy_config`]); returns it and the file's path, for reloads.
pub fn start_proxy_with_config(
    seeds: &[String],
    admin_extra: &str,
    extra: &str,
) -> (ServerProcess, PathBuf) {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("slotproxy-config-{port}"));
    std::fs::create_dir_all(&dir).expect("config dir");
    let path = dir.join("slotproxy.yaml");
    write_proxy_config(&path, port, seeds, admin_extra, extra);
    (start_proxy_from(&path, port), path)
}

/// One test per backend for a scenario that takes the cluster and the proxy's port: a real
/// Redis Cluster and a storage-node cluster, 3 masters each, with a proxy started with
/// `$flags` in front.
#[macro_export]
macro_rules! on_both_backends {
    // `start` makes the proxy for a cluster; the scenario gets the cluster and the proxy.
    ($name:ident, start = $start:expr, $scenario:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn redis_cluster() {
                #[allow(unused_mut)]
                let mut cluster = $crate::Cluster::redis(3);
                let proxy: $crate::ServerProcess = ($start)(&cluster);
                #[allow(clippy::redundant_closure_call)]
                ($scenario)(&mut cluster, &proxy);
            }

            #[test]
            fn storage_nodes() {
                #[allow(unused_mut)]
                let mut cluster = $crate::Cluster::storage_nodes(3);
                let proxy: $crate::ServerProcess = ($start)(&cluster);
                #[allow(clippy::redundant_closure_call)]
                ($scenario)(&mut cluster, &proxy);
            }
        }
    };
    // A proxy started with command-line `$flags`; the scenario gets the cluster and its port.
    ($name:ident, $flags:expr, $scenario:expr) => {
        $crate::on_both_backends!(
            $name,
            start = |cluster: &$crate::Cluster| $crate::start_proxy(&cluster.seeds(), $flags),
            |cluster: &mut $crate::Cluster, proxy: &$crate::ServerProcess| {
                #[allow(clippy::redundant_closure_call)]
                ($scenario)(cluster, proxy.port)
            }
        );
    };
}
