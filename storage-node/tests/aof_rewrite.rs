//! BGREWRITEAOF from the point-in-time snapshot: clients are served while the base is
//! written, every acknowledged write is in the log after the rewrite and after a SIGKILL in
//! its middle, BGSAVE and the rewrite exclude each other with redis-server 7.0's replies,
//! and redis-check-aof accepts the result.

mod persistence_fixture;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use persistence_fixture::*;
use slotproxy::resp::{request_bytes, Frame};
use test_harness::{wait_until, RawClient, ServerProcess};

/// Enough keys that the debug build's rewrite lasts long enough to be seen running.
const BULK_KEYS: usize = 200_000;

fn aof_node(dir: &Path, extra: &[&str]) -> ServerProcess {
    let mut args = vec!["--appendonly", "yes", "--appendfsync", "always"];
    args.extend_from_slice(extra);
    node_in(dir, &args)
}

/// `count` string keys `bulk:<n>`, pipelined.
fn load_bulk(c: &mut RawClient, count: usize) {
    for start in (0..count).step_by(1000) {
        let mut bytes = Vec::new();
        let end = (start + 1000).min(count);
        for n in start..end {
            let key = format!("bulk:{n}");
            bytes.extend_from_slice(&request_bytes(&["SET", &key, &format!("value-{n}")]));
        }
        c.send_raw(&bytes);
        for _ in start..end {
            assert_eq!(c.read_reply().0, Frame::Simple("OK".into()));
        }
    }
}

/// The keys [`spawn_writer`] writes.
const WRITER_KEYS: &str = "[schle]:*";

/// A writer of strings, counters, hashes, lists, expiring keys and deletions, until told
/// to stop; every reply must be a success. Returns how many writes were acknowledged.
fn spawn_writer(port: u16, stop: Arc<AtomicBool>, acked: Arc<AtomicU64>) -> JoinHandle<()> {
    let mut c = RawClient::connect(port);
    std::thread::spawn(move || {
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) && i < 1_000_000 {
            let n = (i % 500).to_string();
            let value = format!("v{i}");
            let reply = match i % 6 {
                0 => c.call(&["SET", &format!("s:{n}"), &value]),
                1 => c.call(&["INCR", &format!("c:{n}")]),
                2 => c.call(&["HSET", &format!("h:{n}"), &value, &n]),
                3 => c.call(&["RPUSH", &format!("l:{n}"), &value]),
                4 => c.call(&["SET", &format!("e:{n}"), &value, "PX", "3600000"]),
                _ => c.call(&["DEL", &format!("s:{}", (i / 6) % 500)]),
            };
            assert!(!matches!(reply, Frame::Error(_)), "{reply:?}");
            acked.fetch_add(1, Ordering::Relaxed);
            i += 1;
        }
    })
}

/// The DUMP payload and absolute expiry (PEXPIRETIME) of every key matching `pattern`.
fn dump_all(c: &mut RawClient, pattern: &str) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
    let keys = strings_of(&c.call(&["KEYS", pattern]));
    let mut all = BTreeMap::new();
    for chunk in keys.chunks(1000) {
        let mut bytes = Vec::new();
        for key in chunk {
            bytes.extend_from_slice(&RawClient::encode(&[b"DUMP", key]));
            bytes.extend_from_slice(&RawClient::encode(&[b"PEXPIRETIME", key]));
        }
        c.send_raw(&bytes);
        for key in chunk {
            let dump = bytes_of(&c.read_reply().0);
            let expire = c.read_reply().0.as_integer().unwrap();
            all.insert(key.clone(), (dump, expire));
        }
    }
    all
}

fn assert_same_keys(
    before: &BTreeMap<Vec<u8>, (Vec<u8>, i64)>,
    after: &BTreeMap<Vec<u8>, (Vec<u8>, i64)>,
) {
    assert_eq!(before.len(), after.len(), "key counts differ");
    for (key, want) in before {
        let name = String::from_utf8_lossy(key);
        assert_eq!(
            after.get(key),
            Some(want),
            "key {name} differs after the restart"
        );
    }
}

