//! `slotproxy --local N`: the embedded default starts its own storage-node cluster, serves
//! in front of it, restarts a node that dies, and stops everything on Ctrl-C.

use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::cluster::proxy_binary;
use test_harness::http::get;
use test_harness::process::free_port;
use test_harness::{signal, wait_until, RawClient, ServerProcess};

/// A `slotproxy --local` process. Dropping it stops it with SIGTERM, so that it stops its
/// nodes (by PID) before the harness's SIGKILL: a proxy killed outright would leave its
/// nodes running, even when the test fails halfway.
struct LocalProxy(ServerProcess);

impl std::ops::Deref for LocalProxy {
    type Target = ServerProcess;
    fn deref(&self) -> &ServerProcess {
        &self.0
    }
}

impl std::ops::DerefMut for LocalProxy {
    fn deref_mut(&mut self) -> &mut ServerProcess {
        &mut self.0
    }
}

impl Drop for LocalProxy {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.pid().to_string()])
            .status();
        self.0.wait_exit(Duration::from_secs(15));
    }
}

/// Starts `slotproxy --local 3`; returns it, its client port and its nodes' ports.
fn start_local() -> (LocalProxy, u16, Vec<u16>) {
    let port = free_port();
    let args: Vec<String> = [
        "--local",
        "3",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--admin",
        "127.0.0.1:0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let proxy = ServerProcess::spawn(
        "slotproxy-local",
        &proxy_binary(),
        &args,
        port,
        "Ready to accept connections",
    );
    let node_ports: Vec<u16> = proxy
        .log()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Local cluster: 3 storage-nodes on ")
                .map(str::to_string)
        })
        .expect("the proxy lists its nodes")
        .split(", ")
        .filter_map(|addr| addr.rsplit(':').next()?.parse().ok())
        .collect();
    assert_eq!(node_ports.len(), 3);
    (LocalProxy(proxy), port, node_ports)
}

#[test]
fn local_cluster_serves_and_stops_on_ctrl_c() {
    let (mut proxy, port, node_ports) = start_local();
    let mut client = RawClient::connect(port);
    let mut mset = vec!["MSET".to_string()];
    for i in 0..300 {
        mset.push(format!("local:{i}"));
        mset.push(i.to_string());
    }
    let refs: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(client.call(&refs), Frame::Simple("OK".into()));
    assert_eq!(client.call(&["DBSIZE"]), Frame::Integer(300));
    assert_eq!(client.call(&["GET", "local:7"]), Frame::bulk("7"));
    // Every node holds a share: the slots really are spread.
    for &node in &node_ports {
        let keys = RawClient::connect(node).call(&["DBSIZE"]);
        assert!(
            matches!(keys, Frame::Integer(n) if n > 0),
            "node {node}: {keys:?}"
        );
    }
    proxy.signal("INT");
    assert!(
        proxy.wait_exit(Duration::from_secs(15)),
        "slotproxy did not exit on SIGINT"
    );
    for &node in &node_ports {
        assert!(
            TcpStream::connect(("127.0.0.1", node)).is_err(),
            "node {node} still running"
        );
    }
}

