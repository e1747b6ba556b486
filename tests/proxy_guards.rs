//! The proxy's operating guards: deny list, client cap, idle timeout, request size, SIGHUP
//! reload of live settings, and configuration errors that name the field and line.

use std::process::Command;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::cluster::{proxy_binary, start_proxy_from, write_proxy_config};
use test_harness::process::free_port;
use test_harness::{Cluster, RawClient, ServerProcess};

fn write_config(path: &std::path::Path, listen_port: u16, seeds: &[String], extra: &str) {
    write_proxy_config(path, listen_port, seeds, "", extra);
}

fn start_with_config(path: &std::path::Path, port: u16) -> ServerProcess {
    start_proxy_from(path, port)
}

/// Waits (bounded) for the server to close the connection.
fn closed_within(client: &mut RawClient, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if client.try_read_reply().is_none() {
            return true;
        }
    }
    false
}

#[test]
fn guards_hold_and_reload_on_sighup() {
    let cluster = Cluster::redis(3);
    let dir = std::env::temp_dir().join(format!("slotproxy-guards-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("slotproxy.yaml");
    let port = free_port();
    let limits = "limits:\n  max_clients: 4\n  max_request_bytes: 100000\n";
    write_config(
        &path,
        port,
        &cluster.seeds(),
        &format!("deny_commands: [KEYS, flushall]\n{limits}"),
    );
    let proxy = start_with_config(&path, port);

    let mut c = RawClient::connect(port);
    assert_eq!(
        c.call(&["KEYS", "*"]),
        Frame::Error("ERR slotproxy: command 'keys' is denied by configuration".into())
    );
    assert!(c.call(&["FLUSHALL"]).is_error());
    assert_eq!(c.call(&["SET", "guard", "1"]), Frame::Simple("OK".into()));

    // Client cap: `c` and three more make four; the fifth is refused.
    let mut held: Vec<RawClient> = (0..3).map(|_| RawClient::connect(port)).collect();
    for h in held.iter_mut() {
        assert_eq!(h.call(&["PING"]), Frame::Simple("PONG".into()));
    }
    let mut refused = RawClient::connect(port);
    assert_eq!(
        refused.read_reply().0,
        Frame::Error("ERR max number of clients reached".into())
    );
    drop(held);
    drop(refused);
    // The freed places are usable again (the proxy notices the closes asynchronously).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = RawClient::connect(port);
        if again.call(&["PING"]) == Frame::Simple("PONG".into()) {
            break;
        }
        assert!(Instant::now() < deadline, "client places not freed");
    }

    // A request over max_request_bytes is refused and the connection closed.
    let mut big = RawClient::connect(port);
    let value = vec![b'x'; 200_000];
    big.send(&[b"SET", b"big", &value]);
    let (reply, _) = big.read_reply();
    assert!(
        matches!(&reply, Frame::Error(e) if e.starts_with(b"ERR slotproxy: request larger")),
        "{reply:?}"
    );
    assert!(closed_within(&mut big, Duration::from_secs(5)));

    // SIGHUP reloads the deny list.
    write_config(
        &path,
        port,
        &cluster.seeds(),
        &format!("deny_commands: [flushall]\n{limits}"),
    );
    proxy.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut c = RawClient::connect(port);
        if !c.call(&["KEYS", "guard"]).is_error() {
            break;
        }
        assert!(Instant::now() < deadline, "deny list not reloaded");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn idle_clients_are_closed() {
    let cluster = Cluster::redis(3);
    let dir = std::env::temp_dir().join(format!("slotproxy-idle-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("slotproxy.yaml");
    let port = free_port();
    write_config(&path, port, &cluster.seeds(), "timeouts:\n  idle_secs: 1\n");
    let _proxy = start_with_config(&path, port);
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["PING"]), Frame::Simple("PONG".into()));
    assert!(
        closed_within(&mut c, Duration::from_secs(10)),
        "idle client not closed"
    );
}

/// `timeouts.idle_secs` is live: a client connected before the reload is closed once idle
/// after its next request (its session re-reads the timeouts on every turn).
#[test]
fn idle_timeout_reload_reaches_connected_clients() {
    let cluster = Cluster::redis(3);
    let dir = std::env::temp_dir().join(format!("slotproxy-idle-reload-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("slotproxy.yaml");
    let port = free_port();
    write_config(&path, port, &cluster.seeds(), "timeouts:\n  idle_secs: 0\n");
    let proxy = start_with_config(&path, port);
    let mut old = RawClient::connect(port);
    assert_eq!(old.call(&["PING"]), Frame::Simple("PONG".into()));

    write_config(&path, port, &cluster.seeds(), "timeouts:\n  idle_secs: 1\n");
    proxy.signal("HUP");
    // The reload has happened once a new client is closed for idleness.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut probe = RawClient::connect(port);
        assert_eq!(probe.call(&["PING"]), Frame::Simple("PONG".into()));
        if closed_within(&mut probe, Duration::from_secs(3)) {
            break;
        }
        assert!(Instant::now() < deadline, "idle_secs not reloaded");
    }
    assert_eq!(old.call(&["PING"]), Frame::Simple("PONG".into()));
    assert!(
        closed_within(&mut old, Duration::from_secs(10)),
        "a client connected before the reload kept the old idle timeout"
    );
}

#[test]
fn config_errors_name_field_and_line() {
    let dir = std::env::temp_dir().join(format!("slotproxy-badconf-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("bad.yaml");
    std::fs::write(
        &path,
        "listen: 127.0.0.1:1\nseeds: [127.0.0.1:2]\nlimits:\n  max_clientz: 3\n",
    )
    .expect("write");
    let output = Command::new(proxy_binary())
        .args(["--config", &path.display().to_string()])
        .output()
        .expect("run slotproxy");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("max_clientz") && stderr.contains("line 4"),
        "{stderr}"
    );
}

#[test]
fn backend_operation_timeout_answers_and_keeps_order() {
    let cluster = Cluster::redis(3);
    let dir = std::env::temp_dir().join(format!("slotproxy-optimeout-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("slotproxy.yaml");
    let port = free_port();
    write_config(
        &path,
        port,
        &cluster.seeds(),
        "timeouts:\n  operation_ms: 50\n",
    );
    let _proxy = start_with_config(&path, port);
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["SET", "{slow}k", "v"]), Frame::Simple("OK".into()));
    // A script that keeps its node busy far longer than 50 ms, on the same slot's node.
    let busy = "local x = 0 for i = 1, 300000000 do x = x + i end return 1";
    let reply = c.call(&["EVAL", busy, "1", "{slow}k"]);
    assert_eq!(
        reply,
        Frame::Error("ERR slotproxy: backend did not answer within 50 ms".into())
    );
    // The late reply is dropped; the next request on the same connection gets its own.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match c.call(&["GET", "{slow}k"]) {
            Frame::Bulk(v) if &v[..] == b"v" => break,
            other => {
                assert!(Instant::now() < deadline, "no recovery: {other:?}");
                assert!(other.is_error(), "unexpected reply {other:?}");
            }
        }
    }
}
