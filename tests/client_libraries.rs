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
use std::time::{Duration, Instant};

use client_libraries::redis_crate::{self, Target};
use test_harness::{start_proxy, Cluster};

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
    // Output to a file, not a pipe: a pipe nobody reads while waiting could fill and stall it.
    let log_path = std::env::temp_dir().join(format!("slotproxy-redis-py-{proxy_port}.log"));
    let log = std::fs::File::create(&log_path).expect("redis-py log file");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg("--port")
        .arg(proxy_port.to_string())
        .arg("--nodes")
        .arg(nodes.join(","))
        .stdout(log.try_clone().expect("log file"))
        .stderr(log)
        .spawn()
        .expect("start python3 (redis-py scenarios)");
    let deadline = Instant::now() + PYTHON_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for python3") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the redis-py session did not finish within {PYTHON_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        status.success(),
        "the redis-py session failed ({status}):\n{output}"
    );
    let _ = std::fs::remove_file(&log_path);
}

#[test]
fn redis_cluster() {
    run_both_libraries(&Cluster::redis(3));
}

#[test]
fn storage_nodes() {
    run_both_libraries(&Cluster::storage_nodes(3));
}
