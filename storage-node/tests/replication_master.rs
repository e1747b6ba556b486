//! A storage-node as a Redis 7.0 master: a real redis-server 7.0 replicates from it.
//!
//! Every test ends by comparing both sides key by key (DUMP, contents and PTTL, from the
//! persistence fixture) once the replica has processed the master's whole stream. The
//! write load covers every type the node has, expiry (relative TTLs, keys that expire and
//! are deleted by the master), a script, MULTI/EXEC, a function, SPOP (propagated as
//! SREM) and several databases.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{wait_until, RawClient, ServerProcess};

mod persistence_fixture;
mod replication_fixture;
use persistence_fixture::{assert_same_state, bytes_of, ok, populate, state_of, DATABASES};
use replication_fixture::{info, info_u64, replica_of, wait_in_sync};

const WRITER_LIB: &str = "#!lua name=repllib\nredis.register_function('replset', \
    function(keys, args) return redis.call('SET', keys[1], args[1]) end)";

/// A storage-node master with the given extra settings.
fn master(extra: &[&str]) -> ServerProcess {
    ServerProcess::storage_node(extra)
}

/// Keys that expire in a moment have been removed on the master (and DEL propagated).
fn wait_short_ttls_gone(master: &mut RawClient) {
    for &db in DATABASES {
        ok(master, &["SELECT", &db.to_string()]);
        wait_until(
            Duration::from_secs(30),
            "short-lived keys to expire",
            || {
                master.call(&["DBSIZE"]);
                matches!(master.call(&["KEYS", "short:*"]), Frame::Array(a) if a.is_empty())
            },
        );
    }
    ok(master, &["SELECT", "0"]);
}

/// One round of writes of every kind, in one of the fixture's databases.
fn write_round(c: &mut RawClient, i: usize) {
    // Runs of rounds in one database: the stream selects only when the database changes,
    // so a replica must be told the database the stream is in when its sync starts.
    let db = DATABASES[(i / 10) % DATABASES.len()].to_string();
    ok(c, &["SELECT", &db]);
    let n = i.to_string();
    let k = |name: &str| format!("load:{name}:{}", i % 17);
    // Longer than an embstr: APPEND leaves a `raw` string, which a replica loading the
    // RDB would make `embstr` again if it were short (so would a redis-server master's).
    ok(
        c,
        &["SET", &k("str"), &format!("value-{i}-{}", "s".repeat(40))],
    );
    ok(c, &["APPEND", &k("str"), "+"]);
    ok(c, &["INCRBY", "load:counter", "3"]);
    // Never integral: the replica would store the propagated SET as an `int`, where the
    // master keeps INCRBYFLOAT's string (so does a redis-server master).
    ok(c, &["SET", &k("float"), "0.25"]);
    ok(c, &["INCRBYFLOAT", &k("float"), "1.5"]);
    ok(c, &["RPUSH", &k("list"), &n, "x", "y"]);
    ok(c, &["LPOP", &k("list")]);
    ok(c, &["HSET", &k("hash"), &format!("f{}", i % 5), &n]);
    ok(c, &["HINCRBY", &k("hash"), "count", "1"]);
    // A set keeps a string member: one left with integers only would load from the RDB
    // as an intset while the master keeps its hashtable (so would a redis-server master).
    ok(
        c,
        &["SADD", &k("set"), &n, &format!("m{}", i % 7), "always"],
    );
    ok(c, &["SREM", &k("set"), &i.saturating_sub(17).to_string()]);
    // SPOP is propagated as SREM of the member it chose.
    ok(c, &["SADD", &k("ints"), &n, &(i * 3).to_string()]);
    ok(c, &["SPOP", &k("ints")]);
    ok(c, &["ZADD", &k("zset"), &n, &format!("m{}", i % 9)]);
    ok(c, &["ZINCRBY", &k("zset"), "0.5", "m0"]);
    // Expiry: relative TTLs (propagated as absolute times), keys that expire soon.
    ok(c, &["SET", &k("ttl"), &n, "EX", "5000"]);
    ok(c, &["PEXPIRE", &k("hash"), "9000000"]);
    ok(c, &["SET", &format!("short:{i}"), "gone", "PX", "150"]);
    if i.is_multiple_of(5) {
        ok(c, &["DEL", &k("list")]);
    }
    ok(
        c,
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('LPUSH', KEYS[2], ARGV[1])",
            "2",
            &k("script"),
            &k("scriptlist"),
            &n,
        ],
    );
    ok(c, &["FCALL", "replset", "1", &k("fn"), &n]);
    ok(c, &["MULTI"]);
    c.call(&["SET", &k("multi"), &n]);
    c.call(&["ZADD", &k("multizset"), "1", &n]);
    c.call(&["EXPIRE", &k("multi"), "7000"]);
    match c.call(&["EXEC"]) {
        Frame::Array(replies) => assert_eq!(replies.len(), 3),
        other => panic!("EXEC: {other:?}"),
    }
}

