//! BGSAVE, save points, MISCONF and SHUTDOWN, against the node and a real redis-server 7.0.
//!
//! The central test proves the snapshot is point-in-time: one connection records the DUMP
//! and PTTL of every key, starts BGSAVE and keeps writing (overwrites, deletes, new keys,
//! TTL changes, FLUSHDB, SWAPDB) while the file is written; a second node loading the file
//! must hold exactly the recorded keys and values.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{show, RawClient};

mod persistence_fixture;
use persistence_fixture::{info_field, node_in, redis_in, scratch_dir};

/// Keys per database the point-in-time test starts with.
const KEYS: usize = 12_000;
/// Long enough that no key expires during a test; PTTLs are compared with this slack.
const TTL_SECONDS: u64 = 100_000;
const TTL_TOLERANCE_MS: i64 = 120_000;
const DEADLINE: Duration = Duration::from_secs(120);

/// Sends all commands at once, then reads every reply (one round trip).
fn pipeline(client: &mut RawClient, commands: &[Vec<Vec<u8>>]) -> Vec<Frame> {
    let mut bytes = Vec::new();
    for command in commands {
        let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
        bytes.extend(RawClient::encode(&args));
    }
    client.send_raw(&bytes);
    commands.iter().map(|_| client.read_reply().0).collect()
}

fn cmd(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

/// Polls until no background save runs (bounded).
fn wait_bgsave_done(client: &mut RawClient) {
    let deadline = Instant::now() + DEADLINE;
    while info_field(client, "rdb_bgsave_in_progress") != "0" {
        assert!(Instant::now() < deadline, "BGSAVE did not finish in time");
        std::thread::yield_now();
    }
}

/// The key names of one database at the start of the point-in-time test.
fn key_name(db: usize, i: usize) -> String {
    format!("db{db}:k{i}")
}

/// Fills `db` with strings, lists, hashes, sets and sorted sets, a third with a TTL.
fn populate(client: &mut RawClient, db: usize) {
    let mut batch = vec![cmd(&["SELECT", &db.to_string()])];
    for i in 0..KEYS {
        let key = key_name(db, i);
        let n = i.to_string();
        batch.push(match i % 5 {
            0 => cmd(&["SET", &key, &format!("value-{i}")]),
            1 => cmd(&["RPUSH", &key, "a", &n, "c"]),
            2 => cmd(&["HSET", &key, "f", &n, "g", "x"]),
            3 => cmd(&["SADD", &key, "m1", &n]),
            _ => cmd(&["ZADD", &key, "1", "one", &n, "two"]),
        });
        if i % 3 == 0 {
            batch.push(cmd(&["EXPIRE", &key, &TTL_SECONDS.to_string()]));
        }
        if batch.len() >= 2000 {
            check_all_ok(&pipeline(client, &batch));
            batch = vec![cmd(&["SELECT", &db.to_string()])];
        }
    }
    check_all_ok(&pipeline(client, &batch));
}

fn check_all_ok(replies: &[Frame]) {
    for reply in replies {
        assert!(!matches!(reply, Frame::Error(_)), "error reply: {reply:?}");
    }
}

/// Every key of `db` with its DUMP payload and whether it has a TTL (and the PTTL).
type Model = BTreeMap<Vec<u8>, (Vec<u8>, i64)>;

fn record(client: &mut RawClient, db: usize) -> Model {
    client.call(&["SELECT", &db.to_string()]);
    let mut keys = Vec::new();
    let mut cursor = "0".to_string();
    for _ in 0..1_000_000 {
        let reply = client.call(&["SCAN", &cursor, "COUNT", "1000"]);
        let parts = reply.as_array().expect("SCAN reply");
        cursor = String::from_utf8_lossy(parts[0].as_bytes().unwrap()).to_string();
        keys.extend(
            parts[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_bytes().unwrap().to_vec()),
        );
        if cursor == "0" {
            break;
        }
    }
    let mut model = Model::new();
    for chunk in keys.chunks(1000) {
        let mut batch = Vec::new();
        for key in chunk {
            batch.push(vec![b"DUMP".to_vec(), key.clone()]);
            batch.push(vec![b"PTTL".to_vec(), key.clone()]);
        }
        let replies = pipeline(client, &batch);
        for (key, pair) in chunk.iter().zip(replies.chunks(2)) {
            let dump = pair[0].as_bytes().expect("DUMP of a live key").to_vec();
            let Frame::Integer(pttl) = pair[1] else {
                panic!("PTTL reply {:?}", pair[1]);
            };
            model.insert(key.clone(), (dump, pttl));
        }
    }
    // A hashtable-encoded set's DUMP lists members in its hash order, which differs
    // between servers: such sets are compared by their sorted members instead.
    let sets: Vec<Vec<u8>> = model
        .iter()
        .filter(|(_, (dump, _))| dump.first() == Some(&RDB_TYPE_SET))
        .map(|(key, _)| key.clone())
        .collect();
    for chunk in sets.chunks(1000) {
        let batch: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|key| vec![b"SMEMBERS".to_vec(), key.clone()])
            .collect();
        for (key, members) in chunk.iter().zip(pipeline(client, &batch)) {
            let mut members: Vec<Vec<u8>> = members
                .as_array()
                .expect("SMEMBERS reply")
                .iter()
                .map(|m| m.as_bytes().unwrap().to_vec())
                .collect();
            members.sort();
            if let Some(entry) = model.get_mut(key) {
                entry.0 = members.join(&b"\n"[..]);
            }
        }
    }
    model
}

