//! The append-only file: directories exchanged with a real redis-server 7.0 both ways
//! (commands, RDB preamble and RESTORE bases), `redis-check-aof` on what the node writes,
//! replay of the rewritten commands, scripts, transactions and expiry to the same data,
//! torn last records, and acknowledged writes surviving SIGKILL with `appendfsync always`.

mod persistence_fixture;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use persistence_fixture::*;
use slotproxy::resp::{request_bytes, Frame};
use test_harness::process::storage_node_binary;
use test_harness::{free_port, wait_until, RawClient, ServerProcess};

fn aof_node(dir: &Path, extra: &[&str]) -> ServerProcess {
    let mut args = vec!["--appendonly", "yes"];
    args.extend_from_slice(extra);
    node_in(dir, &args)
}

fn aof_redis(dir: &Path, extra: &[&str]) -> ServerProcess {
    let mut args = vec!["--appendonly", "yes"];
    args.extend_from_slice(extra);
    redis_in(dir, &args)
}

/// BGREWRITEAOF, then waits until the rewrite is done (redis-server's runs in a child).
fn rewrite(client: &mut RawClient) {
    let before: u64 = info_field(client, "aof_rewrites").parse().unwrap();
    let reply = client.call(&["BGREWRITEAOF"]);
    assert_eq!(
        reply,
        Frame::Simple("Background append only file rewriting started".into())
    );
    wait_until(Duration::from_secs(60), "the AOF rewrite", || {
        info_field(client, "aof_rewrite_in_progress") == "0"
            && info_field(client, "aof_rewrites").parse::<u64>().unwrap() > before
    });
    assert_eq!(info_field(client, "aof_last_bgrewrite_status"), "ok");
}

