//! CLUSTER subcommands, READONLY/READWRITE/ASKING, MIGRATE's errors and the cluster-mode
//! refusals, on a lone cluster-mode storage-node beside a lone cluster-mode redis-server.
//! Replies that carry a node id or port are compared with those replaced by placeholders.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use test_harness::{free_port, Differential, RawClient};

/// Both servers in cluster mode, each alone in its own cluster. The storage-node works in
/// a directory of its own, which holds its nodes file.
fn start() -> Differential {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "storage-node-cluster-commands-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("node dir");
    let dir = dir.display().to_string();
    Differential::start_with(
        &["--dir", &dir, "--cluster-enabled", "yes"],
        &["--cluster-enabled", "yes"],
    )
}

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

fn myid(client: &mut RawClient) -> String {
    let reply = client.call(&["CLUSTER", "MYID"]);
    text(reply.as_bytes().expect("id"))
}

/// Raw reply bytes with the node's id, bus port and port replaced by placeholders.
fn normalized(client: &mut RawClient, port: u16, args: &[&str]) -> String {
    let id = myid(client);
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let raw = client.call_raw(&bytes);
    text(&raw)
        .replace(&id, "<ID>")
        .replace(&(port as u32 + 10000).to_string(), "<CPORT>")
        .replace(&port.to_string(), "<PORT>")
}

fn check_normalized(d: &mut Differential, args: &[&str]) {
    let (node_port, redis_port) = (d.node.port, d.redis.port);
    let node = normalized(&mut d.node_client, node_port, args);
    let redis = normalized(&mut d.redis_client, redis_port, args);
    assert_eq!(node, redis, "replies differ for {args:?}");
}

/// Waits (bounded) until both servers report `cluster_state:ok`.
fn wait_state_ok(d: &mut Differential) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (a, b) = d.both(&["CLUSTER", "INFO"]);
        let ok = |f: &slotproxy::resp::Frame| {
            text(f.as_bytes().unwrap_or(b"")).contains("cluster_state:ok")
        };
        if ok(&a) && ok(&b) {
            return;
        }
        assert!(Instant::now() < deadline, "cluster state did not become ok");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn slot_assignment_errors_match_redis() {
    let mut d = start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["CLUSTER", "ADDSLOTS", "16384"],
            &["CLUSTER", "ADDSLOTS", "abc"],
            &["CLUSTER", "ADDSLOTS", "-1"],
            &["CLUSTER", "ADDSLOTS", "1", "1"],
            &["CLUSTER", "ADDSLOTS", "1", "x"],
            &["CLUSTER", "ADDSLOTS", "1"],
            &["CLUSTER", "ADDSLOTS", "1"],
            &["CLUSTER", "DELSLOTS", "2"],
            &["CLUSTER", "DELSLOTS", "1", "1"],
            &["CLUSTER", "DELSLOTS", "1"],
            &["CLUSTER", "ADDSLOTSRANGE", "5", "3"],
            &["CLUSTER", "ADDSLOTSRANGE", "5"],
            &["CLUSTER", "ADDSLOTSRANGE", "5", "6", "7"],
            &["CLUSTER", "ADDSLOTSRANGE", "10", "20", "15", "25"],
            &["CLUSTER", "ADDSLOTSRANGE", "10", "20"],
            &["CLUSTER", "ADDSLOTSRANGE", "10", "20"],
            &["CLUSTER", "DELSLOTSRANGE", "10", "30"],
            &["CLUSTER", "DELSLOTSRANGE", "10", "20"],
            &["CLUSTER", "DELSLOTSRANGE", "a", "20"],
            &["CLUSTER", "SETSLOT", "1", "node", "abc"],
            &["CLUSTER", "SETSLOT", "1", "migrating", "abc"],
            &["CLUSTER", "SETSLOT", "1", "importing", "abc"],
            &["CLUSTER", "SETSLOT", "1", "foo"],
            &["CLUSTER", "SETSLOT", "1", "stable", "x"],
            &["CLUSTER", "SETSLOT", "1", "stable"],
            &["CLUSTER", "SETSLOT", "99999", "stable"],
            &[
                "CLUSTER",
                "SETSLOT",
                "5",
                "migrating",
                "0000000000000000000000000000000000000000",
            ],
            &[
                "CLUSTER",
                "SETSLOT",
                "5",
                "node",
                "0000000000000000000000000000000000000000",
            ],
            &["CLUSTER", "COUNTKEYSINSLOT", "99999"],
            &["CLUSTER", "COUNTKEYSINSLOT", "-1"],
            &["CLUSTER", "COUNTKEYSINSLOT", "x"],
            &["CLUSTER", "COUNTKEYSINSLOT", "7"],
            &["CLUSTER", "GETKEYSINSLOT", "1", "-1"],
            &["CLUSTER", "GETKEYSINSLOT", "99999", "1"],
            &["CLUSTER", "GETKEYSINSLOT", "1", "x"],
            &["CLUSTER", "GETKEYSINSLOT", "1", "10"],
            &["CLUSTER", "KEYSLOT", "foo"],
            &["CLUSTER", "KEYSLOT", "{user1000}.following"],
            &["CLUSTER", "KEYSLOT", ""],
            &["CLUSTER", "FLUSHSLOTS"],
        ]);
    }
    // SETSLOT with this node's own id.
    let (node_id, redis_id) = (myid(&mut d.node_client), myid(&mut d.redis_client));
    for (action, slot) in [
        ("migrating", "3"),
        ("importing", "3"),
        ("stable", "3"),
        ("node", "3"),
    ] {
        let mut node_args = vec!["CLUSTER", "SETSLOT", slot, action];
        let mut redis_args = node_args.clone();
        if action != "stable" {
            node_args.push(&node_id);
            redis_args.push(&redis_id);
        }
        let node = d.node_client.call(&node_args);
        let redis = d.redis_client.call(&redis_args);
        assert_eq!(node, redis, "SETSLOT {action}");
    }
    d.check(&[
        "CLUSTER",
        "SETSLOT",
        "3",
        "importing",
        &redis_id.replace(|_| true, "0"),
    ]);
    check_normalized(&mut d, &["CLUSTER", "NODES"]);
}

