//! FAILOVER, Redis 7.0's coordinated failover, between storage-nodes and with redis-server
//! 7.0 on either side: the roles swap, no acknowledged write is lost, the old master
//! continues partially; ABORT and TIMEOUT leave the master as it was; error texts are
//! byte-compared with redis-server.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::client::wait_blocked;
use test_harness::{Differential, RawClient, ServerProcess};

fn info(client: &mut RawClient, name: &str) -> String {
    let Frame::Bulk(text) = client.call(&["INFO", "replication"]) else {
        panic!("INFO")
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .to_string()
}

fn stat(client: &mut RawClient, name: &str) -> u64 {
    let Frame::Bulk(text) = client.call(&["INFO", "stats"]) else {
        panic!("INFO")
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name}"))
}

/// Polls `condition` every 20 ms until it holds or `limit` passes.
fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(process: &ServerProcess, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &process.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name}");
}

fn replicaof(port: u16) -> Vec<String> {
    vec!["--replicaof".into(), "127.0.0.1".into(), port.to_string()]
}

fn start(node: bool, args: &[String]) -> ServerProcess {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if node {
        ServerProcess::storage_node(&args)
    } else {
        ServerProcess::redis_server(&args)
    }
}

fn wait_online(master: &mut RawClient) {
    wait_until("the replica to be online", Duration::from_secs(60), || {
        info(master, "connected_slaves") == "1" && info(master, "slave0").contains("online")
    });
}

/// Writes `SET w:<i> <i>` one by one until `stop`, keeping the indexes answered `+OK`.
fn writer(port: u16, stop: Arc<AtomicBool>, acked: Arc<Mutex<Vec<usize>>>) {
    let mut c = RawClient::connect(port);
    for i in 0..200_000 {
        if stop.load(Relaxed) {
            return;
        }
        let key = format!("w:{i}");
        match c.call(&["SET", &key, &i.to_string()]) {
            Frame::Simple(s) if s == "OK".as_bytes() => acked.lock().unwrap().push(i),
            // After the failover the old master is a read-only replica.
            _ => return,
        }
    }
}

/// A master and its replica (each a node or a redis-server) under a write load; the master
/// runs FAILOVER (`to_target`: naming the replica). Checks that the roles swap, every
/// acknowledged write is on the new master, and the old master continued partially.
fn failover_under_load(master_node: bool, replica_node: bool, to_target: bool) {
    let master = start(
        master_node,
        &["--repl-diskless-sync-delay".into(), "0".into()],
    );
    let replica = start(replica_node, &replicaof(master.port));
    let mut m = RawClient::connect(master.port);
    let mut r = RawClient::connect(replica.port);
    wait_online(&mut m);
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let load = {
        let (stop, acked, port) = (stop.clone(), acked.clone(), master.port);
        std::thread::spawn(move || writer(port, stop, acked))
    };
    wait_until("some writes", Duration::from_secs(30), || {
        acked.lock().unwrap().len() >= 200
    });
    let port = replica.port.to_string();
    let reply = if to_target {
        m.call(&["FAILOVER", "TO", "127.0.0.1", &port])
    } else {
        m.call(&["FAILOVER"])
    };
    assert_eq!(reply, Frame::Simple("OK".into()));
    wait_until("the roles to swap", Duration::from_secs(60), || {
        info(&mut r, "role") == "master"
            && info(&mut m, "role") == "slave"
            && info(&mut m, "master_link_status") == "up"
            && info(&mut m, "master_failover_state") == "no-failover"
    });
    stop.store(true, Relaxed);
    load.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 200);
    for i in acked {
        let key = format!("w:{i}");
        assert_eq!(
            r.call(&["GET", &key]),
            Frame::Bulk(i.to_string().into()),
            "acknowledged write {key} is missing on the new master"
        );
    }
    assert_eq!(
        stat(&mut r, "sync_partial_ok"),
        1,
        "the old master continued"
    );
    assert_eq!(stat(&mut r, "sync_full"), 0);
    // The old master follows the new one: a write there reaches it.
    r.call(&["SET", "after", "1"]);
    wait_until("the old master to follow", Duration::from_secs(60), || {
        m.call(&["GET", "after"]) == Frame::Bulk("1".into())
    });
}

#[test]
fn a_node_master_fails_over_to_its_node_replica_under_load() {
    failover_under_load(true, true, false);
}

#[test]
fn a_node_master_fails_over_to_a_redis_replica_named_by_to() {
    failover_under_load(true, false, true);
}

#[test]
fn a_redis_master_fails_over_to_a_node_replica() {
    failover_under_load(false, true, true);
}

#[test]
fn failover_errors_match_redis() {
    let mut d = Differential::start();
    d.check_all(&[
        &["FAILOVER"],
        &["FAILOVER", "TO"],
        &["FAILOVER", "TO", "h"],
        &["FAILOVER", "TO", "h", "x"],
        &["FAILOVER", "TO", "h", "1", "FORCE"],
        &["FAILOVER", "TIMEOUT", "0"],
        &["FAILOVER", "TIMEOUT", "-1"],
        &["FAILOVER", "TIMEOUT", "x"],
        &["FAILOVER", "ABORT"],
        &["FAILOVER", "ABORT", "TIMEOUT", "10"],
        &["FAILOVER", "FORCE", "FORCE"],
        &["FAILOVER", "TO", "h", "1", "TIMEOUT", "10", "FORCE"],
        &["FAILOVER", "FOO"],
        &[
            "PSYNC",
            "0000000000000000000000000000000000000000",
            "1",
            "FAILOVER",
        ],
    ]);
}