/// Copies the AOF directory of `from` into `to`.
fn copy_aof_dir(from: &Path, to: &Path) {
    let (from, to) = (from.join(AOF_DIR), to.join(AOF_DIR));
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The node's directory, written by commands only (no rewrite), then after BGREWRITEAOF
/// with and without the RDB preamble, each loads in redis-server to the same data.
#[test]
fn directories_the_node_writes_load_in_redis() {
    for preamble in ["yes", "no"] {
        let node_dir = scratch_dir(&format!("to-redis-n-{preamble}"));
        let node = aof_node(&node_dir, &["--aof-use-rdb-preamble", preamble]);
        let mut nc = RawClient::connect(node.port);
        populate(&mut nc);
        assert_eq!(info_field(&mut nc, "aof_enabled"), "1");
        let expected = state_of(&mut nc);
        for stage in ["commands", "rewritten"] {
            if stage == "rewritten" {
                rewrite(&mut nc);
                let base = format!(
                    "appendonly.aof.2.base.{}",
                    if preamble == "yes" { "rdb" } else { "aof" }
                );
                assert!(
                    manifest_files(&node_dir).contains(&(base.clone(), "b".into())),
                    "{}",
                    manifest_text(&node_dir)
                );
                // A write after the rewrite goes to the new incremental file.
                ok(&mut nc, &["SET", "after-rewrite", "1"]);
                ok(&mut nc, &["DEL", "after-rewrite"]);
            }
            check_aof(&node_dir);
            let redis_dir = scratch_dir(&format!("to-redis-r-{preamble}-{stage}"));
            copy_aof_dir(&node_dir, &redis_dir);
            let redis = aof_redis(&redis_dir, &[]);
            let mut rc = RawClient::connect(redis.port);
            assert_same_state(&expected, &state_of(&mut rc));
        }
    }
}

/// redis-server's directory: commands only, after BGREWRITEAOF with the RDB preamble,
/// and with an AOF base, each loads in the node to the same data.
#[test]
fn directories_redis_writes_load_in_the_node() {
    for preamble in ["yes", "no"] {
        let redis_dir = scratch_dir(&format!("from-redis-r-{preamble}"));
        // `always`: redis-server postpones the write of its buffer while an everysec
        // fsync runs, and the files are copied right after the last command.
        let redis = aof_redis(
            &redis_dir,
            &[
                "--aof-use-rdb-preamble",
                preamble,
                "--appendfsync",
                "always",
            ],
        );
        let mut rc = RawClient::connect(redis.port);
        populate(&mut rc);
        let expected = state_of(&mut rc);
        for stage in ["commands", "rewritten"] {
            if stage == "rewritten" {
                rewrite(&mut rc);
                ok(&mut rc, &["SET", "after-rewrite", "1"]);
                ok(&mut rc, &["DEL", "after-rewrite"]);
            }
            let node_dir = scratch_dir(&format!("from-redis-n-{preamble}-{stage}"));
            copy_aof_dir(&redis_dir, &node_dir);
            let node = aof_node(&node_dir, &[]);
            let mut nc = RawClient::connect(node.port);
            assert_same_state(&expected, &state_of(&mut nc));
            let log = node.log();
            assert!(
                log.contains(&format!(
                    "DB loaded from append only file: {} keys",
                    expected.0.len()
                )),
                "{log}"
            );
        }
    }
}

/// Every kind of write the node propagates differently from how it was sent, plus
/// scripts, transactions, blocking pops served by another client, and keys that expire
/// lazily and actively: a restart from the AOF gives the same data.
#[test]
fn rewritten_commands_scripts_transactions_and_expiry_replay_to_the_same_data() {
    let dir = scratch_dir("replay");
    let mut node = aof_node(&dir, &["--appendfsync", "always"]);
    let mut c = RawClient::connect(node.port);
    populate(&mut c);
    for db in ["0", "1"] {
        ok(&mut c, &["SELECT", db]);
        run_write_mix(&mut c, node.port, db);
    }
    ok(&mut c, &["SELECT", "0"]);
    // Longer than the loader's read chunk (1 MB): a command read in several pieces.
    ok(&mut c, &["SET", "huge", &"h".repeat(2_500_000)]);
    // Keys that expire by themselves: one read after it expired (lazy), one left to the
    // active cycle.
    ok(&mut c, &["SET", "lazy", "v", "PX", "50"]);
    ok(&mut c, &["SET", "active", "v", "PX", "50"]);
    wait_until(Duration::from_secs(30), "the active expiry", || {
        c.call(&["EXISTS", "lazy"]) == Frame::Integer(0)
            && info_field_of(&mut c, "stats", "expired_keys")
                .parse::<u64>()
                .unwrap()
                >= 2
    });
    let before = state_of(&mut c);
    let aof = std::fs::read(incr_file(&dir)).unwrap();
    let text = String::from_utf8_lossy(&aof);
    for written in [
        "PXAT",
        "PEXPIREAT",
        "SREM",
        "KEEPTTL",
        "MULTI",
        "LPOP",
        "ZPOPMIN",
        "LMOVE",
    ] {
        assert!(text.contains(written), "no {written} in the AOF");
    }
    for never in ["spop", "incrbyfloat", "blpop", "eval", "setex"] {
        assert!(!text.contains(never), "{never} written as sent");
    }
    node.kill();
    let node = aof_node(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    // The replay is not counted as clients' commands, as in Redis.
    let commandstats = String::from_utf8(bytes_of(&c.call(&["INFO", "commandstats"]))).unwrap();
    assert!(!commandstats.contains("cmdstat_set:"), "{commandstats}");
    assert_same_state(&before, &state_of(&mut c));
}

/// Writes through every family of commands, several whose effect their arguments do not
/// reproduce (random, relative time, float formatting, blocking).
fn run_write_mix(c: &mut RawClient, port: u16, db: &str) {
    let p = format!("mix{db}:");
    let k = |name: &str| format!("{p}{name}");
    ok(c, &["SET", &k("s"), "1", "EX", "100000"]);
    ok(c, &["SETEX", &k("sx"), "100000", "v"]);
    ok(c, &["PSETEX", &k("psx"), "100000000", "v"]);
    ok(c, &["SET", &k("g"), "v"]);
    ok(c, &["GETEX", &k("g"), "PX", "100000000"]);
    ok(c, &["SET", &k("gp"), "v", "EX", "1000"]);
    ok(c, &["GETEX", &k("gp"), "PERSIST"]);
    ok(c, &["SET", &k("gone"), "v"]);
    ok(c, &["EXPIRE", &k("gone"), "-1"]);
    ok(c, &["SET", &k("e"), "v"]);
    ok(c, &["EXPIRE", &k("e"), "100000", "NX"]);
    ok(c, &["INCRBYFLOAT", &k("f"), "10.5"]);
    ok(c, &["INCRBYFLOAT", &k("f"), "0.1"]);
    ok(c, &["HINCRBYFLOAT", &k("hf"), "x", "3.3"]);
    ok(c, &["APPEND", &k("a"), "xyz"]);
    ok(c, &["SETRANGE", &k("a"), "5", "!!"]);
    ok(c, &["INCR", &k("n")]);
    ok(c, &["DECRBY", &k("n"), "7"]);
    ok(c, &["SETBIT", &k("bits"), "77", "1"]);
    ok(
        c,
        &[
            "BITFIELD",
            &k("bf"),
            "SET",
            "u8",
            "0",
            "200",
            "INCRBY",
            "u8",
            "0",
            "100",
        ],
    );
    ok(c, &["MSET", &k("m1"), "1", &k("m2"), "2"]);
    ok(c, &["RENAME", &k("m1"), &k("m1b")]);
    ok(c, &["COPY", &k("m2"), &k("m2c")]);
    ok(c, &["SADD", &k("set"), "a", "b", "c", "d", "e", "f", "g"]);
    ok(c, &["SPOP", &k("set")]);
    ok(c, &["SPOP", &k("set"), "2"]);
    ok(c, &["SADD", &k("set2"), "a", "b"]);
    ok(c, &["SPOP", &k("set2"), "5"]);
    ok(c, &["SMOVE", &k("set"), &k("set3"), "a"]);
    ok(c, &["RPUSH", &k("l"), "1", "2", "3", "4", "5", "6"]);
    ok(c, &["LSET", &k("l"), "0", "one"]);
    ok(c, &["LINSERT", &k("l"), "BEFORE", "3", "2.5"]);
    ok(c, &["LTRIM", &k("l"), "0", "5"]);
    ok(c, &["BLPOP", &k("l"), "0"]);
    ok(c, &["LMPOP", "1", &k("l"), "RIGHT", "COUNT", "2"]);
    ok(c, &["BLMOVE", &k("l"), &k("l2"), "LEFT", "RIGHT", "0"]);
    ok(c, &["BRPOPLPUSH", &k("l"), &k("l2"), "0"]);
    ok(
        c,
        &["ZADD", &k("z"), "1", "a", "2", "b", "3", "c", "4", "d"],
    );
    ok(c, &["ZINCRBY", &k("z"), "0.5", "a"]);
    ok(c, &["BZPOPMIN", &k("z"), "0"]);
    ok(c, &["ZMPOP", "1", &k("z"), "MAX", "COUNT", "2"]);
    ok(c, &["ZUNIONSTORE", &k("zu"), "1", &k("z")]);
    ok(c, &["HSET", &k("h"), "a", "1", "b", "2"]);
    ok(c, &["HDEL", &k("h"), "a"]);
    ok(c, &["HSETNX", &k("h"), "c", "3"]);
    let dump = c.call(&["DUMP", &k("h")]);
    let payload = dump.as_bytes().unwrap().to_vec();
    let restored = k("restored");
    c.send(&[b"RESTORE", restored.as_bytes(), b"100000000", &payload]);
    assert_eq!(c.read_reply().0, Frame::Simple("OK".into()));
    ok(c, &["SORT", &k("set3"), "ALPHA", "STORE", &k("sorted")]);
    ok(c, &["GETDEL", &k("m2c")]);
    // SWAPDB there and back, with a write in between: the key ends up in database 5.
    ok(c, &["SWAPDB", db, "5"]);
    ok(c, &["SET", "in-swapped", db]);
    ok(c, &["SWAPDB", db, "5"]);
    ok(c, &["UNLINK", &k("a")]);
    // Scripts: effects only, random choices included.
    ok(
        c,
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], 'x'); redis.call('SPOP', KEYS[2]); \
             redis.call('INCRBYFLOAT', KEYS[3], '1.25'); return 1",
            "3",
            &k("ev"),
            &k("set"),
            &k("evf"),
        ],
    );
    ok(c, &["FCALL", "rdbecho", "0", "x"]);
    // Transactions, with a relative expiry inside.
    ok(c, &["MULTI"]);
    c.call(&["SET", &k("t1"), "1"]);
    c.call(&["EXPIRE", &k("t1"), "100000"]);
    c.call(&["INCR", &k("t2")]);
    let exec = c.call(&["EXEC"]);
    assert!(matches!(exec, Frame::Array(_)), "{exec:?}");
    // A blocked pop served by another client's push.
    let key = k("waited");
    let mut waiter = RawClient::connect(port);
    waiter.call(&["SELECT", db]);
    waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
    let mut admin = RawClient::connect(port);
    test_harness::wait_blocked(&mut admin, 1);
    ok(c, &["RPUSH", &key, "x", "y"]);
    assert!(matches!(waiter.read_reply().0, Frame::Array(_)));
}