fn rewriting(c: &mut RawClient) -> bool {
    info_field(c, "aof_rewrite_in_progress") == "1"
}

/// A rewrite of many keys under a concurrent writer: a client's PING is answered while
/// INFO says the rewrite is in progress (before and after the PING), and after a restart
/// from the AOF every key has the DUMP and expiry it had (every acknowledged write is in
/// the log), with redis-check-aof accepting the directory. Both base forms.
#[test]
fn a_rewrite_under_a_concurrent_writer_serves_clients_and_keeps_every_write() {
    for preamble in ["yes", "no"] {
        let dir = scratch_dir(&format!("rewrite-writer-{preamble}"));
        let extra = ["--aof-use-rdb-preamble", preamble];
        let mut node = aof_node(&dir, &extra);
        let mut c = RawClient::connect(node.port);
        load_bulk(&mut c, BULK_KEYS);
        let (stop, acked) = (Arc::new(AtomicBool::new(false)), Arc::default());
        let writer = spawn_writer(node.port, stop.clone(), Arc::clone(&acked));
        wait_until(Duration::from_secs(60), "the first writes", || {
            acked.load(Ordering::Relaxed) > 100
        });
        let acked_at_start = acked.load(Ordering::Relaxed);
        assert_eq!(
            c.call(&["BGREWRITEAOF"]),
            Frame::Simple("Background append only file rewriting started".into())
        );
        // A PING answered between two INFOs that both see the base half written.
        let mut pings_during_rewrite = 0;
        while rewriting(&mut c) {
            assert_eq!(c.call(&["PING"]), Frame::Simple("PONG".into()));
            let info = String::from_utf8(bytes_of(&c.call(&["INFO", "persistence"]))).unwrap();
            let field = |name: &str| -> u64 {
                let prefix = format!("{name}:");
                let line = info.lines().find(|l| l.starts_with(&prefix)).unwrap();
                line[prefix.len()..].trim().parse().unwrap()
            };
            let (done, total) = (
                field("current_save_keys_processed"),
                field("current_save_keys_total"),
            );
            if field("aof_rewrite_in_progress") == 1 && done < total {
                pings_during_rewrite += 1;
            }
        }
        assert!(
            pings_during_rewrite > 0,
            "no PING was answered while the rewrite ran"
        );
        assert!(
            acked.load(Ordering::Relaxed) > acked_at_start,
            "no write was served while the rewrite ran"
        );
        assert_eq!(info_field(&mut c, "aof_last_bgrewrite_status"), "ok");
        assert_eq!(info_field(&mut c, "aof_rewrites"), "1");
        // Writes after the rewrite go on into the new incremental file.
        let acked_at_end = acked.load(Ordering::Relaxed);
        wait_until(Duration::from_secs(60), "writes after the rewrite", || {
            acked.load(Ordering::Relaxed) > acked_at_end + 100
        });
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let files = manifest_files(&dir);
        let base = if preamble == "yes" { "rdb" } else { "aof" };
        assert_eq!(
            files,
            vec![
                (format!("appendonly.aof.2.base.{base}"), "b".to_string()),
                ("appendonly.aof.2.incr.aof".to_string(), "i".to_string()),
            ],
            "the manifest after the rewrite"
        );
        // The old base and incremental file are gone.
        let mut on_disk: Vec<String> = std::fs::read_dir(dir.join(AOF_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        assert_eq!(on_disk.len(), 3, "files left: {on_disk:?}");
        check_aof(&dir);
        let before = dump_all(&mut c, "*");
        assert!(before.len() > BULK_KEYS, "the writer's keys are missing");
        node.kill();
        let node = aof_node(&dir, &extra);
        let mut c = RawClient::connect(node.port);
        assert_same_keys(&before, &dump_all(&mut c, "*"));
    }
}

/// SIGKILL while the rewrite writes its base: the manifest installed at the rewrite's start
/// lists the old files and the new incremental file, so a restart has every write,
/// acknowledged before or during the rewrite.
#[test]
fn a_sigkill_in_the_middle_of_a_rewrite_loses_nothing() {
    let dir = scratch_dir("rewrite-sigkill");
    let mut node = aof_node(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    load_bulk(&mut c, BULK_KEYS);
    // A rewrite that ends before the kill proves nothing: then another is tried.
    for attempt in 1..=3 {
        let (stop, acked) = (Arc::new(AtomicBool::new(false)), Arc::default());
        let writer = spawn_writer(node.port, stop.clone(), Arc::clone(&acked));
        assert_eq!(
            c.call(&["BGREWRITEAOF"]),
            Frame::Simple("Background append only file rewriting started".into())
        );
        wait_until(Duration::from_secs(60), "writes during the rewrite", || {
            acked.load(Ordering::Relaxed) > 20
        });
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        // Only the writer's keys: dumping all would outlast the rewrite.
        let before = dump_all(&mut c, WRITER_KEYS);
        if !rewriting(&mut c) {
            assert!(attempt < 3, "every rewrite ended before the kill");
            wait_until(Duration::from_secs(60), "the rewrite's end", || {
                info_field(&mut c, "aof_rewrites") == attempt.to_string()
            });
            continue;
        }
        node.kill();
        let files = manifest_files(&dir);
        let named = |name: String, kind: &str| (name, kind.to_string());
        assert_eq!(
            files,
            vec![
                named(format!("appendonly.aof.{attempt}.base.rdb"), "b"),
                named(format!("appendonly.aof.{attempt}.incr.aof"), "i"),
                named(format!("appendonly.aof.{}.incr.aof", attempt + 1), "i"),
            ],
            "the manifest during the rewrite"
        );
        check_aof(&dir);
        let node = aof_node(&dir, &[]);
        let mut c = RawClient::connect(node.port);
        assert_same_keys(&before, &dump_all(&mut c, WRITER_KEYS));
        assert_bulk(&mut c, BULK_KEYS);
        return;
    }
}

/// FLUSHALL while a rewrite runs lets the rewrite finish, as redis-server 7.0 does (its
/// `flushAllDataAndResetRDB` kills only an RDB child): the node and redis-server (made slow
/// with `rdb-key-save-delay`) count one successful rewrite, and after a restart both hold
/// only what was written after the FLUSHALL.
#[test]
fn flushall_during_a_rewrite_lets_it_finish_as_in_redis() {
    let node_dir = scratch_dir("flush-rewrite-node");
    let node = aof_node(&node_dir, &[]);
    let mut c = RawClient::connect(node.port);
    load_bulk(&mut c, BULK_KEYS);
    let node_seen = flush_during_rewrite(&mut c);
    drop(c);
    drop(node);
    check_aof(&node_dir);
    let node = aof_node(&node_dir, &[]);
    let node_after = keys_and_values(&mut RawClient::connect(node.port));

    let redis_dir = scratch_dir("flush-rewrite-redis");
    let redis_args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--rdb-key-save-delay",
        "1000",
    ];
    let redis = redis_in(&redis_dir, &redis_args);
    let mut r = RawClient::connect(redis.port);
    load_bulk(&mut r, 2_000);
    let redis_seen = flush_during_rewrite(&mut r);
    drop(r);
    drop(redis);
    let redis = redis_in(&redis_dir, &redis_args);
    let redis_after = keys_and_values(&mut RawClient::connect(redis.port));

    assert_eq!(
        redis_seen,
        vec!["1".to_string(), "ok".to_string()],
        "redis-server"
    );
    assert_eq!(node_seen, redis_seen);
    assert_eq!(redis_after, vec![(b"after".to_vec(), b"1".to_vec())]);
    assert_eq!(node_after, redis_after);
}

/// BGREWRITEAOF and FLUSHALL in one batch, then a write; waits for the rewrite's end and
/// returns `aof_rewrites` and `aof_last_bgrewrite_status`.
fn flush_during_rewrite(c: &mut RawClient) -> Vec<String> {
    let mut batch = request_bytes(&["BGREWRITEAOF"]).to_vec();
    batch.extend_from_slice(&request_bytes(&["FLUSHALL"]));
    c.send_raw(&batch);
    assert_eq!(
        c.read_reply().0,
        Frame::Simple("Background append only file rewriting started".into())
    );
    assert_eq!(c.read_reply().0, Frame::Simple("OK".into()));
    ok(c, &["SET", "after", "1"]);
    wait_until(Duration::from_secs(120), "the rewrite's end", || {
        !rewriting(c)
    });
    vec![
        info_field(c, "aof_rewrites"),
        info_field(c, "aof_last_bgrewrite_status"),
    ]
}

/// Every key and its string value, sorted.
fn keys_and_values(c: &mut RawClient) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut keys = strings_of(&c.call(&["KEYS", "*"]));
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let value = bytes_of(&c.call(&["GET", &String::from_utf8_lossy(&key)]));
            (key, value)
        })
        .collect()
}