/// The first byte of a DUMP payload of a hashtable-encoded set.
const RDB_TYPE_SET: u8 = 2;

fn assert_same(db: usize, expected: &Model, actual: &Model) {
    assert_eq!(
        expected.len(),
        actual.len(),
        "db {db}: the file holds {} keys, the keyspace at BGSAVE had {}",
        actual.len(),
        expected.len()
    );
    for (key, (dump, pttl)) in expected {
        let Some((got_dump, got_pttl)) = actual.get(key) else {
            panic!("db {db}: key {} missing", String::from_utf8_lossy(key));
        };
        assert_eq!(
            dump,
            got_dump,
            "db {db}: key {} holds another value",
            String::from_utf8_lossy(key)
        );
        assert_eq!(*pttl < 0, *got_pttl < 0, "db {db}: TTL of {key:?}");
        assert!(
            (pttl - got_pttl).abs() <= TTL_TOLERANCE_MS,
            "db {db}: PTTL {pttl} became {got_pttl}"
        );
    }
}

/// One batch of writes that would change the snapshot if it were not point-in-time.
fn churn(round: usize) -> Vec<Vec<Vec<u8>>> {
    let mut batch = vec![cmd(&["SELECT", "0"])];
    for j in 0..200 {
        let i = (round * 977 + j * 61) % KEYS;
        let key = key_name(0, i);
        batch.push(match j % 8 {
            0 => cmd(&["SET", &key, "overwritten"]),
            1 => cmd(&["DEL", &key]),
            2 => cmd(&[
                "SET",
                &format!("new:{round}:{j}"),
                "created after the start",
            ]),
            3 => cmd(&["EXPIRE", &key, "5000000"]),
            4 => cmd(&["PERSIST", &key]),
            5 => cmd(&["APPEND", &key, "more"]),
            6 => cmd(&["RENAME", &key, &format!("renamed:{round}:{j}")]),
            _ => cmd(&["UNLINK", &key]),
        });
    }
    batch
}