fn info_field_of(client: &mut RawClient, section: &str, name: &str) -> String {
    let info = String::from_utf8(bytes_of(&client.call(&["INFO", section]))).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {info}"))
        .to_string()
}

/// Starts a node that must refuse to start; returns what it printed.
fn refused_start(dir: &Path, extra: &[&str]) -> String {
    let mut child = Command::new(storage_node_binary())
        .args(["--port", &free_port().to_string(), "--dir"])
        .arg(dir)
        .args(["--appendonly", "yes"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the node started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A torn last command (and a transaction left open) is refused with
/// `aof-load-truncated no`, naming file and offset, and cut off with `yes`.
#[test]
fn a_torn_last_record_is_truncated_or_refused() {
    for torn in [
        &b"*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$5\r\nval"[..],
        b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$1\r\n1\r\n",
    ] {
        let dir = scratch_dir("torn");
        let mut node = aof_node(&dir, &[]);
        let mut c = RawClient::connect(node.port);
        ok(&mut c, &["SET", "kept", "1"]);
        ok(&mut c, &["RPUSH", "list", "a", "b"]);
        let incr = incr_file(&dir);
        wait_until(Duration::from_secs(10), "the AOF write", || {
            std::fs::metadata(&incr).unwrap().len() > 0
        });
        node.kill();
        let whole = std::fs::metadata(&incr).unwrap().len();
        let mut data = std::fs::read(&incr).unwrap();
        data.extend_from_slice(torn);
        std::fs::write(&incr, &data).unwrap();

        let refusal = refused_start(&dir, &["--aof-load-truncated", "no"]);
        assert!(
            refusal.contains(&incr.display().to_string())
                && refusal.contains(&format!("offset {whole}")),
            "{refusal}"
        );
        assert_eq!(std::fs::metadata(&incr).unwrap().len(), data.len() as u64);

        let node = aof_node(&dir, &["--aof-load-truncated", "yes"]);
        let mut c = RawClient::connect(node.port);
        assert_eq!(c.call(&["GET", "kept"]), Frame::Bulk("1".into()));
        assert_eq!(c.call(&["LLEN", "list"]), Frame::Integer(2));
        assert_eq!(c.call(&["EXISTS", "torn"]), Frame::Integer(0));
        assert_eq!(std::fs::metadata(&incr).unwrap().len(), whole);
        assert!(node.log().contains("short read"), "{}", node.log());
    }
}

/// What a crash run found.
struct CrashOutcome {
    acknowledged: usize,
    lost: usize,
}

/// Writers pipeline SETs until the node is SIGKILLed in the middle of their load; every
/// key whose `+OK` arrived must be there after the restart.
fn crash_run(fsync: &str) -> CrashOutcome {
    const WRITERS: usize = 4;
    const PIPELINE: usize = 8;
    const MAX_PER_WRITER: usize = 50_000;
    let dir = scratch_dir(&format!("crash-{fsync}"));
    let mut node = aof_node(&dir, &["--appendfsync", fsync]);
    let port = node.port;
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    // Connected before any writes, so the kill never finds a writer not yet connected.
    let clients: Vec<RawClient> = (0..WRITERS).map(|_| RawClient::connect(port)).collect();
    let writers: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(w, mut c)| {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while i < MAX_PER_WRITER && !stop.load(Ordering::Relaxed) {
                    let batch: Vec<String> =
                        (i..i + PIPELINE).map(|n| format!("w{w}:{n}")).collect();
                    let mut bytes = Vec::new();
                    for key in &batch {
                        bytes.extend_from_slice(&request_bytes(&["SET", key, key]));
                    }
                    if c.try_send_raw(&bytes).is_err() {
                        return;
                    }
                    for key in batch {
                        match c.try_read_reply() {
                            Some((Frame::Simple(s), _)) if s == "OK" => {
                                acked.lock().unwrap().push(key)
                            }
                            _ => return,
                        }
                    }
                    i += PIPELINE;
                }
            })
        })
        .collect();
    wait_until(
        Duration::from_secs(120),
        "2,000 acknowledged writes",
        || acked.lock().unwrap().len() >= 2_000,
    );
    node.kill();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let node = aof_node(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    let mut lost = 0;
    for chunk in acked.chunks(500) {
        let mut args = vec!["MGET"];
        args.extend(chunk.iter().map(String::as_str));
        let Frame::Array(values) = c.call(&args) else {
            panic!("MGET failed");
        };
        lost += values
            .iter()
            .zip(chunk)
            .filter(|(v, key)| v.as_bytes() != Some(key.as_bytes()))
            .count();
    }
    CrashOutcome {
        acknowledged: acked.len(),
        lost,
    }
}

#[test]
fn acknowledged_writes_survive_sigkill_with_appendfsync_always() {
    let outcome = crash_run("always");
    println!(
        "appendfsync always: {} acknowledged writes, {} lost",
        outcome.acknowledged, outcome.lost
    );
    assert_eq!(outcome.lost, 0);
}

#[test]
fn everysec_reports_its_loss_window_after_sigkill() {
    let outcome = crash_run("everysec");
    // A process kill leaves what was written in the page cache: the window is about
    // what a power loss would cost; only reported, never asserted on timing.
    println!(
        "appendfsync everysec: {} acknowledged writes, {} lost after SIGKILL",
        outcome.acknowledged, outcome.lost
    );
}

/// `CONFIG SET appendonly yes` at run time writes the current data as the base and logs
/// from then on; `no` stops logging.
#[test]
fn config_set_appendonly_starts_and_stops_the_log() {
    let dir = scratch_dir("config-set");
    let mut node = node_in(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    ok(&mut c, &["SET", "before", "1"]);
    assert_eq!(info_field(&mut c, "aof_enabled"), "0");
    ok(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    assert_eq!(info_field(&mut c, "aof_enabled"), "1");
    ok(&mut c, &["SET", "after", "2"]);
    // The base is written in the background, as Redis's child writes it.
    wait_until(Duration::from_secs(60), "the AOF rewrite", || {
        info_field(&mut c, "aof_rewrite_in_progress") == "0"
            && info_field(&mut c, "aof_rewrites") == "1"
    });
    check_aof(&dir);
    ok(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    ok(&mut c, &["SET", "unlogged", "3"]);
    assert_eq!(info_field(&mut c, "aof_enabled"), "0");
    node.kill();
    let node = aof_node(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(c.call(&["GET", "before"]), Frame::Bulk("1".into()));
    assert_eq!(c.call(&["GET", "after"]), Frame::Bulk("2".into()));
    assert_eq!(c.call(&["EXISTS", "unlogged"]), Frame::Integer(0));
}

/// `aof-timestamp-enabled yes` writes `#TS:` annotations, which the node and
/// redis-server both skip when they load.
#[test]
fn timestamp_annotations_load_in_the_node_and_in_redis() {
    let dir = scratch_dir("timestamps");
    let mut node = aof_node(&dir, &["--aof-timestamp-enabled", "yes"]);
    let mut c = RawClient::connect(node.port);
    ok(&mut c, &["SET", "stamped", "1"]);
    let incr = incr_file(&dir);
    wait_until(Duration::from_secs(10), "the AOF write", || {
        std::fs::metadata(&incr).unwrap().len() > 0
    });
    let text = std::fs::read_to_string(&incr).unwrap();
    assert!(text.starts_with("#TS:"), "{text:?}");
    node.kill();
    let node = aof_node(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(c.call(&["GET", "stamped"]), Frame::Bulk("1".into()));
    let redis_dir = scratch_dir("timestamps-r");
    copy_aof_dir(&dir, &redis_dir);
    let redis = aof_redis(&redis_dir, &[]);
    let mut rc = RawClient::connect(redis.port);
    assert_eq!(rc.call(&["GET", "stamped"]), Frame::Bulk("1".into()));
}

/// The same commands on the node and on redis-server give byte-identical incremental
/// files: every rewrite (absolute expiry, float results, non-blocking pops, SPOP that
/// empties the set), MULTI/EXEC and script effects, SELECT and the flushes are written as
/// Redis 7.0 writes them. (Commands whose log depends on the clock or on chance are
/// covered by the replay test instead.)
#[test]
fn the_logged_stream_is_byte_for_byte_redis_s() {
    let script: &[&[&str]] = &[
        &["SET", "k", "v", "EXAT", "4102444800"],
        &["SET", "j", "v"],
        &["EXPIREAT", "j", "4102444800", "GT"],
        &["EXPIREAT", "j", "4102444801"],
        &["GETEX", "j", "EXAT", "4102444802"],
        &["GETEX", "j", "PERSIST"],
        &["SET", "j2", "v"],
        &["EXPIRE", "j2", "-5"],
        &["MULTI"],
        &["SET", "m", "1"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "m", "1"],
        &["GET", "m"],
        &["INCR", "m"],
        &["EXEC"],
        &["EVAL", "redis.call('set','e','1')", "0"],
        &[
            "EVAL",
            "redis.call('set','e','1'); redis.call('incrbyfloat','e','1.5')",
            "0",
        ],
        &["INCRBYFLOAT", "f", "3.0e3"],
        &["HINCRBYFLOAT", "h", "f", "1.10"],
        &["RPUSH", "l", "a", "b", "c"],
        &["BLPOP", "l", "0"],
        &["BRPOP", "l", "0"],
        &["LMPOP", "1", "l", "LEFT", "COUNT", "5"],
        &["RPUSH", "l", "a", "b", "c"],
        &["BLMOVE", "l", "l2", "left", "right", "0"],
        &["BRPOPLPUSH", "l", "l2", "0"],
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["BZPOPMIN", "z", "0"],
        &["ZMPOP", "1", "z", "MAX", "COUNT", "1"],
        &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "3"],
        &["SADD", "s", "a"],
        &["SPOP", "s"],
        &["SADD", "s", "a", "b"],
        &["SPOP", "s", "5"],
        &["SELECT", "2"],
        &["SET", "d2", "1"],
        &["SELECT", "0"],
        &["SWAPDB", "0", "2"],
        &["FUNCTION", "LOAD", LIBRARY],
        &["FUNCTION", "DELETE", "rdblib"],
        &["FLUSHDB"],
        &["FLUSHALL"],
        &["FLUSHALL"],
    ];
    let node_dir = scratch_dir("stream-n");
    let redis_dir = scratch_dir("stream-r");
    let node = aof_node(&node_dir, &["--appendfsync", "always"]);
    let redis = aof_redis(&redis_dir, &["--appendfsync", "always"]);
    for port in [node.port, redis.port] {
        let mut c = RawClient::connect(port);
        for command in script {
            c.call(command);
        }
    }
    assert_same_log(&node_dir, &redis_dir);
}

/// When the log cannot be written (its incremental file is `/dev/full` here): with
/// `everysec` writes are refused with MISCONF and INFO says `aof_last_write_status:err`;
/// with `always` the node exits rather than acknowledge writes it did not log.
#[test]
fn a_log_that_cannot_be_written_refuses_writes_or_stops_the_node() {
    for fsync in ["everysec", "always"] {
        let dir = scratch_dir(&format!("disk-full-{fsync}"));
        std::fs::create_dir_all(dir.join(AOF_DIR)).unwrap();
        std::os::unix::fs::symlink(
            "/dev/full",
            dir.join(AOF_DIR).join("appendonly.aof.1.incr.aof"),
        )
        .unwrap();
        let mut node = node_in(&dir, &["--appendfsync", fsync]);
        let mut c = RawClient::connect(node.port);
        ok(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
        if fsync == "always" {
            c.send(&[b"SET", b"k", b"v"]);
            assert!(c.try_read_reply().is_none(), "the write was acknowledged");
            assert!(node.wait_exit(Duration::from_secs(30)), "the node lives on");
            assert!(node.log().contains("Exiting"), "{}", node.log());
            continue;
        }
        c.call(&["SET", "k", "v"]);
        let refused = c.call(&["SET", "k2", "v"]);
        assert_eq!(
            refused,
            Frame::Error("MISCONF Errors writing to the AOF file: No space left on device".into())
        );
        assert_eq!(info_field(&mut c, "aof_last_write_status"), "err");
        assert_eq!(c.call(&["GET", "k"]), Frame::Bulk("v".into()));
    }
}

/// `auto-aof-rewrite-percentage` / `-min-size`: once the log has grown past both, the node
/// rewrites it by itself (the base made at the first start does not count as a rewrite,
/// as in Redis).
#[test]
fn the_log_rewrites_itself_once_it_has_grown() {
    let dir = scratch_dir("auto-rewrite");
    let node = aof_node(
        &dir,
        &[
            "--auto-aof-rewrite-percentage",
            "100",
            "--auto-aof-rewrite-min-size",
            "64kb",
        ],
    );
    let mut c = RawClient::connect(node.port);
    assert_eq!(info_field(&mut c, "aof_rewrites"), "0");
    let value = "x".repeat(1000);
    for i in 0..100 {
        ok(&mut c, &["SET", &format!("key:{i}"), &value]);
    }
    wait_until(Duration::from_secs(30), "the automatic rewrite", || {
        info_field(&mut c, "aof_rewrites") == "1"
    });
    assert!(
        manifest_files(&dir).contains(&("appendonly.aof.2.base.rdb".into(), "b".into())),
        "{}",
        manifest_text(&dir)
    );
    assert!(node
        .log()
        .contains("Starting automatic rewriting of AOF on growth"));
}

/// MIGRATE is logged as the DEL of the keys it moved away (as Redis rewrites it): a
/// replay must not try to reach the target again, nor keep the keys when it cannot.
#[test]
fn migrate_is_logged_as_the_del_of_the_moved_keys() {
    let dir = scratch_dir("migrate");
    let mut node = aof_node(&dir, &[]);
    let mut target = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    ok(&mut c, &["SET", "moved", "1"]);
    ok(&mut c, &["SET", "stays", "2"]);
    let port = target.port.to_string();
    ok(
        &mut c,
        &["MIGRATE", "127.0.0.1", &port, "moved", "0", "5000"],
    );
    let text = std::fs::read_to_string(incr_file(&dir)).unwrap();
    assert!(!text.contains("MIGRATE"), "{text:?}");
    node.kill();
    target.kill();
    let node = aof_node(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(c.call(&["EXISTS", "moved"]), Frame::Integer(0));
    assert_eq!(c.call(&["GET", "stays"]), Frame::Bulk("2".into()));
}

/// Cluster mode: the log is replayed whole whatever the cluster state says at start (here
/// the node owns no slot when it restarts), as Redis's loading client is never
/// redirected; the keys are there once the slots are back.
#[test]
fn a_cluster_node_replays_its_log_whatever_slots_it_serves_at_start() {
    let dir = scratch_dir("cluster");
    let args = ["--cluster-enabled", "yes"];
    let mut node = aof_node(&dir, &args);
    let mut c = RawClient::connect(node.port);
    ok(&mut c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_until(Duration::from_secs(30), "cluster_state:ok", || {
        let info = bytes_of(&c.call(&["CLUSTER", "INFO"]));
        String::from_utf8_lossy(&info).contains("cluster_state:ok")
    });
    for i in 0..50 {
        ok(&mut c, &["SET", &format!("key:{i}"), &i.to_string()]);
    }
    ok(&mut c, &["CLUSTER", "DELSLOTSRANGE", "0", "16383"]);
    node.kill();
    let node = aof_node(&dir, &args);
    let mut c = RawClient::connect(node.port);
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(50));
    ok(&mut c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_until(Duration::from_secs(30), "cluster_state:ok", || {
        let info = bytes_of(&c.call(&["CLUSTER", "INFO"]));
        String::from_utf8_lossy(&info).contains("cluster_state:ok")
    });
    assert_eq!(c.call(&["GET", "key:7"]), Frame::Bulk("7".into()));
}

/// A pre-7.0 single-file AOF (`dir/appendonly.aof`) without a manifest stops the start
/// with a message naming it, rather than starting empty beside it.
#[test]
fn a_pre_7_single_file_aof_is_not_silently_ignored() {
    let dir = scratch_dir("pre7");
    std::fs::write(
        dir.join("appendonly.aof"),
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
    )
    .unwrap();
    let refusal = refused_start(&dir, &[]);
    assert!(
        refusal.contains(&dir.join("appendonly.aof").display().to_string()),
        "{refusal}"
    );
}

/// INFO persistence's AOF block has Redis 7.0's fields in Redis 7.0's order, with the
/// AOF on and off.
#[test]
fn info_persistence_has_redis_s_aof_fields_in_order() {
    let names = |client: &mut RawClient| -> Vec<String> {
        let info = String::from_utf8(bytes_of(&client.call(&["INFO", "persistence"]))).unwrap();
        info.lines()
            .filter(|l| l.starts_with("aof_") || l.starts_with("module_fork_"))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    };
    for appendonly in ["yes", "no"] {
        let node_dir = scratch_dir(&format!("info-n-{appendonly}"));
        let redis_dir = scratch_dir(&format!("info-r-{appendonly}"));
        let node = node_in(&node_dir, &["--appendonly", appendonly]);
        let redis = redis_in(&redis_dir, &["--appendonly", appendonly]);
        let mut nc = RawClient::connect(node.port);
        let mut rc = RawClient::connect(redis.port);
        assert_eq!(names(&mut nc), names(&mut rc), "appendonly {appendonly}");
        let enabled = if appendonly == "yes" { "1" } else { "0" };
        assert_eq!(info_field(&mut nc, "aof_enabled"), enabled);
    }
}
