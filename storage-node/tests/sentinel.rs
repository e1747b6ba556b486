//! Debian's `redis-sentinel` 7.0 managing storage-nodes as it manages redis-servers: three
//! sentinels (quorum 2) watch a master with two replicas, all started from config files.
//!
//! The failover scenario runs first with redis-servers (what Sentinel does is defined by
//! them, and their failover time is the baseline) and then with storage-nodes: a writer
//! writes keys, each followed by `WAIT 1`; the master is killed with SIGKILL; the sentinels
//! promote a replica (`SENTINEL get-master-addr-by-name` changes, ROLE on it says master),
//! the other replica follows it, every write `WAIT 1` acknowledged is on the new master,
//! the old master restarted from its config file is turned into a replica of the new one,
//! and `CONFIG REWRITE` (sent by Sentinel with each `REPLICAOF`) left every server's file
//! naming its new master.
//!
//! Also: a replica with `replica-priority 0` is never promoted, and Sentinel kills a busy
//! script on the master with `SCRIPT KILL`.

mod persistence_fixture;
mod replication_fixture;
mod sentinel_fixture;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient};

use replication_fixture::{wait_for, wait_in_sync};
use sentinel_fixture::{Group, Kind, DOWN_AFTER_MS};

/// The writer stops after this many writes or this long, whichever comes first.
const MAX_WRITES: u64 = 200_000;
const WRITE_LIMIT: Duration = Duration::from_secs(120);
/// Writes acknowledged before the master is killed.
const ACKED_BEFORE_KILL: usize = 200;

#[test]
fn sentinel_fails_over_storage_nodes_as_it_does_redis_servers() {
    let redis = failover(Kind::RedisServer);
    let node = failover(Kind::StorageNode);
    println!(
        "Sentinel failover (SIGKILL of the master until all 3 sentinels name the new one; \
         down-after-milliseconds {DOWN_AFTER_MS}): redis-server {:.2} s, storage-node {:.2} s \
         ({:.2}x)",
        redis.as_secs_f64(),
        node.as_secs_f64(),
        node.as_secs_f64() / redis.as_secs_f64()
    );
}

#[test]
fn a_replica_with_priority_0_is_never_promoted() {
    let mut group = Group::start(Kind::StorageNode, [100, 0, 100]);
    let (never, eligible) = (group.ports[1].to_string(), group.ports[2].to_string());
    wait_for(
        "the sentinels to see replica-priority 0 on server 1",
        || {
            (0..3).all(|s| {
                let replicas = group.sentinel_replicas(s);
                let priority = |port: &str| {
                    replicas
                        .iter()
                        .find(|r| r.get("port").map(String::as_str) == Some(port))
                        .and_then(|r| r.get("slave-priority").cloned())
                };
                priority(&never).as_deref() == Some("0")
                    && priority(&eligible).as_deref() == Some("100")
            })
        },
    );
    let (new_master, _) = group.kill_master_and_wait_for_failover(0);
    assert_eq!(
        new_master,
        2,
        "the replica with replica-priority 0 was promoted; sentinels:\n{}",
        group.sentinel_logs()
    );
    group.wait_following(1, group.ports[2]);
}

/// A script that never ends makes the master answer `-BUSY`; a sentinel that sees that on
/// a master it thinks is down sends `SCRIPT KILL`, as it does to redis-server.
#[test]
fn sentinel_kills_a_busy_script_on_the_master() {
    for kind in [Kind::RedisServer, Kind::StorageNode] {
        let group = Group::start(kind, [100, 100, 100]);
        let mut client = group.client(0);
        client.send(&[b"EVAL", b"while true do end", b"0"]);
        let reply = client.read_reply().0;
        let Frame::Error(error) = &reply else {
            panic!("{}: EVAL answered {reply:?}", kind.name());
        };
        assert!(
            error.starts_with(b"ERR Script killed by user with SCRIPT KILL..."),
            "{}: {}; sentinels:\n{}",
            kind.name(),
            String::from_utf8_lossy(error),
            group.sentinel_logs()
        );
        let master = group.servers[0].as_ref().expect("the master runs");
        wait_for("the master to log the slow script and its kill", || {
            let log = master.log();
            log.contains("Slow script detected: still in execution after")
                && log.contains("Lua script killed by user with SCRIPT KILL.")
        });
    }
}

