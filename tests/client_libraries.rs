//! Real client libraries through slotproxy, in front of a real Redis Cluster and of a
//! storage-node cluster: the Rust `redis` crate (a dev-dependency) runs in this process, and
//! redis-py runs `tests/client_libraries/redis_py_session.py` as a subprocess (`.ci/run`
//! installs it; a missing redis-py fails the test, it is never skipped). Both libraries run
//! every scenario in RESP2 and in RESP3.

mod client_libraries {
    pub mod redis_crate;
}

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use client_libraries::redis_crate::{self, Target};
use test_harness::{run_logged, start_proxy, Cluster};

/// How long the whole redis-py session may take (it takes seconds; this is for a loaded
/// machine).
const PYTHON_LIMIT: Duration = Duration::from_secs(600);

fn run_both_libraries(cluster: &Cluster) {
    let proxy = start_proxy(&cluster.seeds(), &[]);
    let node_ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    for resp3 in [false, true] {
        redis_crate::run_all(&Target {
            proxy_port: proxy.port,
            node_ports: node_ports.clone(),
            resp3,
        });
    }
    run_redis_py(proxy.port, &node_ports);
}

/// Runs the redis-py session and fails with its output unless it exits with 0.
fn run_redis_py(proxy_port: u16, node_ports: &[u16]) {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/client_libraries/redis_py_session.py");
    let nodes: Vec<String> = node_ports.iter().map(|p| p.to_string()).collect();
    let mut python = Command::new("python3");
    python
        .arg(&script)
        .arg("--port")
        .arg(proxy_port.to_string())
        .arg("--nodes")
        .arg(nodes.join(","));
    let (status, output) = run_logged(python, "slotproxy-redis-py", PYTHON_LIMIT);
    assert!(
        status.success(),
        "the redis-py session failed ({status}):\n{output}"
    );
}

#[test]
fn redis_cluster() {
    run_both_libraries(&Cluster::redis(3));
}

#[test]
fn storage_nodes() {
    run_both_libraries(&Cluster::storage_nodes(3));
}