/// The keys of [`load_bulk`] have their values.
fn assert_bulk(c: &mut RawClient, count: usize) {
    for start in (0..count).step_by(1000) {
        let end = (start + 1000).min(count);
        let keys: Vec<String> = (start..end).map(|n| format!("bulk:{n}")).collect();
        let mut args = vec!["MGET"];
        args.extend(keys.iter().map(String::as_str));
        let values = strings_of(&c.call(&args));
        for (n, value) in (start..end).zip(values) {
            assert_eq!(value, format!("value-{n}").into_bytes(), "bulk:{n}");
        }
    }
}

/// BGSAVE and BGREWRITEAOF exclude each other as in redis-server 7.0 (one child at a
/// time): the same replies from the node and from redis-server, each made slow enough to
/// be seen running (many keys on the node, `rdb-key-save-delay` on redis-server), and the
/// scheduled one runs after.
#[test]
fn bgsave_and_the_rewrite_exclude_each_other_as_in_redis() {
    let node_dir = scratch_dir("exclusion-node");
    let node = aof_node(&node_dir, &[]);
    let mut c = RawClient::connect(node.port);
    load_bulk(&mut c, BULK_KEYS);
    let node_replies = exclusion_replies(&mut c);

    let redis_dir = scratch_dir("exclusion-redis");
    let redis = redis_in(
        &redis_dir,
        &["--appendonly", "yes", "--rdb-key-save-delay", "1000"],
    );
    let mut r = RawClient::connect(redis.port);
    load_bulk(&mut r, 2_000);
    let redis_replies = exclusion_replies(&mut r);

    assert_eq!(node_replies, redis_replies);
    let simple = |s: &'static str| Frame::Simple(s.into());
    let error = |s: &'static str| Frame::Error(s.into());
    assert_eq!(
        redis_replies,
        vec![
            simple("Background append only file rewriting started"),
            error(
                "ERR Another child process is active (AOF?): can't BGSAVE right now. Use \
                 BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."
            ),
            simple("Background saving scheduled"),
            error("ERR Background append only file rewriting already in progress"),
            simple("Background append only file rewriting scheduled"),
            error("ERR Background save already in progress"),
        ]
    );
    check_aof(&node_dir);
}

