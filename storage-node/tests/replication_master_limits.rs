//! A storage-node master's limits on its redis-server 7.0 replicas: the replica output
//! buffer limit, `repl-timeout`, `repl-backlog-ttl`, and one diskless snapshot shared by
//! the replicas `repl-diskless-sync-max-replicas` waits for.

use std::time::{Duration, Instant};

use test_harness::{wait_until, RawClient, ServerProcess};

mod persistence_fixture;
mod replication_fixture;
use persistence_fixture::{bytes_of, ok};
use replication_fixture::{info, info_u64, replica_of};

fn wait_online(m: &mut RawClient, replicas: usize) {
    wait_until(Duration::from_secs(60), "the replicas to be online", || {
        let text = String::from_utf8(bytes_of(&m.call(&["INFO", "replication"]))).unwrap();
        text.matches("state=online").count() == replicas
    });
}

fn connected_replicas(m: &mut RawClient) -> u64 {
    info_u64(m, "replication", "connected_slaves")
}

/// A storage-node master with `client-output-buffer-limit <replica_limit>` and one
/// redis-server replica, online and then stopped by SIGSTOP.
struct StoppedReplica {
    node: ServerProcess,
    master: RawClient,
    replica: ServerProcess,
    value: String,
    written: usize,
}

impl StoppedReplica {
    fn start(replica_limit: &str) -> StoppedReplica {
        let node = ServerProcess::storage_node(&[
            "--repl-diskless-sync-delay",
            "0",
            "--client-output-buffer-limit",
            replica_limit,
        ]);
        let mut master = RawClient::connect(node.port);
        let replica = replica_of(&node);
        wait_online(&mut master, 1);
        replica.signal("STOP");
        StoppedReplica {
            node,
            master,
            replica,
            value: "x".repeat(64 * 1024),
            written: 0,
        }
    }

    /// Writes 1 MB to the master (16 SETs of 64 KB over 64 keys).
    fn write(&mut self) {
        for _ in 0..16 {
            let key = format!("big:{}", self.written % 64);
            ok(&mut self.master, &["SET", &key, &self.value]);
            self.written += 1;
        }
    }
}

/// A replica stopped by SIGSTOP while the master writes far more than the socket
/// buffers and `replica_limit` (a `client-output-buffer-limit` replica class) together:
/// the master drops it and logs `reason`.
fn a_stopped_replica_is_dropped_at(replica_limit: &str, reason: &str) {
    let mut s = StoppedReplica::start(replica_limit);
    wait_until(
        Duration::from_secs(120),
        "the replica to be dropped",
        || {
            s.write();
            connected_replicas(&mut s.master) == 0
        },
    );
    s.node.wait_for_log(reason, Duration::from_secs(30));
    s.replica.signal("CONT");
}

/// `maxmemory` does not count the replication stream held for replicas beyond
/// `repl-backlog-size` (Redis 7.0's `freeMemoryGetNotCountedMemory`): with the replica
/// stopped, INFO's `mem_not_counted_for_evict` grows with what it has yet to be sent, and
/// falls back once the replica is gone and the backlog trims to its size (to within the
/// chunk the trim stops at: the backlog keeps at least its size).
#[test]
fn a_stopped_replicas_stream_is_not_counted_for_eviction() {
    let not_counted = |m: &mut RawClient| info_u64(m, "memory", "mem_not_counted_for_evict");
    let mut s = StoppedReplica::start("replica 0 0 0");
    assert_eq!(not_counted(&mut s.master), 0);
    wait_until(
        Duration::from_secs(120),
        "the stopped replica's stream to pass 4 MB over the backlog",
        || {
            s.write();
            not_counted(&mut s.master) > 4 << 20
        },
    );
    s.replica.signal("CONT");
    s.replica.kill();
    wait_until(
        Duration::from_secs(60),
        "the replica to be gone and the backlog back to its size",
        || {
            s.write();
            connected_replicas(&mut s.master) == 0 && not_counted(&mut s.master) < 1 << 20
        },
    );
}

#[test]
fn a_replica_past_the_output_buffer_hard_limit_is_dropped() {
    a_stopped_replica_is_dropped_at("replica 1mb 0 0", "replica output buffer hard limit");
}