/// The transaction Sentinel re-points a server with, on servers started without a config
/// file while a normal client and a subscriber are connected: the replies are
/// redis-server's (CONFIG REWRITE's error inside EXEC, one client killed of each type), and
/// both other clients are cut off.
#[test]
fn sentinels_reconfiguration_transaction_answers_as_redis() {
    let mut d = Differential::start();
    let (mut node_normal, mut redis_normal) = d.clients();
    let (mut node_subscriber, mut redis_subscriber) = d.clients();
    for subscriber in [&mut node_subscriber, &mut redis_subscriber] {
        subscriber.call(&["SUBSCRIBE", "__sentinel__:hello"]);
    }
    for normal in [&mut node_normal, &mut redis_normal] {
        assert_eq!(normal.call(&["PING"]), Frame::Simple("PONG".into()));
    }
    d.check_all(&[
        &["MULTI"],
        &["REPLICAOF", "NO", "ONE"],
        &["CONFIG", "REWRITE"],
        &["CLIENT", "KILL", "TYPE", "normal"],
        &["CLIENT", "KILL", "TYPE", "pubsub"],
        &["EXEC"],
    ]);
    for mut cut_off in [node_normal, redis_normal, node_subscriber, redis_subscriber] {
        assert!(
            cut_off.try_read_reply().is_none(),
            "a client was not killed"
        );
    }
}

/// The failover scenario; returns the time from the kill until every sentinel named the
/// new master.
fn failover(kind: Kind) -> Duration {
    let mut group = Group::start(kind, [100, 100, 100]);
    let stop = Arc::new(AtomicBool::new(false));
    let acked_count = Arc::new(AtomicUsize::new(0));
    let writer = start_writer(group.ports[0], stop.clone(), acked_count.clone());
    wait_for("the writer's first acknowledged writes", || {
        acked_count.load(Relaxed) >= ACKED_BEFORE_KILL
    });
    let (new_master, took) = group.kill_master_and_wait_for_failover(0);
    stop.store(true, Relaxed);
    let acked = writer.join().expect("the writer");
    let context = || format!("{}: sentinels:\n{}", kind.name(), group.sentinel_logs());

    assert_eq!(
        group.role(new_master).map(|role| role.0).as_deref(),
        Some("master"),
        "{}",
        context()
    );
    let other = if new_master == 1 { 2 } else { 1 };
    group.wait_following(other, group.ports[new_master]);
    let mut master = group.client(new_master);
    let lost: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|i| master.call(&["GET", &format!("key:{i}")]) != Frame::bulk(i.to_string()))
        .collect();
    assert!(
        lost.is_empty(),
        "{}: {} of {} writes WAIT acknowledged are not on the new master: {lost:?}",
        kind.name(),
        lost.len(),
        acked.len()
    );

    // The old master comes back as it was configured (a master) and Sentinel turns it
    // into a replica of the new master.
    group.servers[0] = Some(group.start_server(0));
    group.wait_following(0, group.ports[new_master]);
    let keys = master.call(&["DBSIZE"]);
    for replica in [0, other] {
        let mut client = group.client(replica);
        wait_in_sync(&mut master, &mut client);
        assert_eq!(
            client.call(&["DBSIZE"]),
            keys,
            "{}: server {replica}",
            kind.name()
        );
    }
    for server in 0..3 {
        let text = std::fs::read_to_string(group.config_file(server)).expect("a config file");
        let replicaof: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("replicaof"))
            .collect();
        let expected = if server == new_master {
            vec![]
        } else {
            vec![format!("replicaof 127.0.0.1 {}", group.ports[new_master])]
        };
        assert_eq!(
            replicaof,
            expected,
            "{}: server {server}'s rewritten config file:\n{text}",
            kind.name()
        );
    }
    took
}

/// Writes `key:<i>` = `<i>` for i = 0, 1, ... to the master on `port`, each followed by
/// `WAIT 1 1000`, until `stop`, the master is gone, [`MAX_WRITES`] or [`WRITE_LIMIT`];
/// returns the i whose write WAIT said a replica had.
fn start_writer(
    port: u16,
    stop: Arc<AtomicBool>,
    acked_count: Arc<AtomicUsize>,
) -> JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let mut client = RawClient::connect(port);
        let started = Instant::now();
        let mut acked = Vec::new();
        for i in 0..MAX_WRITES {
            if stop.load(Relaxed) || started.elapsed() > WRITE_LIMIT {
                break;
            }
            let (key, value) = (format!("key:{i}"), i.to_string());
            let mut request = RawClient::encode(&[b"SET", key.as_bytes(), value.as_bytes()]);
            request.extend(RawClient::encode(&[b"WAIT", b"1", b"1000"]));
            if client.try_send_raw(&request).is_err() {
                break;
            }
            let (Some((set, _)), Some((wait, _))) =
                (client.try_read_reply(), client.try_read_reply())
            else {
                break;
            };
            if set == Frame::Simple("OK".into()) && matches!(wait, Frame::Integer(n) if n >= 1) {
                acked.push(i);
                acked_count.store(acked.len(), Relaxed);
            }
        }
        acked
    })
}