/// A rewrite, BGSAVE and BGSAVE SCHEDULE and BGREWRITEAOF during it; then, once the
/// scheduled BGSAVE runs, BGREWRITEAOF and BGSAVE during it; waits for the scheduled
/// rewrite to finish.
fn exclusion_replies(c: &mut RawClient) -> Vec<Frame> {
    let mut replies = Vec::new();
    for command in [
        &["BGREWRITEAOF"][..],
        &["BGSAVE"],
        &["BGSAVE", "SCHEDULE"],
        &["BGREWRITEAOF"],
    ] {
        replies.push(c.call(command));
    }
    assert!(rewriting(c), "the rewrite ended too soon to be tested");
    wait_until(Duration::from_secs(120), "the scheduled BGSAVE", || {
        info_field(c, "rdb_bgsave_in_progress") == "1"
    });
    replies.push(c.call(&["BGREWRITEAOF"]));
    replies.push(c.call(&["BGSAVE"]));
    assert_eq!(info_field(c, "aof_rewrite_scheduled"), "1");
    wait_until(Duration::from_secs(120), "the scheduled rewrite", || {
        info_field(c, "aof_rewrites") == "2" && !rewriting(c)
    });
    assert_eq!(info_field(c, "aof_last_bgrewrite_status"), "ok");
    replies
}

