//! The storage-node as a replica of a real redis-server 7.0 master (issue 16, replica side).
//!
//! Every test writes to the master under a bounded load of every data type (strings,
//! lists, hashes, sets, sorted sets, TTLs, EVAL, MULTI/EXEC, FUNCTION LOAD and FCALL),
//! waits until the replica's `slave_repl_offset` equals the master's `master_repl_offset`,
//! and then compares every key's DUMP, contents and PTTL (the persistence fixture's
//! comparison), and the function libraries.

use slotproxy::resp::Frame;
use test_harness::{free_port, RawClient, ServerProcess};

mod persistence_fixture;
mod replication_fixture;
use persistence_fixture::{bytes_of, find_info, node_in, ok, populate, scratch_dir, state_of};
use replication_fixture::{assert_same_data, info_u64, redis_master, wait_for, wait_in_sync};

const SCRIPT: &str = "redis.call('incr', KEYS[1]); redis.call('rpush', KEYS[2], ARGV[1]); \
                      return redis.call('llen', KEYS[2])";
const LIBRARY: &str = "#!lua name=replib\nredis.register_function('bump', \
                       function(keys, args) return redis.call('hincrby', keys[1], args[1], 1) end)";

/// `rounds` rounds of writes of every kind to `master`, pipelined per round.
fn write_load(master_port: u16, rounds: usize, seed: usize) {
    let mut c = RawClient::connect(master_port);
    // One library only: FUNCTION DUMP lists several in the order of a dictionary seeded
    // at random per process, which no two servers share.
    ok(&mut c, &["FUNCTION", "FLUSH"]);
    ok(&mut c, &["FUNCTION", "LOAD", LIBRARY]);
    for round in 0..rounds {
        let i = seed * 1_000_000 + round;
        let n = (round % 37).to_string();
        let key = |name: &str| format!("load:{name}:{}", round % 50);
        let commands: Vec<Vec<String>> = vec![
            vec!["SET".into(), key("str"), format!("v{i}")],
            vec!["APPEND".into(), key("str"), "x".into()],
            vec!["INCRBY".into(), key("counter"), n.clone()],
            // Never a whole number: a replica stores the SET it receives for a whole one
            // int-encoded where the master keeps a string (redis-server replicas too).
            vec!["SET".into(), key("float"), "0.1".into(), "NX".into()],
            vec!["INCRBYFLOAT".into(), key("float"), "1.5".into()],
            vec!["RPUSH".into(), key("list"), format!("e{i}"), n.clone()],
            vec!["LPOP".into(), key("list")],
            vec![
                "LMOVE".into(),
                key("list"),
                key("list2"),
                "LEFT".into(),
                "RIGHT".into(),
            ],
            vec![
                "HSET".into(),
                key("hash"),
                format!("f{}", round % 7),
                format!("{i}"),
            ],
            vec!["HDEL".into(), key("hash"), format!("f{}", (round + 3) % 7)],
            vec!["HINCRBY".into(), key("hash"), "n".into(), "3".into()],
            // The anchor keeps the set a hashtable: one left with only integers would be
            // loaded from a snapshot as an intset (by redis-server replicas too).
            vec![
                "SADD".into(),
                key("set"),
                n.clone(),
                format!("m{}", round % 11),
                "anchor".into(),
            ],
            vec!["SREM".into(), key("set"), format!("m{}", (round + 5) % 11)],
            vec![
                "SADD".into(),
                key("intset"),
                n.clone(),
                format!("{}", round % 7),
            ],
            vec!["SPOP".into(), key("intset")],
            vec![
                "ZADD".into(),
                key("zset"),
                format!("{}.5", round % 13),
                format!("z{}", round % 17),
            ],
            vec![
                "ZINCRBY".into(),
                key("zset"),
                "2".into(),
                format!("z{}", round % 5),
            ],
            vec!["ZREM".into(), key("zset"), format!("z{}", (round + 1) % 17)],
            // TTLs: long ones kept, short ones that expire on the master (its DEL follows).
            vec!["EXPIRE".into(), key("hash"), "100000".into()],
            vec![
                "SET".into(),
                format!("load:short:{round}"),
                "x".into(),
                "PX".into(),
                "5".into(),
            ],
            vec!["PEXPIRE".into(), key("list2"), "300000".into()],
            vec!["PERSIST".into(), key("str")],
            vec![
                "EVAL".into(),
                SCRIPT.into(),
                "2".into(),
                key("evalc"),
                key("evall"),
                n.clone(),
            ],
            vec![
                "FCALL".into(),
                "bump".into(),
                "1".into(),
                key("fhash"),
                format!("g{}", round % 3),
            ],
            vec!["MULTI".into()],
            vec!["INCR".into(), key("tx")],
            vec!["SELECT".into(), "1".into()],
            vec!["SET".into(), key("db1"), format!("{i}")],
            vec!["SELECT".into(), "0".into()],
            vec!["EXEC".into()],
            vec!["DEL".into(), key("gone")],
            vec!["SET".into(), key("gone"), "1".into()],
        ];
        let mut bytes = Vec::new();
        for command in &commands {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            bytes.extend(RawClient::encode(&args));
        }
        c.send_raw(&bytes);
        for command in &commands {
            let reply = c.read_reply().0;
            assert!(
                !matches!(reply, Frame::Error(_)),
                "{command:?} failed on the master: {reply:?}"
            );
        }
    }
}