/// `INFO server`'s `process_id` of the node on `port`, if it answers.
fn node_pid(port: u16) -> Option<u32> {
    let stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut node = RawClient::from_stream(stream);
    node.send(&[b"INFO", b"server"]);
    let (Frame::Bulk(text), _) = node.try_read_reply()? else {
        return None;
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
}

/// The node's id and the slot ranges it owns, from its own `CLUSTER NODES` line.
fn identity(port: u16) -> (String, Vec<String>) {
    let Frame::Bulk(text) = RawClient::connect(port).call(&["CLUSTER", "NODES"]) else {
        panic!("CLUSTER NODES is not a bulk string");
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    let line = text
        .lines()
        .find(|l| l.contains("myself"))
        .expect("a myself line");
    let words: Vec<&str> = line.split(' ').collect();
    let slots = words[8..].iter().map(|w| w.to_string()).collect();
    (words[0].to_string(), slots)
}

/// One key in each of the 16384 slots.
fn key_per_slot() -> Vec<String> {
    let mut keys: Vec<Option<String>> = vec![None; 16384];
    let mut missing = keys.len();
    for i in 0..10_000_000u64 {
        let key = format!("slot-key:{i}");
        let slot = slotproxy::cluster::key_slot(key.as_bytes()) as usize;
        if keys[slot].is_none() {
            keys[slot] = Some(key);
            missing -= 1;
            if missing == 0 {
                break;
            }
        }
    }
    keys.into_iter()
        .map(|k| k.expect("a key for every slot"))
        .collect()
}

/// A node killed with SIGKILL is reported (console, /health, /ready 503) and restarted on
/// its port with its id and slots, and the proxy serves every slot again. While the test
/// holds the node's port, restarts fail: that keeps the node down long enough to observe,
/// and shows the retries backing off.
#[test]
fn a_killed_local_node_is_restarted_with_its_id_and_slots() {
    let (proxy, port, node_ports) = start_local();
    let admin = proxy
        .admin_port()
        .expect("the proxy announces its admin port");
    wait_until(Duration::from_secs(30), "/ready before the kill", || {
        get(admin, "/ready").status == 200
    });
    let victim = node_ports[1];
    let (id, slots) = identity(victim);
    assert!(!slots.is_empty());
    // A value in every slot before the kill: the node's AOF brings its share back.
    let keys = key_per_slot();
    let mset = |prefix: &str| -> Vec<String> {
        let mut args = vec!["MSET".to_string()];
        for key in &keys {
            args.push(key.clone());
            args.push(format!("{prefix}-{key}"));
        }
        args
    };
    let mget_expected = |prefix: &str| -> Frame {
        Frame::Array(
            keys.iter()
                .map(|k| Frame::bulk(format!("{prefix}-{k}")))
                .collect(),
        )
    };
    let mut mget = vec!["MGET"];
    mget.extend(keys.iter().map(String::as_str));
    let before = mset("v");
    let before: Vec<&str> = before.iter().map(String::as_str).collect();
    let mut client = RawClient::connect(port);
    assert_eq!(client.call(&before), Frame::Simple("OK".into()));

    // The supervisor may restart the node before the test grabs the port: then kill again.
    let mut holder = None;
    let mut killed = Vec::new();
    for _ in 0..5 {
        let pid = node_pid(victim).expect("the node answers INFO");
        killed.push(pid);
        signal(pid, "KILL");
        let deadline = Instant::now() + Duration::from_secs(30);
        while holder.is_none() {
            if let Ok(listener) = TcpListener::bind(("127.0.0.1", victim)) {
                holder = Some(listener);
            } else if node_pid(victim).is_some_and(|now| now != pid) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "port {victim} neither freed nor served"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        if holder.is_some() {
            break;
        }
    }
    let holder = holder.expect("the test got hold of the killed node's port");
    let pid = *killed.last().expect("a pid");

    let exited = format!("storage-node on port {victim} (pid {pid}) killed by signal 9");
    wait_until(Duration::from_secs(30), &exited, || {
        proxy.log().contains(&exited)
    });
    let ready = get(admin, "/ready");
    assert_eq!(ready.status, 503, "{}", ready.body);
    let body: serde_json::Value = serde_json::from_str(&ready.body).expect("JSON");
    assert_eq!(body["local_nodes_down"], serde_json::json!([victim]));
    let health = get(admin, "/health");
    assert_eq!(health.status, 200, "liveness stays 200: {}", health.body);
    let body: serde_json::Value = serde_json::from_str(&health.body).expect("JSON");
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["ready"], false);
    let node = |body: &serde_json::Value| -> serde_json::Value {
        body["local_nodes"]
            .as_array()
            .and_then(|nodes| nodes.iter().find(|n| n["port"] == victim).cloned())
            .expect("the victim in local_nodes")
    };
    assert_eq!(node(&body)["running"], false);

    // Restarts fail while the port is held; each retry waits twice as long as the one before.
    let failed = format!("storage-node on port {victim} did not restart");
    wait_until(Duration::from_secs(60), "two failed restarts", || {
        proxy.log().matches(&failed).count() >= 2
    });
    let log = proxy.log();
    let delays: Vec<u64> = log
        .lines()
        .filter(|l| l.contains(&failed))
        .filter_map(|l| {
            l.split("next attempt in ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(delays.len() >= 2, "{log}");
    assert_eq!(delays[1], delays[0] * 2, "backoff doubles: {delays:?}");
    drop(holder);

    wait_until(Duration::from_secs(60), "/ready after the restart", || {
        get(admin, "/ready").status == 200
    });
    let body: serde_json::Value = serde_json::from_str(&get(admin, "/health").body).expect("JSON");
    assert_eq!(body["status"], "ok");
    let restarted = node(&body);
    assert_eq!(restarted["running"], true);
    assert!(restarted["restarts"].as_u64() >= Some(1), "{restarted}");
    let new_pid = node_pid(victim).expect("the restarted node answers");
    assert!(!killed.contains(&new_pid));
    assert_eq!(restarted["pid"], new_pid);
    assert_eq!(
        identity(victim),
        (id, slots),
        "same id and slots after the restart"
    );

    // Every slot is served through the proxy again, with the values written before the
    // kill (the first requests may still meet a connection the kill broke, after which the
    // proxy reconnects and refreshes).
    let mut client = RawClient::connect(port);
    let expected = mget_expected("v");
    let mut last = Frame::Null;
    wait_until(
        Duration::from_secs(60),
        "every value back after the restart",
        || {
            last = client.call(&mget);
            !last.is_error()
        },
    );
    assert_eq!(last, expected, "values written before the kill");
    let after = mset("w");
    let after: Vec<&str> = after.iter().map(String::as_str).collect();
    assert_eq!(client.call(&after), Frame::Simple("OK".into()));
    assert_eq!(client.call(&mget), mget_expected("w"));
    // Stopping the proxy stops the restarted node too.
    drop(proxy);
    for &node in &node_ports {
        assert!(
            TcpStream::connect(("127.0.0.1", node)).is_err(),
            "node {node} still running after the proxy stopped"
        );
    }
}