#[test]
fn membership_and_epoch_commands_match_redis() {
    let mut d = start();
    d.check_all(&[
        &["CLUSTER", "FORGET", "abc"],
        &["CLUSTER", "MEET", "1.2.3.4", "x"],
        &["CLUSTER", "MEET", "1.2.3.4", "1", "x"],
        &["CLUSTER", "MEET", "127.0.0.1", "99999"],
        &["CLUSTER", "MEET", "127.0.0.1", "0"],
        &["CLUSTER", "MEET", "127.0.0.1", "60000"],
        &["CLUSTER", "MEET", "not-an-ip", "7000"],
        &["CLUSTER", "MEET", "127.0.0.1", "1", "2", "3"],
        &["CLUSTER", "MEET", "127.0.0.1"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "-1"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "x"],
        &["CLUSTER", "BUMPEPOCH"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "5"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "5"],
        &["CLUSTER", "BUMPEPOCH"],
        &["CLUSTER", "RESET", "foo"],
        &["CLUSTER", "RESET", "soft", "x"],
        &["CLUSTER", "COUNT-FAILURE-REPORTS", "abc"],
        &["CLUSTER", "REPLICAS", "abc"],
        &["CLUSTER", "SLAVES", "abc"],
        &["CLUSTER", "SAVECONFIG"],
        &["CLUSTER", "LINKS"],
        &["CLUSTER", "HELP"],
        &["CLUSTER", "NOSUCH"],
        &["CLUSTER", "MYSHARDID"],
        &["CLUSTER"],
        &["READONLY"],
        &["READWRITE"],
        &["ASKING"],
        &["READONLY", "x"],
    ]);
    let redis_id = myid(&mut d.redis_client);
    let node_id = myid(&mut d.node_client);
    for sub in ["FORGET", "COUNT-FAILURE-REPORTS", "REPLICAS"] {
        let node = d.node_client.call(&["CLUSTER", sub, &node_id]);
        let redis = d.redis_client.call(&["CLUSTER", sub, &redis_id]);
        assert_eq!(node, redis, "CLUSTER {sub} myself");
    }
    check_normalized(&mut d, &["CLUSTER", "NODES"]);
    // A hard reset gives a new id and zero epochs.
    d.check(&["CLUSTER", "RESET", "HARD"]);
    assert_ne!(myid(&mut d.node_client), node_id);
    check_normalized(&mut d, &["CLUSTER", "NODES"]);
    d.check(&["CLUSTER", "BUMPEPOCH"]);
}