/// The master's and the replica's data are the same, key by key (see
/// [`assert_same_data`]), once the replica has applied the master's whole stream.
fn assert_replica_matches(master: &mut RawClient, replica: &mut RawClient) {
    // From here on only the stream changes the replica: the master removes no key on its
    // own, so both hold the same expired-but-not-deleted keys.
    ok(master, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    wait_in_sync(master, replica);
    let dumps = assert_same_data(&state_of(master), &state_of(replica));
    assert!(dumps >= 50, "only {dumps} DUMPs compared");
    for db in ["0", "1", "5"] {
        ok(master, &["SELECT", db]);
        ok(replica, &["SELECT", db]);
        assert_eq!(
            master.call(&["DBSIZE"]),
            replica.call(&["DBSIZE"]),
            "DBSIZE of db {db} (expired keys the master has not deleted yet count on both)"
        );
    }
    ok(master, &["SELECT", "0"]);
    ok(replica, &["SELECT", "0"]);
}

/// Full sync then the stream, for one way of sending and one way of loading the snapshot.
fn full_sync_then_stream(master_args: &[&str], replica_args: &[&str]) {
    let master_process = redis_master(master_args);
    let mut master = RawClient::connect(master_process.port);
    populate(&mut master);
    write_load(master_process.port, 200, 1);
    let node = ServerProcess::storage_node(replica_args);
    let mut replica = RawClient::connect(node.port);
    // Data the snapshot replaces.
    ok(&mut replica, &["SET", "stale-local-key", "x"]);
    let port = master_process.port.to_string();
    assert_eq!(
        replica.call(&["REPLICAOF", "127.0.0.1", &port]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        replica.call(&["REPLICAOF", "127.0.0.1", &port]),
        Frame::Simple("OK Already connected to specified master".into())
    );
    // Writes during and after the sync reach the replica through the stream.
    let load = std::thread::spawn({
        let port = master_process.port;
        move || write_load(port, 400, 2)
    });
    load.join().unwrap();
    assert_replica_matches(&mut master, &mut replica);
    assert_eq!(
        replica.call(&["EXISTS", "stale-local-key"]),
        Frame::Integer(0)
    );
    assert_eq!(info_u64(&mut master, "stats", "sync_full"), 1);
}

#[test]
fn full_sync_from_disk_snapshot_loaded_through_a_file() {
    // `$<len>` form, `repl-diskless-load disabled`.
    full_sync_then_stream(
        &["--repl-diskless-sync", "no"],
        &["--repl-diskless-load", "disabled"],
    );
}

#[test]
fn full_sync_diskless_snapshot_loaded_from_memory() {
    // `$EOF:<mark>` form, `repl-diskless-load swapdb`.
    full_sync_then_stream(
        &["--repl-diskless-sync", "yes"],
        &["--repl-diskless-load", "swapdb"],
    );
}

#[test]
fn the_replicaof_setting_replicates_from_start() {
    let master_process = redis_master(&[]);
    let mut master = RawClient::connect(master_process.port);
    populate(&mut master);
    let port = master_process.port.to_string();
    let node = ServerProcess::storage_node(&["--replicaof", "127.0.0.1", &port]);
    let mut replica = RawClient::connect(node.port);
    write_load(master_process.port, 50, 3);
    assert_replica_matches(&mut master, &mut replica);
    assert_eq!(
        replica.call(&["CONFIG", "GET", "replicaof"]),
        master_process_config_shown(&port)
    );
    // A replica's log lines carry the role letter S, as Redis's do.
    node.wait_for_log("Finished with success", std::time::Duration::from_secs(30));
    let log = node.log();
    assert!(
        log.lines()
            .any(|l| l.contains(":S ") && l.contains("Finished with success")),
        "{log}"
    );
    // Promoted, it forgets its master and takes writes; its history goes on under a new
    // id, the master's kept as the second one up to where it was (PSYNC2).
    let master_id = find_info(&mut master, "replication", "master_replid").unwrap();
    // The master's PING (every 10 s) must not land between reading the offset and the
    // promotion: its writes pause, and the replica has everything before that.
    ok(&mut master, &["CLIENT", "PAUSE", "600000", "WRITE"]);
    wait_in_sync(&mut master, &mut replica);
    let offset = info_u64(&mut replica, "replication", "slave_repl_offset");
    ok(&mut replica, &["REPLICAOF", "NO", "ONE"]);
    ok(&mut master, &["CLIENT", "UNPAUSE"]);
    assert_eq!(
        find_info(&mut replica, "replication", "role").as_deref(),
        Some("master")
    );
    assert_eq!(
        find_info(&mut replica, "replication", "master_replid2"),
        Some(master_id.clone())
    );
    assert_ne!(
        find_info(&mut replica, "replication", "master_replid"),
        Some(master_id)
    );
    assert_eq!(
        info_u64(&mut replica, "replication", "second_repl_offset"),
        offset + 1
    );
    assert_eq!(
        info_u64(&mut replica, "replication", "master_repl_offset"),
        offset
    );
    ok(&mut replica, &["SET", "after-promotion", "1"]);
    assert_eq!(
        replica.call(&["CONFIG", "GET", "replicaof"]),
        Frame::Array(vec![
            Frame::Bulk("replicaof".into()),
            Frame::Bulk("".into())
        ])
    );
    // Pointed back, it has diverged: a full sync replaces its data with the master's.
    ok(&mut replica, &["REPLICAOF", "127.0.0.1", &port]);
    write_load(master_process.port, 20, 5);
    assert_replica_matches(&mut master, &mut replica);
    assert_eq!(
        replica.call(&["EXISTS", "after-promotion"]),
        Frame::Integer(0)
    );
    assert_eq!(info_u64(&mut master, "stats", "sync_full"), 2);
}

fn master_process_config_shown(port: &str) -> Frame {
    Frame::Array(vec![
        Frame::Bulk("replicaof".into()),
        Frame::Bulk(format!("127.0.0.1 {port}").into()),
    ])
}

/// A populated redis-server master with a `repl-backlog-size` of `backlog`, a node
/// replica in sync with it, and a thread writing `rounds` rounds of load (`seed`) to the
/// master. The processes are returned to be kept alive.
fn synced_replica_under_load(
    backlog: &str,
    rounds: usize,
    seed: usize,
) -> (
    [ServerProcess; 2],
    RawClient,
    RawClient,
    std::thread::JoinHandle<()>,
) {
    let master_process = redis_master(&["--repl-backlog-size", backlog]);
    let mut master = RawClient::connect(master_process.port);
    populate(&mut master);
    let node = ServerProcess::storage_node(&[]);
    let mut replica = RawClient::connect(node.port);
    ok(
        &mut replica,
        &["REPLICAOF", "127.0.0.1", &master_process.port.to_string()],
    );
    wait_in_sync(&mut master, &mut replica);
    let port = master_process.port;
    let load = std::thread::spawn(move || write_load(port, rounds, seed));
    ([master_process, node], master, replica, load)
}

#[test]
fn link_flaps_continue_partially_and_the_data_matches() {
    // The load writes megabytes a second: a backlog that holds every flap's gap.
    let (_processes, mut master, mut replica, load) = synced_replica_under_load("256mb", 1500, 4);
    for flap in 0..20 {
        let before = info_u64(&mut master, "stats", "sync_partial_ok");
        // Cut from either end: the master drops its replica, or the replica its master.
        let killed = if flap % 2 == 0 {
            master.call(&["CLIENT", "KILL", "TYPE", "replica"])
        } else {
            wait_for("the link to be up", || {
                find_info(&mut replica, "replication", "master_link_status").as_deref()
                    == Some("up")
            });
            replica.call(&["CLIENT", "KILL", "TYPE", "master"])
        };
        assert_eq!(killed, Frame::Integer(1), "flap {flap}");
        wait_for("the replica to continue after a flap", || {
            info_u64(&mut master, "stats", "sync_partial_ok") > before
        });
    }
    load.join().unwrap();
    assert_replica_matches(&mut master, &mut replica);
    assert_eq!(info_u64(&mut master, "stats", "sync_full"), 1);
    assert!(info_u64(&mut master, "stats", "sync_partial_ok") >= 20);
}

/// With a backlog too small for the gap a flap leaves, the replica syncs in full again
/// (its data replaced while the load goes on) and still ends equal to the master.
#[test]
fn a_flap_past_a_tiny_backlog_syncs_in_full_and_the_data_matches() {
    let (_processes, mut master, mut replica, load) = synced_replica_under_load("16384", 2000, 7);
    for flap in 0..3 {
        let before = info_u64(&mut master, "stats", "sync_full");
        assert_eq!(
            master.call(&["CLIENT", "KILL", "TYPE", "replica"]),
            Frame::Integer(1),
            "flap {flap}"
        );
        // The writes during the second before the replica reconnects overrun 16 KB.
        wait_for("a full sync after the flap", || {
            info_u64(&mut master, "stats", "sync_full") > before
                || info_u64(&mut master, "stats", "sync_partial_ok") > 0
        });
        wait_for("the replica to be up again", || {
            find_info(&mut replica, "replication", "master_link_status").as_deref() == Some("up")
        });
    }
    load.join().unwrap();
    assert_replica_matches(&mut master, &mut replica);
    assert!(info_u64(&mut master, "stats", "sync_full") >= 2);
}

#[test]
fn expired_keys_stay_on_the_replica_until_the_master_deletes_them() {
    let master_process = redis_master(&[]);
    let mut master = RawClient::connect(master_process.port);
    // The master's own expiry cycle must not delete the key before the test reads it.
    ok(&mut master, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let node = ServerProcess::storage_node(&[]);
    let mut replica = RawClient::connect(node.port);
    ok(
        &mut replica,
        &["REPLICAOF", "127.0.0.1", &master_process.port.to_string()],
    );
    ok(&mut master, &["SET", "soon", "1", "PX", "50"]);
    ok(&mut master, &["SET", "kept", "1"]);
    wait_in_sync(&mut master, &mut replica);
    wait_for("the key's TTL to pass", || {
        replica.call(&["PTTL", "soon"]) == Frame::Integer(-2)
    });
    // Hidden from reads, but still stored: only the master's DEL removes it.
    assert_eq!(replica.call(&["GET", "soon"]), Frame::Null);
    assert_eq!(replica.call(&["EXISTS", "soon"]), Frame::Integer(0));
    assert_eq!(replica.call(&["DBSIZE"]), Frame::Integer(2));
    // A read on the master expires it there, and its DEL reaches the replica.
    assert_eq!(master.call(&["GET", "soon"]), Frame::Null);
    wait_in_sync(&mut master, &mut replica);
    assert_eq!(replica.call(&["DBSIZE"]), Frame::Integer(1));
    // RANDOMKEY on a database of expired keys only answers one of them (as Redis does
    // on a replica) instead of drawing forever.
    ok(&mut master, &["SELECT", "2"]);
    ok(&mut master, &["SET", "gone-soon", "1", "PX", "20"]);
    wait_in_sync(&mut master, &mut replica);
    ok(&mut replica, &["SELECT", "2"]);
    wait_for("the key's TTL to pass", || {
        replica.call(&["PTTL", "gone-soon"]) == Frame::Integer(-2)
    });
    assert_eq!(
        replica.call(&["RANDOMKEY"]),
        Frame::Bulk("gone-soon".into())
    );
}

/// The same commands on a storage-node replica and a redis-server replica whose master
/// does not answer, compared reply by reply.
#[test]
fn read_only_and_stale_data_replies_match_redis() {
    let dead = free_port().to_string();
    let args = [
        "--replicaof",
        "127.0.0.1",
        &dead,
        "--replica-serve-stale-data",
        "no",
    ];
    let node = ServerProcess::storage_node(&args);
    let redis = ServerProcess::redis_server(&args);
    let mut a = RawClient::connect(node.port);
    let mut b = RawClient::connect(redis.port);
    // INFO's replica lines, up to the master part.
    let replica_lines = |c: &mut RawClient| -> Vec<String> {
        String::from_utf8(bytes_of(&c.call(&["INFO", "replication"])))
            .unwrap()
            .lines()
            .take_while(|l| !l.starts_with("connected_slaves"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(replica_lines(&mut a), replica_lines(&mut b));
    let script = [
        vec!["GET", "k"],
        vec!["SET", "k", "v"],
        vec!["PING"],
        vec!["INCR", "n"],
        vec!["MULTI"],
        vec!["GET", "k"],
        vec!["EXEC"],
        vec!["CONFIG", "SET", "replica-read-only", "no"],
        vec!["SET", "k", "v"],
        vec!["GET", "k"],
        vec!["CONFIG", "SET", "replica-serve-stale-data", "yes"],
        vec!["SET", "k", "v"],
        vec!["GET", "k"],
        vec!["CONFIG", "SET", "replica-read-only", "yes"],
        vec!["SET", "k", "w"],
        vec!["MULTI"],
        vec!["SET", "k", "x"],
        vec!["EXEC"],
        vec!["EVAL", "return redis.call('set', 'k', 'y')", "0"],
        vec!["REPLICAOF", "127.0.0.1", "notaport"],
        vec!["REPLICAOF", "127.0.0.1", "70000"],
        vec!["REPLICAOF", "127.0.0.1", &dead],
        vec!["CONFIG", "GET", "replica-serve-stale-data"],
        vec!["REPLICAOF", "NO", "ONE"],
        vec!["SET", "k", "z"],
        vec!["REPLICAOF", "NO", "ONE"],
    ];
    for command in &script {
        let (ra, rb) = (a.call(command), b.call(command));
        // Script errors name the script's SHA and line on both; compared up to them.
        let cut = |f: &Frame| match f {
            Frame::Error(e) => {
                let text = String::from_utf8_lossy(e).into_owned();
                text.split(" script:")
                    .next()
                    .unwrap_or_default()
                    .to_string()
            }
            other => format!("{other:?}"),
        };
        assert_eq!(cut(&ra), cut(&rb), "{command:?}");
    }
}

#[test]
fn blocked_clients_are_released_when_the_node_follows_a_master() {
    let master_process = redis_master(&[]);
    let node = ServerProcess::storage_node(&[]);
    let mut blocked = RawClient::connect(node.port);
    let mut admin = RawClient::connect(node.port);
    blocked.send(&[b"BLPOP", b"queue", b"0"]);
    test_harness::wait_blocked(&mut admin, 1);
    ok(
        &mut admin,
        &["REPLICAOF", "127.0.0.1", &master_process.port.to_string()],
    );
    assert_eq!(
        blocked.read_reply().0,
        Frame::Error(
            "UNBLOCKED force unblock from blocking operation, instance state changed \
             (master -> replica?)"
                .into()
        )
    );
    // Then the connection closes, as Redis closes it after the error.
    assert!(blocked.try_read_reply().is_none());
}

#[test]
fn replicaof_is_refused_in_cluster_mode() {
    let node = ServerProcess::storage_node(&["--cluster-enabled", "yes"]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(
        c.call(&["REPLICAOF", "127.0.0.1", "1"]),
        Frame::Error("ERR REPLICAOF not allowed in cluster mode.".into())
    );
}

/// A replica with `appendonly yes` logs what it applies: after a full sync (which starts
/// the AOF again from the new data) and the stream, a node started on its directory
/// without a master holds the master's data.
#[test]
fn a_replica_keeps_its_aof() {
    let master_process = redis_master(&[]);
    let mut master = RawClient::connect(master_process.port);
    populate(&mut master);
    let dir = scratch_dir("replica-aof");
    let port = master_process.port.to_string();
    let mut node = node_in(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--replicaof",
            "127.0.0.1",
            &port,
        ],
    );
    let mut replica = RawClient::connect(node.port);
    write_load(master_process.port, 100, 6);
    assert_replica_matches(&mut master, &mut replica);
    // The sync started the AOF again with a rewrite: until that ends the log does not
    // hold the snapshot's keys (as in Redis).
    wait_for("the AOF rewrite after the sync", || {
        find_info(&mut replica, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && find_info(&mut replica, "persistence", "aof_rewrite_scheduled").as_deref()
                == Some("0")
    });
    drop(replica);
    node.kill();
    let restarted = node_in(&dir, &["--appendonly", "yes"]);
    let mut restarted_client = RawClient::connect(restarted.port);
    let (want, want_functions) = state_of(&mut master);
    let (got, got_functions) = state_of(&mut restarted_client);
    let missing: Vec<String> = want
        .keys()
        .filter(|id| !got.contains_key(*id))
        .take(10)
        .map(|(db, key)| format!("{db}:{}", String::from_utf8_lossy(key)))
        .collect();
    assert!(
        want.keys().eq(got.keys()),
        "different key sets after the restart: {} keys on the master, {} restarted, \
         missing {missing:?}...",
        want.len(),
        got.len()
    );
    for (id, w) in &want {
        assert!(w.contents == got[id].contents, "contents of {:?}", id);
    }
    assert_eq!(want_functions, got_functions, "FUNCTION DUMP");
}