/// The load's rounds so far, for `during` to wait on.
type Progress = Arc<AtomicUsize>;

/// Runs a write load while `during` runs (the replica's sync, link cuts); the load stops
/// when `during` returns, or after `MAX_ROUNDS`.
fn load_while(master: &ServerProcess, during: impl FnOnce(&Progress)) {
    const MAX_ROUNDS: usize = 50_000;
    let port = master.port;
    let progress: Progress = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (progress, stop) = (progress.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut c = RawClient::connect(port);
            for i in 0..MAX_ROUNDS {
                if stop.load(Relaxed) {
                    break;
                }
                write_round(&mut c, i);
                progress.store(i + 1, Relaxed);
            }
        })
    };
    during(&progress);
    stop.store(true, Relaxed);
    writer.join().expect("the writer failed");
}

/// Waits until the load ran `rounds` more rounds.
fn more_rounds(progress: &Progress, rounds: usize) {
    let target = progress.load(Relaxed) + rounds;
    wait_until(Duration::from_secs(60), "the write load to go on", || {
        progress.load(Relaxed) >= target
    });
}

fn assert_replica_matches(master: &mut RawClient, replica: &mut RawClient) {
    wait_short_ttls_gone(master);
    wait_in_sync(master, replica);
    let want = state_of(master);
    let got = state_of(replica);
    assert_same_state(&want, &got);
}

/// The fixture's data, with this test's function library instead of the fixture's (one
/// library: FUNCTION DUMP lists several in an order of redis-server's dictionary).
fn prepare(m: &mut RawClient) {
    populate(m);
    ok(m, &["FUNCTION", "DELETE", "rdblib"]);
    ok(m, &["FUNCTION", "LOAD", WRITER_LIB]);
}