/// On a master with one stopped replica (it cannot acknowledge): the errors while a
/// replica is there, then a failover that waits, ABORT, and a TIMEOUT that gives up.
fn abort_and_timeout(master_node: bool) -> Vec<Frame> {
    let master = start(
        master_node,
        &["--repl-diskless-sync-delay".into(), "0".into()],
    );
    let replica = start(false, &replicaof(master.port));
    let mut m = RawClient::connect(master.port);
    wait_online(&mut m);
    let port = replica.port.to_string();
    let mut seen = vec![
        m.call(&["FAILOVER", "TO", "127.0.0.1", "1"]),
        m.call(&["FAILOVER", "FORCE", "TIMEOUT", "10"]),
    ];
    signal(&replica, "STOP");
    seen.push(m.call(&["SET", "k", "v"]));
    seen.push(m.call(&["FAILOVER", "TO", "127.0.0.1", &port]));
    seen.push(Frame::Simple(info(&mut m, "master_failover_state").into()));
    seen.push(m.call(&["FAILOVER"]));
    seen.push(m.call(&["GET", "k"]));
    // Writes wait while the failover waits for the replica.
    let mut held = RawClient::connect(master.port);
    held.send(&[b"SET", b"k", b"held"]);
    wait_blocked(&mut m, 1);
    seen.push(m.call(&["FAILOVER", "ABORT"]));
    seen.push(held.read_reply().0);
    seen.push(Frame::Simple(info(&mut m, "master_failover_state").into()));
    seen.push(m.call(&["SET", "k", "w"]));
    seen.push(m.call(&["FAILOVER", "ABORT"]));
    seen.push(m.call(&["FAILOVER", "TIMEOUT", "100"]));
    wait_until(
        "the timeout to end the failover",
        Duration::from_secs(30),
        || info(&mut m, "master_failover_state") == "no-failover",
    );
    seen.push(Frame::Simple(info(&mut m, "role").into()));
    seen.push(m.call(&["SET", "k", "x"]));
    signal(&replica, "CONT");
    seen
}

/// PSYNC ... FAILOVER with another history, sent to a replica (a node or a redis-server).
fn psync_failover_with_a_foreign_replid(replica_node: bool) -> Frame {
    let master = start(false, &[]);
    let replica = start(replica_node, &replicaof(master.port));
    let mut m = RawClient::connect(master.port);
    wait_online(&mut m);
    let mut r = RawClient::connect(replica.port);
    let reply = r.call(&["PSYNC", &"0".repeat(40), "1", "FAILOVER"]);
    assert_eq!(info(&mut r, "role"), "slave");
    reply
}

#[test]
fn psync_failover_with_a_foreign_replid_is_refused_as_on_redis() {
    assert_eq!(
        psync_failover_with_a_foreign_replid(true),
        psync_failover_with_a_foreign_replid(false)
    );
}

#[test]
fn abort_and_timeout_leave_the_master_a_master_as_on_redis() {
    let node = abort_and_timeout(true);
    let redis = abort_and_timeout(false);
    assert_eq!(node, redis);
    assert_eq!(node[4], Frame::Simple("waiting-for-sync".into()));
    assert_eq!(
        node[8],
        Frame::Simple("OK".into()),
        "the held SET ran after ABORT"
    );
    assert_eq!(node[9], Frame::Simple("no-failover".into()));
}

/// On a master (node or redis-server) with a stopped redis-server replica: FAILOVER TO it
/// with FORCE gives up waiting at the timeout and fails over anyway; once the replica runs
/// again it takes over.
fn forced_failover(master_node: bool) -> Vec<String> {
    let master = start(
        master_node,
        &["--repl-diskless-sync-delay".into(), "0".into()],
    );
    let replica = start(false, &replicaof(master.port));
    let mut m = RawClient::connect(master.port);
    wait_online(&mut m);
    signal(&replica, "STOP");
    m.call(&["SET", "k", "v"]);
    let port = replica.port.to_string();
    let reply = m.call(&[
        "FAILOVER",
        "TO",
        "127.0.0.1",
        &port,
        "TIMEOUT",
        "100",
        "FORCE",
    ]);
    let mut seen = vec![format!("{reply:?}")];
    wait_until("the forced failover", Duration::from_secs(30), || {
        info(&mut m, "master_failover_state") == "failover-in-progress"
    });
    seen.push(info(&mut m, "role"));
    signal(&replica, "CONT");
    let mut r = RawClient::connect(replica.port);
    wait_until("the roles to swap", Duration::from_secs(60), || {
        info(&mut r, "role") == "master"
            && info(&mut m, "master_link_status") == "up"
            && info(&mut m, "master_failover_state") == "no-failover"
    });
    seen.push(info(&mut m, "role"));
    seen
}

#[test]
fn force_fails_over_after_the_timeout_as_on_redis() {
    let node = forced_failover(true);
    let redis = forced_failover(false);
    assert_eq!(node, redis);
    assert_eq!(node[1], "slave");
}