#[test]
fn a_silent_replica_is_dropped_after_repl_timeout() {
    let node =
        ServerProcess::storage_node(&["--repl-diskless-sync-delay", "0", "--repl-timeout", "2"]);
    let mut m = RawClient::connect(node.port);
    let replica = replica_of(&node);
    wait_online(&mut m, 1);
    replica.signal("STOP");
    wait_until(Duration::from_secs(60), "the replica to time out", || {
        connected_replicas(&mut m) == 0
    });
    node.wait_for_log("no ACK within repl-timeout", Duration::from_secs(30));
    replica.signal("CONT");
}

#[test]
fn the_backlog_is_freed_after_repl_backlog_ttl_without_replicas() {
    let node = ServerProcess::storage_node(&[
        "--repl-diskless-sync-delay",
        "0",
        "--repl-backlog-ttl",
        "1",
    ]);
    let mut m = RawClient::connect(node.port);
    assert_eq!(info(&mut m, "replication", "repl_backlog_active"), "0");
    let replica = replica_of(&node);
    wait_online(&mut m, 1);
    assert_eq!(info(&mut m, "replication", "repl_backlog_active"), "1");
    ok(&mut m, &["SET", "k", "v"]);
    let replid = info(&mut m, "replication", "master_replid");
    drop(replica);
    wait_until(Duration::from_secs(60), "the backlog to be freed", || {
        info(&mut m, "replication", "repl_backlog_active") == "0"
    });
    // Freed with its history: a new id, the offset kept.
    assert_ne!(info(&mut m, "replication", "master_replid"), replid);
    assert_ne!(info(&mut m, "replication", "master_repl_offset"), "0");
}

#[test]
fn replicas_that_max_replicas_waits_for_share_one_diskless_snapshot() {
    let node = ServerProcess::storage_node(&[
        "--repl-diskless-sync-delay",
        "600",
        "--repl-diskless-sync-max-replicas",
        "2",
    ]);
    let mut m = RawClient::connect(node.port);
    ok(&mut m, &["SET", "k", "v"]);
    let first = replica_of(&node);
    let mut r1 = RawClient::connect(first.port);
    // The delay holds the first one until the second comes.
    wait_until(Duration::from_secs(60), "the first replica to wait", || {
        info(&mut m, "replication", "connected_slaves") == "1"
    });
    let waiting = info(&mut m, "replication", "slave0");
    assert!(waiting.contains("state=wait_bgsave"), "{waiting}");
    let second = replica_of(&node);
    let mut r2 = RawClient::connect(second.port);
    wait_online(&mut m, 2);
    let log = node.log();
    assert_eq!(
        log.matches("Starting BGSAVE for SYNC with target: replicas sockets")
            .count(),
        1,
        "{log}"
    );
    for r in [&mut r1, &mut r2] {
        wait_until(Duration::from_secs(30), "the data on the replica", || {
            bytes_of(&r.call(&["GET", "k"])) == b"v"
        });
    }
    // They are replicas in CLIENT LIST (flag S), and not clients in INFO clients.
    let list =
        String::from_utf8(bytes_of(&m.call(&["CLIENT", "LIST", "TYPE", "replica"]))).unwrap();
    assert_eq!(
        list.lines().filter(|l| l.contains("flags=S")).count(),
        2,
        "{list}"
    );
    assert_eq!(info(&mut m, "clients", "connected_clients"), "1");
}