#[test]
fn bgsave_writes_the_keyspace_as_it_was_when_it_started() {
    let dir = scratch_dir("pit");
    let node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    for db in [0, 1, 2, 3] {
        populate(&mut client, db);
    }
    let models: Vec<Model> = (0..4).map(|db| record(&mut client, db)).collect();

    // BGSAVE and the first writes in one pipelined batch: they run before the snapshot
    // writes its first slot.
    let mut first = vec![cmd(&["BGSAVE"])];
    first.extend(churn(0));
    first.push(cmd(&["SELECT", "1"]));
    first.push(cmd(&["FLUSHDB"]));
    first.push(cmd(&["SET", "db1:after-flush", "x"]));
    first.push(cmd(&["SWAPDB", "2", "3"]));
    let replies = pipeline(&mut client, &first);
    assert_eq!(
        replies[0],
        Frame::Simple("Background saving started".into())
    );
    // Then writes while it runs, until it is over.
    let deadline = Instant::now() + DEADLINE;
    let (mut rounds, mut seen_midway) = (1, 0);
    loop {
        let processed: u64 = info_field(&mut client, "current_save_keys_processed")
            .parse()
            .unwrap();
        if info_field(&mut client, "rdb_bgsave_in_progress") == "0" {
            break;
        }
        seen_midway += usize::from(processed > 0);
        pipeline(&mut client, &churn(rounds));
        rounds += 1;
        assert!(Instant::now() < deadline, "BGSAVE did not finish in time");
    }
    assert_eq!(info_field(&mut client, "rdb_last_bgsave_status"), "ok");
    assert!(
        seen_midway > 0,
        "no write batch ran while the snapshot was half written ({rounds} rounds)"
    );

    // A second node loads the file.
    let copy = scratch_dir("pit-load");
    std::fs::copy(dir.join("dump.rdb"), copy.join("dump.rdb")).unwrap();
    let loaded = node_in(&copy, &[]);
    let mut check = RawClient::connect(loaded.port);
    for (db, model) in models.iter().enumerate() {
        assert_same(db, model, &record(&mut check, db));
    }
    let cow: u64 = info_field(&mut client, "rdb_last_cow_size")
        .parse()
        .unwrap();
    assert!(cow > 0, "the writes during BGSAVE kept no pre-images");
    let verdict = Command::new("redis-check-rdb")
        .arg(dir.join("dump.rdb"))
        .output()
        .unwrap();
    assert!(
        verdict.status.success(),
        "redis-check-rdb: {}",
        String::from_utf8_lossy(&verdict.stdout)
    );
}

#[test]
fn redis_server_loads_what_bgsave_wrote() {
    let dir = scratch_dir("to-redis");
    let node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    populate(&mut client, 0);
    let model = record(&mut client, 0);
    let before: i64 = match client.call(&["LASTSAVE"]) {
        Frame::Integer(t) => t,
        other => panic!("LASTSAVE: {other:?}"),
    };
    assert_eq!(
        client.call(&["BGSAVE"]),
        Frame::Simple("Background saving started".into())
    );
    wait_bgsave_done(&mut client);
    assert_eq!(info_field(&mut client, "rdb_saves"), "1");
    assert_eq!(info_field(&mut client, "rdb_changes_since_last_save"), "0");
    let after: i64 = match client.call(&["LASTSAVE"]) {
        Frame::Integer(t) => t,
        other => panic!("LASTSAVE: {other:?}"),
    };
    assert!(after >= before, "LASTSAVE went back: {before} -> {after}");
    drop(node);
    let redis = redis_in(&dir, &[]);
    let mut check = RawClient::connect(redis.port);
    assert_same(0, &model, &record(&mut check, 0));
}

/// The same commands on the node and on redis-server, replies compared byte for byte.
fn same_replies(node: &mut RawClient, redis: &mut RawClient, commands: &[Vec<Vec<u8>>]) {
    let ours = pipeline(node, commands);
    let theirs = pipeline(redis, commands);
    for ((command, a), b) in commands.iter().zip(&ours).zip(&theirs) {
        assert_eq!(
            a,
            b,
            "{}: node and redis-server differ",
            show(&RawClient::encode(
                &command.iter().map(Vec::as_slice).collect::<Vec<_>>()
            ))
        );
    }
}

#[test]
fn bgsave_replies_as_redis() {
    let (node_dir, redis_dir) = (scratch_dir("replies-node"), scratch_dir("replies-redis"));
    let node = node_in(&node_dir, &[]);
    let redis = redis_in(&redis_dir, &[]);
    let (mut a, mut b) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    same_replies(
        &mut a,
        &mut b,
        &[
            cmd(&["SET", "k", "v"]),
            cmd(&["BGSAVE", "NOW"]),
            cmd(&["BGSAVE", "SCHEDULE", "x"]),
            // In one batch: the second comes while the first still runs, on both.
            cmd(&["BGSAVE"]),
            cmd(&["BGSAVE"]),
            cmd(&["SAVE"]),
        ],
    );
    wait_bgsave_done(&mut a);
    wait_bgsave_done(&mut b);
    same_replies(
        &mut a,
        &mut b,
        &[cmd(&["MULTI"]), cmd(&["BGSAVE"]), cmd(&["EXEC"])],
    );
    // The scheduled one runs soon after.
    let deadline = Instant::now() + DEADLINE;
    while info_field(&mut a, "rdb_saves") != "2" {
        assert!(Instant::now() < deadline, "the scheduled BGSAVE never ran");
        std::thread::yield_now();
    }
}