fn full_sync_under_load(diskless: &str) {
    let node = master(&[
        "--repl-diskless-sync",
        diskless,
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut m = RawClient::connect(node.port);
    prepare(&mut m);
    let mut replica = None;
    load_while(&node, |progress| {
        // The sync starts while the writer runs: the RDB and the stream must meet exactly.
        more_rounds(progress, 20);
        let started = replica_of(&node);
        let mut r = RawClient::connect(started.port);
        wait_until(Duration::from_secs(60), "the replica to sync", || {
            info(&mut r, "replication", "master_link_status") == "up"
        });
        more_rounds(progress, 50);
        replica = Some(started);
    });
    let replica = replica.unwrap();
    let mut r = RawClient::connect(replica.port);
    assert_replica_matches(&mut m, &mut r);
    assert_eq!(info_u64(&mut m, "stats", "sync_full"), 1);
    let line = info(&mut m, "replication", "slave0");
    assert!(line.contains("state=online"), "{line}");
    assert!(line.contains(&format!("port={}", replica.port)), "{line}");
    // The replica says which form it read.
    let form = if diskless == "yes" {
        "receiving streamed RDB from master with EOF"
    } else {
        "bytes from master to disk"
    };
    replica.wait_for_log(form, Duration::from_secs(30));
}

#[test]
fn diskless_full_sync_under_load_gives_the_same_data() {
    full_sync_under_load("yes");
}

#[test]
fn disk_full_sync_under_load_gives_the_same_data() {
    full_sync_under_load("no");
}

/// A master with a replica that completed its first sync.
fn synced_pair(extra: &[&str]) -> (ServerProcess, ServerProcess, RawClient, RawClient) {
    let mut args = vec!["--repl-diskless-sync-delay", "0"];
    args.extend_from_slice(extra);
    let node = master(&args);
    let mut m = RawClient::connect(node.port);
    prepare(&mut m);
    let replica = replica_of(&node);
    let mut r = RawClient::connect(replica.port);
    wait_in_sync(&mut m, &mut r);
    (node, replica, m, r)
}

fn kill_replica_links(m: &mut RawClient) -> i64 {
    m.call(&["CLIENT", "KILL", "TYPE", "replica"])
        .as_integer()
        .unwrap()
}

#[test]
fn link_cuts_during_load_continue_with_psync() {
    let (node, replica, mut m, mut r) = synced_pair(&[]);
    load_while(&node, |progress| {
        let mut admin = RawClient::connect(node.port);
        for cut in 0..20 {
            let before = info_u64(&mut admin, "stats", "sync_partial_ok");
            assert_eq!(kill_replica_links(&mut admin), 1, "cut {cut}");
            wait_until(Duration::from_secs(60), "the replica to continue", || {
                info_u64(&mut admin, "stats", "sync_partial_ok") > before
            });
            more_rounds(progress, 3);
        }
    });
    assert_eq!(info_u64(&mut m, "stats", "sync_full"), 1);
    assert_eq!(info_u64(&mut m, "stats", "sync_partial_ok"), 20);
    assert_eq!(info_u64(&mut m, "stats", "sync_partial_err"), 0);
    assert_replica_matches(&mut m, &mut r);
    // ROLE lists the replica with the offset it acknowledged.
    let offset = info_u64(&mut m, "replication", "master_repl_offset");
    wait_until(
        Duration::from_secs(30),
        "the replica's ACK of the end",
        || {
            let Frame::Array(role) = m.call(&["ROLE"]) else {
                return false;
            };
            let Frame::Array(replicas) = &role[2] else {
                return false;
            };
            let [Frame::Array(first)] = &replicas[..] else {
                return false;
            };
            let field = |i: usize| String::from_utf8(bytes_of(&first[i])).unwrap();
            assert_eq!(field(0), "127.0.0.1");
            assert_eq!(field(1), replica.port.to_string());
            field(2).parse::<u64>().unwrap() >= offset
        },
    );
}

#[test]
fn a_tiny_backlog_falls_back_to_a_full_sync_with_the_same_data() {
    let (node, replica, mut m, mut r) = synced_pair(&["--repl-backlog-size", "16kb"]);
    // The replica cannot reconnect while it is stopped: the writes made meanwhile (far
    // more than the backlog holds) push its offset out of the backlog.
    replica.signal("STOP");
    assert_eq!(kill_replica_links(&mut m), 1);
    let value = "v".repeat(1000);
    for i in 0..200 {
        ok(&mut m, &["SET", &format!("big:{i}"), &value]);
    }
    replica.signal("CONT");
    wait_until(Duration::from_secs(60), "a second full sync", || {
        info_u64(&mut m, "stats", "sync_full") == 2
    });
    assert_eq!(info_u64(&mut m, "stats", "sync_partial_err"), 1);
    assert_replica_matches(&mut m, &mut r);
    drop(node);
}

#[test]
fn wait_counts_only_replicas_that_acknowledged_the_writes() {
    let (_node, replica, mut m, mut r) = synced_pair(&[]);
    let mut counted = 0;
    for i in 0..100 {
        let (key, value) = (format!("wait:{i}"), format!("v{i}"));
        ok(&mut m, &["SET", &key, &value]);
        let acked = m.call(&["WAIT", "1", "1000"]).as_integer().unwrap();
        assert!(acked == 0 || acked == 1, "WAIT answered {acked}");
        if acked == 1 {
            counted += 1;
            // Acknowledged means applied: the write is on the replica already.
            assert_eq!(bytes_of(&r.call(&["GET", &key])), value.as_bytes(), "{key}");
        }
    }
    assert!(counted >= 90, "only {counted} of 100 WAITs saw the replica");
    // A stopped replica acknowledges nothing: WAIT times out with 0.
    replica.signal("STOP");
    ok(&mut m, &["SET", "wait:stopped", "1"]);
    assert_eq!(m.call(&["WAIT", "1", "300"]).as_integer(), Some(0));
    // As in Redis 7.0, any command moves a connection's wait offset to the stream's end:
    // PING then WAIT on a fresh connection waits for the writes made before (what
    // slotproxy relies on), while WAIT as a connection's first command waits for nothing.
    let node_port = _node.port;
    let mut fresh = RawClient::connect(node_port);
    assert_eq!(fresh.call(&["WAIT", "1", "300"]).as_integer(), Some(1));
    let mut pinged = RawClient::connect(node_port);
    // In one write, as the proxy sends them.
    pinged.send_raw(b"PING\r\nWAIT 1 300\r\n");
    assert_eq!(bytes_of(&pinged.read_reply().0), b"PONG");
    assert_eq!(
        pinged.read_reply().0.as_integer(),
        Some(0),
        "PING then WAIT"
    );
    replica.signal("CONT");
    // Without a timeout it waits until the replica has it.
    assert_eq!(m.call(&["WAIT", "1", "0"]).as_integer(), Some(1));
    assert_eq!(bytes_of(&r.call(&["GET", "wait:stopped"])), b"1");
    // Inside MULTI it does not block: the count now.
    ok(&mut m, &["MULTI"]);
    m.call(&["SET", "wait:multi", "1"]);
    m.call(&["WAIT", "5", "0"]);
    match m.call(&["EXEC"]) {
        Frame::Array(replies) => assert!(matches!(replies[1], Frame::Integer(0 | 1))),
        other => panic!("EXEC: {other:?}"),
    }
}

#[test]
fn min_replicas_refuses_writes_without_enough_good_replicas() {
    const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
    let node = master(&[
        "--repl-diskless-sync-delay",
        "0",
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        "2",
    ]);
    let mut m = RawClient::connect(node.port);
    let refused = |m: &mut RawClient| match m.call(&["SET", "k", "v"]) {
        Frame::Error(e) => {
            assert_eq!(e, NOREPLICAS.as_bytes());
            true
        }
        _ => false,
    };
    assert!(refused(&mut m), "a write with no replica at all");
    assert_eq!(bytes_of(&m.call(&["PING"])), b"PONG");
    let replica = replica_of(&node);
    wait_until(Duration::from_secs(60), "writes to be accepted", || {
        !refused(&mut m)
    });
    assert_eq!(info_u64(&mut m, "replication", "min_slaves_good_slaves"), 1);
    replica.signal("STOP");
    wait_until(
        Duration::from_secs(60),
        "the stopped replica to lag",
        || refused(&mut m),
    );
    // Reads still work; a script's write and a transaction that writes are refused.
    assert_eq!(bytes_of(&m.call(&["GET", "k"])), b"v");
    match m.call(&["EVAL", "return redis.call('SET', 'k', 'w')", "0"]) {
        Frame::Error(e) => assert!(e.starts_with(b"NOREPLICAS"), "{e:?}"),
        other => panic!("EVAL: {other:?}"),
    }
    ok(&mut m, &["MULTI"]);
    m.call(&["SET", "k", "x"]);
    match m.call(&["EXEC"]) {
        Frame::Error(e) => assert!(
            e.starts_with(b"NOREPLICAS") || e.starts_with(b"EXECABORT"),
            "{e:?}"
        ),
        other => panic!("EXEC: {other:?}"),
    }
    replica.signal("CONT");
    wait_until(
        Duration::from_secs(60),
        "writes to be accepted again",
        || !refused(&mut m),
    );
}

#[test]
fn replication_commands_and_settings_answer_as_redis_does() {
    let mut d = test_harness::Differential::start();
    d.check_all(&[
        &["ROLE"],
        &["WAIT", "0", "0"],
        &["WAIT", "1", "1"],
        &["WAIT", "x", "1"],
        &["WAIT", "1", "-1"],
        &["WAIT", "1", "abc"],
        &["REPLCONF", "foo", "bar"],
        &["REPLCONF", "foo"],
        &["REPLCONF", "listening-port", "x"],
        &[
            "REPLCONF",
            "listening-port",
            "6380",
            "capa",
            "eof",
            "capa",
            "psync2",
        ],
        &["REPLCONF", "capa", "unknown"],
        &["PSYNC", "?"],
        &["PSYNC", "?", "x"],
        &["MULTI"],
        &["SYNC"],
        &["WAIT", "0", "0"],
        &["EXEC"],
        &["EVAL", "return redis.call('psync', '?', '-1')", "0"],
        &["CONFIG", "SET", "repl-backlog-size", "1"],
        &["CONFIG", "GET", "repl-backlog-size"],
        &["CONFIG", "SET", "repl-backlog-size", "2mb"],
        &["CONFIG", "GET", "repl-backlog-size"],
        &["CONFIG", "SET", "min-slaves-to-write", "2"],
        &["CONFIG", "GET", "min-replicas-to-write"],
        &["CONFIG", "SET", "repl-ping-replica-period", "0"],
        &["CONFIG", "GET", "repl-timeout"],
        &["CONFIG", "GET", "repl-diskless-sync"],
        &["CONFIG", "GET", "repl-diskless-sync-delay"],
        &["CONFIG", "GET", "repl-backlog-ttl"],
        &["CONFIG", "GET", "min-replicas-max-lag"],
    ]);
    // With min-replicas-to-write 2 and no replica, writes are refused on both.
    d.check_all(&[&["SET", "k", "v"], &["GET", "k"]]);
}

/// The field names of an INFO section, in order.
fn field_names(client: &mut RawClient, section: &str) -> Vec<String> {
    String::from_utf8(bytes_of(&client.call(&["INFO", section])))
        .unwrap()
        .lines()
        .map(|l| l.split(':').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn info_replication_of_a_master_lists_redis_fields_in_redis_order() {
    let settings = [
        "--repl-diskless-sync-delay",
        "0",
        "--min-replicas-to-write",
        "1",
    ];
    let node = master(&settings);
    let redis = ServerProcess::redis_server(&settings);
    let mut names = Vec::new();
    for m in [&node, &redis] {
        let replica = replica_of(m);
        let mut c = RawClient::connect(m.port);
        let mut r = RawClient::connect(replica.port);
        wait_in_sync(&mut c, &mut r);
        // Online once the master saw the replica's first ACK after the transfer.
        wait_until(Duration::from_secs(60), "the replica online", || {
            info(&mut c, "replication", "slave0").contains("state=online")
        });
        let line = info(&mut c, "replication", "slave0");
        assert!(
            line.starts_with(&format!(
                "ip=127.0.0.1,port={},state=online,offset=",
                replica.port
            )),
            "{line}"
        );
        assert_eq!(info(&mut c, "replication", "repl_backlog_active"), "1");
        assert_eq!(
            info(&mut c, "replication", "repl_backlog_first_byte_offset"),
            "1"
        );
        names.push(field_names(&mut c, "replication"));
    }
    assert_eq!(names[0], names[1]);
}

#[test]
fn a_promoted_replica_lets_its_sibling_continue_partially() {
    let (node, a, mut m, mut ra) = synced_pair(&[]);
    let b = replica_of(&node);
    let mut rb = RawClient::connect(b.port);
    load_while(&node, |progress| more_rounds(progress, 50));
    wait_short_ttls_gone(&mut m);
    // A manual failover's first step: the master stops writing, so both replicas end at
    // the same offset. Otherwise its active expiry (KEYS hides keys that expired but are
    // not deleted yet) or its PING can reach B and not A, and B, ahead of its new
    // master, needs a full sync (so would it from a redis-server master).
    ok(&mut m, &["CLIENT", "PAUSE", "600000", "WRITE"]);
    wait_in_sync(&mut m, &mut ra);
    wait_in_sync(&mut m, &mut rb);
    let want = state_of(&mut m);
    // A takes over; B follows it and continues the node's history with +CONTINUE.
    ok(&mut ra, &["REPLICAOF", "NO", "ONE"]);
    ok(&mut rb, &["REPLICAOF", "127.0.0.1", &a.port.to_string()]);
    wait_until(Duration::from_secs(60), "B to follow A", || {
        info(&mut rb, "replication", "master_link_status") == "up"
            && info(&mut rb, "replication", "master_port") == a.port.to_string()
    });
    let partial = info_u64(&mut ra, "stats", "sync_partial_ok");
    assert_eq!(partial, 1, "A's log:\n{}", a.log());
    assert_eq!(info_u64(&mut ra, "stats", "sync_full"), 0);
    assert_same_state(&want, &state_of(&mut rb));
}