#[test]
fn a_sync_waits_for_the_running_snapshot_instead_of_failing() {
    let node = ServerProcess::storage_node(&["--repl-diskless-sync-delay", "0"]);
    let mut m = RawClient::connect(node.port);
    let value = "x".repeat(1024 * 1024);
    for i in 0..24 {
        ok(&mut m, &["SET", &format!("big:{i}"), &value]);
    }
    // A replica that does not read holds its diskless snapshot: the socket and the
    // snapshot's channel fill up and the snapshot waits.
    let mut holder = std::net::TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    std::io::Write::write_all(&mut holder, b"REPLCONF capa eof\r\nPSYNC ? -1\r\n").unwrap();
    wait_until(Duration::from_secs(30), "the first snapshot to run", || {
        info(&mut m, "persistence", "rdb_bgsave_in_progress") == "1"
    });
    let replica = replica_of(&node);
    let mut r = RawClient::connect(replica.port);
    wait_until(Duration::from_secs(30), "the second sync to wait", || {
        node.log().contains("Waiting for next BGSAVE for SYNC")
    });
    assert_eq!(info(&mut m, "persistence", "rdb_bgsave_in_progress"), "1");
    assert_ne!(info(&mut r, "replication", "master_link_status"), "up");
    // The holder goes: its snapshot stops, and the waiting sync gets the next one.
    drop(holder);
    wait_until(Duration::from_secs(60), "the replica to sync", || {
        info(&mut r, "replication", "master_link_status") == "up"
    });
    assert_eq!(r.call(&["DBSIZE"]).as_integer(), Some(24));
    assert_eq!(info(&mut m, "stats", "sync_full"), "2");
}

#[test]
fn a_replica_over_the_soft_limit_for_its_seconds_is_dropped() {
    a_stopped_replica_is_dropped_at("replica 0 1mb 1", "soft limit for 1 seconds");
}

/// Reads from a raw replica connection until `needle` has arrived (bounded by the
/// client's read timeout and `limit`).
fn read_until(stream: &mut std::net::TcpStream, needle: &[u8], limit: Duration) -> Vec<u8> {
    use std::io::Read;
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    while !got.windows(needle.len()).any(|w| w == needle) {
        assert!(
            Instant::now() < deadline,
            "no {:?} in {:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(&got)
        );
        let mut chunk = [0u8; 65536];
        match stream.read(&mut chunk) {
            Ok(0) => panic!("the master closed the connection"),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
    }
    got
}

#[test]
fn sync_sends_the_rdb_without_fullresync_and_pings_follow_the_period() {
    let node = ServerProcess::storage_node(&[
        "--repl-diskless-sync",
        "no",
        "--repl-ping-replica-period",
        "1",
    ]);
    let mut m = RawClient::connect(node.port);
    ok(&mut m, &["SET", "k", "v"]);
    let mut replica = std::net::TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    std::io::Write::write_all(&mut replica, b"SYNC\r\n").unwrap();
    // Old protocol: newlines while the RDB is written, then `$<len>` and the file.
    let got = read_until(&mut replica, b"REDIS0010", Duration::from_secs(30));
    let start = got.iter().position(|&b| b != b'\n').unwrap();
    assert!(
        got[start..].starts_with(b"$"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    // The heartbeat, then a write, in the stream.
    read_until(
        &mut replica,
        b"*1\r\n$4\r\nPING\r\n",
        Duration::from_secs(30),
    );
    ok(&mut m, &["SET", "k", "w"]);
    read_until(
        &mut replica,
        b"$1\r\nk\r\n$1\r\nw\r\n",
        Duration::from_secs(30),
    );
    // CONFIG SET resizes the live backlog.
    ok(&mut m, &["CONFIG", "SET", "repl-backlog-size", "64kb"]);
    assert_eq!(info(&mut m, "replication", "repl_backlog_size"), "65536");
}

#[test]
fn an_rdb_only_replica_gets_the_snapshot_and_is_closed() {
    use std::io::{Read, Write};
    let node = ServerProcess::storage_node(&["--repl-diskless-sync-delay", "0"]);
    let mut m = RawClient::connect(node.port);
    ok(&mut m, &["SET", "a", "1"]);
    // What `redis-cli --rdb` sends.
    let mut replica = std::net::TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    replica
        .write_all(b"REPLCONF capa eof\r\nREPLCONF rdb-only 1\r\nPSYNC ? -1\r\n")
        .unwrap();
    replica
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "not closed: {:?}",
            String::from_utf8_lossy(&got)
        );
        let mut chunk = [0u8; 65536];
        match replica.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(_) => {}
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(text.starts_with("+OK\r\n+OK\r\n+FULLRESYNC "), "{text}");
    // The payload ends with its EOF mark, and nothing follows it.
    let mark = text.split("$EOF:").nth(1).unwrap()[..40].to_string();
    assert!(text.ends_with(&mark), "{text}");
    wait_until(
        Duration::from_secs(30),
        "the replica to be forgotten",
        || connected_replicas(&mut m) == 0,
    );
}