#[test]
fn a_save_point_fires_after_config_set_save() {
    let dir = scratch_dir("points");
    let node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    assert_eq!(
        client.call(&["CONFIG", "GET", "save"]),
        Frame::Array(vec![Frame::Bulk("save".into()), Frame::Bulk("".into())])
    );
    client.call(&["SET", "k", "v"]);
    assert_eq!(
        client.call(&["CONFIG", "SET", "save", "1 1"]),
        Frame::Simple("OK".into())
    );
    let deadline = Instant::now() + DEADLINE;
    while info_field(&mut client, "rdb_saves") == "0" {
        assert!(Instant::now() < deadline, "the save point never fired");
        std::thread::yield_now();
    }
    wait_bgsave_done(&mut client);
    assert!(dir.join("dump.rdb").exists());
    assert_eq!(info_field(&mut client, "rdb_changes_since_last_save"), "0");
}

/// Makes `dir/dump.rdb` a directory: the rename at the end of a save then fails, even for
/// root (the tests may run as root, for whom permissions do not stop a write).
fn block_rdb_file(dir: &Path) {
    std::fs::create_dir_all(dir.join("dump.rdb")).unwrap();
}

#[test]
fn a_failed_bgsave_refuses_writes_with_misconf_as_redis() {
    let (node_dir, redis_dir) = (scratch_dir("misconf-node"), scratch_dir("misconf-redis"));
    let node = node_in(&node_dir, &["--save", "3600 1"]);
    let redis = redis_in(&redis_dir, &["--save", "3600 1"]);
    block_rdb_file(&node_dir);
    block_rdb_file(&redis_dir);
    let (mut a, mut b) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    same_replies(&mut a, &mut b, &[cmd(&["SET", "k", "v"]), cmd(&["BGSAVE"])]);
    for client in [&mut a, &mut b] {
        wait_bgsave_done(client);
        assert_eq!(info_field(client, "rdb_last_bgsave_status"), "err");
    }
    same_replies(
        &mut a,
        &mut b,
        &[
            cmd(&["SET", "k", "w"]),
            cmd(&["PING"]),
            cmd(&["GET", "k"]),
            cmd(&["MULTI"]),
            cmd(&["INCR", "n"]),
            cmd(&["EXEC"]),
            cmd(&["SAVE"]),
            cmd(&["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"]),
            cmd(&["SET", "k", "w"]),
            cmd(&["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"]),
            cmd(&["CONFIG", "SET", "save", ""]),
            cmd(&["SET", "k", "x"]),
        ],
    );
    // SAVE and BGSAVE count as saves whether they succeed or not.
    assert_eq!(
        info_field(&mut a, "rdb_saves"),
        info_field(&mut b, "rdb_saves")
    );
}

#[test]
fn flushall_stops_a_running_bgsave_and_saves_when_save_points_are_set() {
    let (node_dir, redis_dir) = (scratch_dir("flush-node"), scratch_dir("flush-redis"));
    let node = node_in(&node_dir, &[]);
    let redis = redis_in(&redis_dir, &[]);
    let (mut a, mut b) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    populate(&mut a, 0);
    populate(&mut b, 0);
    // In one batch, so FLUSHALL comes while the BGSAVE runs.
    same_replies(&mut a, &mut b, &[cmd(&["BGSAVE"]), cmd(&["FLUSHALL"])]);
    for (client, dir) in [(&mut a, &node_dir), (&mut b, &redis_dir)] {
        wait_bgsave_done(client);
        assert_eq!(info_field(client, "rdb_last_bgsave_status"), "ok");
        assert!(
            !dir.join("dump.rdb").exists(),
            "the stopped BGSAVE wrote its file"
        );
    }
    same_replies(
        &mut a,
        &mut b,
        &[
            cmd(&["CONFIG", "SET", "save", "3600 1"]),
            cmd(&["SET", "k", "v"]),
            cmd(&["FLUSHALL"]),
        ],
    );
    for field in ["rdb_changes_since_last_save", "rdb_saves"] {
        assert_eq!(
            info_field(&mut a, field),
            info_field(&mut b, field),
            "{field}"
        );
    }
    assert!(node_dir.join("dump.rdb").exists(), "FLUSHALL did not save");
    assert!(redis_dir.join("dump.rdb").exists());
}

