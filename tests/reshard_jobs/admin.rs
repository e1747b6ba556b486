//! Talking to the admin API and inspecting the cluster from the tests.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_harness::http::{get, request};
use test_harness::process::free_port;
use test_harness::{start_proxy, Cluster, RawClient, ServerProcess};

/// The admin token the test proxies are configured with.
pub const TOKEN: &str = "reshard-test-token";

/// A proxy in front of `cluster` with [`TOKEN`] configured (through a config file, like an
/// operator would), and its admin port.
pub fn proxy_with_token(seeds: &[String]) -> (ServerProcess, u16) {
    let dir = std::env::temp_dir().join(format!("slotproxy-reshard-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("config dir");
    let path = dir.join("slotproxy.yaml");
    std::fs::write(&path, format!("admin:\n  token: {TOKEN}\n")).expect("write config");
    let path = path.display().to_string();
    let proxy = start_proxy(seeds, &["--config", &path]);
    let admin = proxy.admin_port().expect("admin port announced");
    (proxy, admin)
}

/// POST/DELETE with the token; status and parsed body.
pub fn call(admin: u16, method: &str, path: &str, body: &str) -> (u16, Value) {
    let reply = request(admin, method, path, Some(TOKEN), body);
    let value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (reply.status, value)
}

pub fn job(admin: u16, id: &str) -> Value {
    let reply = get(admin, &format!("/v1/jobs/{id}"));
    assert_eq!(reply.status, 200, "{reply:?}");
    serde_json::from_str(&reply.body).expect("job JSON")
}

/// Starts a job and returns its id (asserting 202).
pub fn start_job(admin: u16, method: &str, path: &str, body: &str) -> String {
    let (status, value) = call(admin, method, path, body);
    assert_eq!(status, 202, "{method} {path} {body}: {value}");
    value["id"].as_str().expect("job id").to_string()
}

/// Polls a job until it is done or failed (bounded); returns its last JSON.
pub fn wait_job(admin: u16, id: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let value = job(admin, id);
        match value["state"].as_str() {
            Some("done") | Some("failed") => return value,
            _ => {}
        }
        assert!(Instant::now() < deadline, "job {id} not finished: {value}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs a job to the end and asserts it succeeded.
pub fn run_job(admin: u16, method: &str, path: &str, body: &str) -> Value {
    let id = start_job(admin, method, path, body);
    let done = wait_job(admin, &id, Duration::from_secs(300));
    assert_eq!(done["state"], "done", "{done}");
    done
}

pub fn cluster_nodes(port: u16) -> String {
    let mut c = RawClient::connect(port);
    let frame = c.call(&["CLUSTER", "NODES"]);
    String::from_utf8_lossy(frame.as_bytes().unwrap_or(b"")).into_owned()
}

pub fn node_id(port: u16) -> String {
    cluster_nodes(port)
        .lines()
        .find(|l| l.contains("myself"))
        .and_then(|l| l.split_whitespace().next())
        .expect("myself line")
        .to_string()
}

/// Slots `id` owns, as `port`'s node sees it.
pub fn slot_count(port: u16, id: &str) -> usize {
    let nodes = cluster_nodes(port);
    let Some(line) = nodes.lines().find(|l| l.starts_with(id)) else {
        return 0;
    };
    line.split_whitespace()
        .skip(8)
        .filter(|w| !w.starts_with('['))
        .map(|w| match w.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap_or(0) - a.parse::<usize>().unwrap_or(0) + 1,
            None => 1,
        })
        .sum()
}

/// Every `[slot->-id]` / `[slot-<-id]` any of `ports` shows.
pub fn open_slots(ports: &[u16]) -> Vec<String> {
    ports
        .iter()
        .flat_map(|&p| {
            cluster_nodes(p)
                .split_whitespace()
                .filter(|w| w.starts_with('['))
                .map(|w| format!("{p}: {w}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `redis-cli --cluster check` through `port` reports no problem.
pub fn assert_cluster_check_clean(port: u16) {
    let output = Command::new("redis-cli")
        .args(["--cluster", "check", &format!("127.0.0.1:{port}")])
        .output()
        .expect("run redis-cli --cluster check");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success()
            && text.contains("[OK] All nodes agree about slots configuration.")
            && text.contains("[OK] All 16384 slots covered.")
            && !text.contains("[WARNING]")
            && !text.contains("[ERR]"),
        "cluster check not clean:\n{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

pub fn ports(cluster: &Cluster) -> Vec<u16> {
    cluster.nodes.iter().map(|n| n.port).collect()
}