#[test]
fn serving_slots_redirect_and_report_like_redis() {
    let mut d = start();
    d.check_all(&[
        &["SET", "foo", "bar"],
        &["GET", "foo"],
        &["PING"],
        &["SELECT", "0"],
        &["SELECT", "1"],
        &["SELECT", "x"],
        &["SWAPDB", "0", "1"],
        &["MOVE", "foo", "1"],
        &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"],
    ]);
    wait_state_ok(&mut d);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["SET", "foo", "bar"],
            &["GET", "foo"],
            &["MSET", "a", "1", "b", "2"],
            &["MSET", "{t}a", "1", "{t}b", "2"],
            &["MGET", "{t}a", "{t}b", "x"],
            &["MOVE", "foo", "1"],
            &["COPY", "foo", "bar"],
            &["COPY", "foo", "{foo}bar", "DB", "1"],
            &["COPY", "foo", "{foo}bar", "DB", "0"],
            &["COPY", "foo", "{foo}baz"],
            &["CLUSTER", "COUNTKEYSINSLOT", "12182"],
            &["CLUSTER", "GETKEYSINSLOT", "15495", "5"],
            &["CLUSTER", "FLUSHSLOTS"],
            &["CLUSTER", "RESET"],
            &["CLUSTER", "INFO"],
            &["INFO", "cluster"],
            &["CONFIG", "GET", "cluster-enabled"],
            &["CONFIG", "GET", "cluster-node-timeout"],
            &["CONFIG", "GET", "cluster-require-full-coverage"],
            &["MIGRATE", "127.0.0.1", "1", "nokey", "0", "100"],
            &["MIGRATE", "127.0.0.1", "1", "foo", "0", "100", "KEYS", "a"],
            &["MIGRATE", "127.0.0.1", "1", "", "0", "x", "KEYS", "foo"],
            &["MIGRATE", "127.0.0.1", "1", "", "x", "1", "KEYS", "foo"],
            &["MIGRATE", "127.0.0.1", "1", "", "0", "1", "AUTH"],
            &["MIGRATE", "127.0.0.1", "1", "", "0", "1", "AUTH2", "u"],
            &["MIGRATE", "127.0.0.1", "1", "", "0", "1", "foo"],
            &["MIGRATE", "127.0.0.1", "1", "", "0", "100", "KEYS"],
            &["MIGRATE", "127.0.0.1", "1", "", "0", "100", "KEYS", "nokey"],
            &["MIGRATE", "127.0.0.1", "1", "foo", "0", "100", "COPY"],
            &["RESTORE-ASKING", "foo", "0", "x"],
        ]);
        for sub in ["SLOTS", "SHARDS", "NODES"] {
            check_normalized(&mut d, &["CLUSTER", sub]);
        }
    }
    // A closed port: Redis only notices the refused connection when it writes.
    let closed = free_port().to_string();
    d.set_resp3(false);
    d.check(&["MIGRATE", "127.0.0.1", &closed, "foo", "0", "500"]);
    d.check(&["FLUSHALL"]);
    d.check(&["CLUSTER", "FLUSHSLOTS"]);
    d.check(&["SET", "foo", "bar"]);
}