#[test]
fn shutdown_argument_errors_as_redis() {
    let (node_dir, redis_dir) = (scratch_dir("sd-node"), scratch_dir("sd-redis"));
    let node = node_in(&node_dir, &[]);
    let redis = redis_in(&redis_dir, &[]);
    let (mut a, mut b) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    same_replies(
        &mut a,
        &mut b,
        &[
            cmd(&["SHUTDOWN", "ABORT"]),
            cmd(&["SHUTDOWN", "ABORT", "NOW"]),
            cmd(&["SHUTDOWN", "SAVE", "NOSAVE"]),
            cmd(&["SHUTDOWN", "LATER"]),
            cmd(&["MULTI"]),
            cmd(&["SHUTDOWN"]),
            cmd(&["DISCARD"]),
        ],
    );
}

#[test]
fn shutdown_refuses_to_exit_when_its_save_fails_unless_force() {
    let (node_dir, redis_dir) = (scratch_dir("sdf-node"), scratch_dir("sdf-redis"));
    let mut node = node_in(&node_dir, &["--save", "3600 1"]);
    let redis = redis_in(&redis_dir, &["--save", "3600 1"]);
    block_rdb_file(&node_dir);
    block_rdb_file(&redis_dir);
    let (mut a, mut b) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    same_replies(
        &mut a,
        &mut b,
        &[
            cmd(&["SHUTDOWN"]),
            cmd(&["SHUTDOWN", "SAVE", "NOW"]),
            cmd(&["PING"]),
        ],
    );
    a.send(&[b"SHUTDOWN", b"FORCE"]);
    assert!(a.try_read_reply().is_none(), "SHUTDOWN FORCE answered");
    assert!(node.wait_exit(DEADLINE), "SHUTDOWN FORCE did not exit");
}