/// SHUTDOWN and SIGTERM write out what the log still buffers before the node exits: the
/// DEL of a key the active expiry removed (logged with no client reply to flush it) is in
/// the incremental file afterwards.
#[test]
fn shutdown_and_sigterm_write_out_the_log() {
    for how in ["SHUTDOWN", "SIGTERM"] {
        let dir = scratch_dir(&format!("flush-{how}"));
        let mut node = aof_node(&dir, &["--appendfsync", "no", "--hz", "100"]);
        let mut c = RawClient::connect(node.port);
        ok(&mut c, &["SET", "short-lived", "v", "PX", "1"]);
        wait_until(Duration::from_secs(30), "the active expiry", || {
            let stats = String::from_utf8(bytes_of(&c.call(&["INFO", "stats"]))).unwrap();
            stats.lines().any(|l| l.trim() == "expired_keys:1")
        });
        if how == "SHUTDOWN" {
            c.send(&[b"SHUTDOWN"]);
        } else {
            node.signal("TERM");
        }
        assert!(node.wait_exit(Duration::from_secs(60)), "the node lives on");
        let incr = std::fs::read(dir.join(AOF_DIR).join("appendonly.aof.1.incr.aof")).unwrap();
        let del = request_bytes(&["DEL", "short-lived"]);
        assert!(
            incr.windows(del.len()).any(|w| w == &del[..]),
            "{how}: the expiry's DEL is not in the log: {}",
            String::from_utf8_lossy(&incr)
        );
    }
}

/// The `aof-base` AUX field's encoded value in an RDB file.
fn aof_base_aux(file: &Path) -> Vec<u8> {
    let bytes = std::fs::read(file).unwrap();
    let key = b"\xfa\x08aof-base";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .unwrap_or_else(|| panic!("no aof-base field in {}", file.display()));
    bytes[at + key.len()..at + key.len() + 2].to_vec()
}

/// The RDB preamble of a rewritten base says `aof-base` 1 as redis-server's does, and the
/// BGSAVE file 0.
#[test]
fn the_preamble_is_marked_as_an_aof_base_as_redis_marks_it() {
    let node_dir = scratch_dir("aof-base-node");
    let node = aof_node(&node_dir, &[]);
    let mut c = RawClient::connect(node.port);
    ok(&mut c, &["SET", "k", "v"]);
    let redis_dir = scratch_dir("aof-base-redis");
    let redis = redis_in(&redis_dir, &["--appendonly", "yes"]);
    let mut r = RawClient::connect(redis.port);
    ok(&mut r, &["SET", "k", "v"]);
    for (client, dir) in [(&mut c, &node_dir), (&mut r, &redis_dir)] {
        client.call(&["BGREWRITEAOF"]);
        wait_until(Duration::from_secs(60), "the rewrite", || {
            info_field(client, "aof_rewrites") == "1" && !rewriting(client)
        });
        client.call(&["BGSAVE"]);
        wait_until(Duration::from_secs(60), "the BGSAVE", || {
            info_field(client, "rdb_bgsave_in_progress") == "0" && dir.join("dump.rdb").exists()
        });
    }
    let base = |dir: &Path| dir.join(AOF_DIR).join("appendonly.aof.2.base.rdb");
    assert_eq!(aof_base_aux(&base(&redis_dir)), b"\xc0\x01");
    assert_eq!(aof_base_aux(&base(&node_dir)), b"\xc0\x01");
    assert_eq!(aof_base_aux(&redis_dir.join("dump.rdb")), b"\xc0\x00");
    assert_eq!(aof_base_aux(&node_dir.join("dump.rdb")), b"\xc0\x00");
}