#[test]
fn shutdown_saves_when_save_points_are_set_and_not_with_nosave() {
    let dir = scratch_dir("sd-save");
    let mut node = node_in(&dir, &["--save", "3600 1"]);
    let mut client = RawClient::connect(node.port);
    client.call(&["SET", "kept", "yes"]);
    client.send(&[b"SHUTDOWN"]);
    assert!(client.try_read_reply().is_none(), "SHUTDOWN answered");
    assert!(node.wait_exit(DEADLINE), "SHUTDOWN did not exit");

    let mut node = node_in(&dir, &["--save", "3600 1"]);
    let mut client = RawClient::connect(node.port);
    assert_eq!(client.call(&["GET", "kept"]), Frame::Bulk("yes".into()));
    client.call(&["SET", "lost", "yes"]);
    client.send(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(client.try_read_reply().is_none());
    assert!(node.wait_exit(DEADLINE));

    // No save points: SHUTDOWN saves only when asked to.
    let mut node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    assert_eq!(client.call(&["GET", "lost"]), Frame::Null);
    client.call(&["SET", "asked", "yes"]);
    client.send(&[b"SHUTDOWN", b"SAVE"]);
    assert!(client.try_read_reply().is_none());
    assert!(node.wait_exit(DEADLINE));
    let node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    assert_eq!(client.call(&["GET", "asked"]), Frame::Bulk("yes".into()));
}

#[test]
fn sigterm_saves_first_and_stays_up_when_the_save_fails() {
    let dir = scratch_dir("sigterm");
    let mut node = node_in(&dir, &["--save", "3600 1"]);
    let mut client = RawClient::connect(node.port);
    client.call(&["SET", "kept", "yes"]);
    block_rdb_file(&dir);
    node.signal("TERM");
    // The save fails: the node logs it and keeps serving.
    let deadline = Instant::now() + DEADLINE;
    while !node
        .log()
        .contains("SIGTERM received but errors trying to shut down")
    {
        assert!(Instant::now() < deadline, "no failed shutdown in the log");
        assert!(
            !node.wait_exit(Duration::from_millis(1)),
            "the node exited on SIGTERM though its save failed:\n{}",
            node.log()
        );
    }
    assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
    std::fs::remove_dir(dir.join("dump.rdb")).unwrap();
    node.signal("TERM");
    assert!(node.wait_exit(DEADLINE), "SIGTERM did not stop the node");
    let node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    assert_eq!(client.call(&["GET", "kept"]), Frame::Bulk("yes".into()));
}

/// The field names of INFO persistence, from the first to `rdb_last_load_keys_loaded`
/// (the `aof_*` fields after it belong to the AOF).
fn rdb_info_fields(client: &mut RawClient) -> Vec<String> {
    let info = client.call(&["INFO", "persistence"]);
    let text = String::from_utf8_lossy(info.as_bytes().expect("INFO is a bulk string")).to_string();
    let mut names = Vec::new();
    for line in text.lines().filter(|l| l.contains(':')) {
        let name = line.split(':').next().unwrap_or_default().to_string();
        let last = name == "rdb_last_load_keys_loaded";
        names.push(name);
        if last {
            break;
        }
    }
    names
}

#[test]
fn info_persistence_lists_redis_fields_in_redis_order() {
    let (node_dir, redis_dir) = (scratch_dir("info-node"), scratch_dir("info-redis"));
    let node = node_in(&node_dir, &[]);
    let redis = redis_in(&redis_dir, &[]);
    let (mut a, mut b) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    assert_eq!(rdb_info_fields(&mut a), rdb_info_fields(&mut b));
    // Before any BGSAVE, and while none runs, the figures are Redis's too.
    for field in [
        "rdb_bgsave_in_progress",
        "rdb_last_bgsave_status",
        "rdb_last_bgsave_time_sec",
        "rdb_current_bgsave_time_sec",
        "rdb_last_cow_size",
        "current_cow_size",
        "current_fork_perc",
        "current_save_keys_total",
    ] {
        assert_eq!(
            info_field(&mut a, field),
            info_field(&mut b, field),
            "{field}"
        );
    }
}

#[test]
fn a_slot_of_many_keys_is_written_in_pieces_and_stays_point_in_time() {
    const TAGGED: usize = 40_000;
    let dir = scratch_dir("tagged");
    let node = node_in(&dir, &[]);
    let mut client = RawClient::connect(node.port);
    // Every key in one slot: they share the hash tag.
    let key = |i: usize| format!("{{big}}:{i}");
    for start in (0..TAGGED).step_by(2000) {
        let batch: Vec<_> = (start..start + 2000)
            .map(|i| cmd(&["SET", &key(i), &format!("v{i}")]))
            .collect();
        check_all_ok(&pipeline(&mut client, &batch));
    }
    let model = record(&mut client, 0);
    assert_eq!(
        client.call(&["BGSAVE"]),
        Frame::Simple("Background saving started".into())
    );
    let deadline = Instant::now() + DEADLINE;
    let (mut round, mut seen_inside_slot) = (0, 0);
    loop {
        let processed: usize = info_field(&mut client, "current_save_keys_processed")
            .parse()
            .unwrap();
        if info_field(&mut client, "rdb_bgsave_in_progress") == "0" {
            break;
        }
        seen_inside_slot += usize::from(processed > 0 && processed < TAGGED);
        let batch: Vec<_> = (0..300)
            .map(|j| {
                let i = (round * 7919 + j * 131) % TAGGED;
                match j % 3 {
                    0 => cmd(&["SET", &key(i), "changed"]),
                    1 => cmd(&["DEL", &key(i)]),
                    _ => cmd(&["SET", &format!("{{big}}:new:{round}:{j}"), "new"]),
                }
            })
            .collect();
        pipeline(&mut client, &batch);
        round += 1;
        assert!(Instant::now() < deadline, "BGSAVE did not finish in time");
    }
    assert!(
        seen_inside_slot > 0,
        "the one big slot was never seen half written ({round} rounds)"
    );
    let copy = scratch_dir("tagged-load");
    std::fs::copy(dir.join("dump.rdb"), copy.join("dump.rdb")).unwrap();
    let loaded = node_in(&copy, &[]);
    let mut check = RawClient::connect(loaded.port);
    assert_same(0, &model, &record(&mut check, 0));
}
