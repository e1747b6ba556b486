//! RDB files (`dump.rdb`) exchanged with a real redis-server 7.0 in both directions: keys
//! of every type and encoding the node holds, TTLs, several databases and a function
//! library survive the trip; `redis-check-rdb` accepts what the node writes; a corrupt or
//! truncated file stops the node's start with a message naming the file.

mod persistence_fixture;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use persistence_fixture::*;
use test_harness::process::storage_node_binary;
use test_harness::{free_port, RawClient};

#[test]
fn node_starts_from_a_file_redis_saved() {
    let redis_dir = scratch_dir("from-redis-r");
    let node_dir = scratch_dir("from-redis-n");
    let redis = redis_in(&redis_dir, &[]);
    let mut rc = RawClient::connect(redis.port);
    populate(&mut rc);
    ok(&mut rc, &["SAVE"]);
    let expected = state_of(&mut rc);
    std::fs::copy(redis_dir.join("dump.rdb"), node_dir.join("dump.rdb")).unwrap();

    let node = node_in(&node_dir, &[]);
    let mut nc = RawClient::connect(node.port);
    let got = state_of(&mut nc);
    assert_same_state(&expected, &got);
    let log = node.log();
    assert!(
        log.contains(&format!("DB loaded from disk: {} keys", expected.0.len())),
        "{log}"
    );
    assert_eq!(info_field(&mut nc, "rdb_changes_since_last_save"), "0");
    assert_eq!(
        info_field(&mut nc, "rdb_last_load_keys_loaded"),
        expected.0.len().to_string()
    );
    assert_eq!(info_field(&mut nc, "rdb_last_load_keys_expired"), "0");
}

#[test]
fn redis_starts_from_a_file_the_node_saved() {
    let node_dir = scratch_dir("to-redis-n");
    let redis_dir = scratch_dir("to-redis-r");
    let node = node_in(&node_dir, &[]);
    let mut nc = RawClient::connect(node.port);
    populate(&mut nc);
    let before = nc.call(&["LASTSAVE"]).as_integer().unwrap();
    assert_ne!(info_field(&mut nc, "rdb_changes_since_last_save"), "0");
    ok(&mut nc, &["SAVE"]);
    assert_eq!(info_field(&mut nc, "rdb_changes_since_last_save"), "0");
    assert_eq!(info_field(&mut nc, "rdb_saves"), "1");
    assert!(nc.call(&["LASTSAVE"]).as_integer().unwrap() >= before);
    let expected = state_of(&mut nc);
    let file = node_dir.join("dump.rdb");

    let check = Command::new("redis-check-rdb").arg(&file).output().unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && report.contains("RDB looks OK"),
        "{report}"
    );
    std::fs::copy(&file, redis_dir.join("dump.rdb")).unwrap();
    let redis = redis_in(&redis_dir, &[]);
    let mut rc = RawClient::connect(redis.port);
    assert_same_state(&expected, &state_of(&mut rc));
}

#[test]
fn uncompressed_unchecksummed_files_cross_both_ways() {
    let node_dir = scratch_dir("plain-n");
    let redis_dir = scratch_dir("plain-r");
    let node = node_in(
        &node_dir,
        &["--rdbcompression", "no", "--rdbchecksum", "no"],
    );
    let mut nc = RawClient::connect(node.port);
    populate(&mut nc);
    ok(&mut nc, &["SAVE"]);
    let plain_len = std::fs::metadata(node_dir.join("dump.rdb")).unwrap().len();
    ok(&mut nc, &["CONFIG", "SET", "rdbcompression", "yes"]);
    ok(&mut nc, &["SAVE"]);
    let packed_len = std::fs::metadata(node_dir.join("dump.rdb")).unwrap().len();
    assert!(
        packed_len + 1000 < plain_len,
        "rdbcompression made no difference: {packed_len} vs {plain_len}"
    );
    ok(&mut nc, &["CONFIG", "SET", "rdbcompression", "no"]);
    ok(&mut nc, &["SAVE"]);
    let bytes = std::fs::read(node_dir.join("dump.rdb")).unwrap();
    assert_eq!(
        &bytes[bytes.len() - 8..],
        &[0u8; 8],
        "checksum should be zeros"
    );
    let expected = state_of(&mut nc);

    let check = Command::new("redis-check-rdb")
        .arg(node_dir.join("dump.rdb"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    std::fs::copy(node_dir.join("dump.rdb"), redis_dir.join("dump.rdb")).unwrap();
    // DUMP honours rdbcompression too, so both servers run with it off.
    let redis = redis_in(&redis_dir, &["--rdbcompression", "no"]);
    let mut rc = RawClient::connect(redis.port);
    assert_same_state(&expected, &state_of(&mut rc));
}

#[test]
fn debug_reload_keeps_everything() {
    let dir = scratch_dir("reload");
    let node = node_in(&dir, &["--enable-debug-command", "yes"]);
    let mut nc = RawClient::connect(node.port);
    populate(&mut nc);
    let expected = state_of(&mut nc);
    ok(&mut nc, &["DEBUG", "RELOAD"]);
    assert_same_state(&expected, &state_of(&mut nc));
    node.wait_for_log("DB reloaded by DEBUG RELOAD", Duration::from_secs(30));
}

/// Starts a node on `dir` expecting it to refuse; returns what it printed.
fn refused_start(dir: &Path) -> String {
    let mut child = Command::new(storage_node_binary())
        .args(["--port", &free_port().to_string(), "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the node did not refuse to start");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!status.success(), "the node exited successfully: {text}");
    assert!(
        !text.contains("Ready to accept connections"),
        "the node served: {text}"
    );
    text
}

#[test]
fn corrupt_or_truncated_files_stop_the_start() {
    let dir = scratch_dir("corrupt");
    let file = dir.join("dump.rdb");
    {
        let node = node_in(&dir, &[]);
        let mut nc = RawClient::connect(node.port);
        populate(&mut nc);
        ok(&mut nc, &["SAVE"]);
    }
    let good = std::fs::read(&file).unwrap();
    let needle = b"hello, persistent world";
    let at = good
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the plain string is in the file");

    let mut flipped = good.clone();
    flipped[at + 3] ^= 0x20;
    std::fs::write(&file, &flipped).unwrap();
    let text = refused_start(&dir);
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("wrong RDB checksum"), "{text}");

    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    let text = refused_start(&dir);
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("unexpected end of data"), "{text}");

    // The intact file still loads: the refusals above were about the damage.
    std::fs::write(&file, &good).unwrap();
    let node = node_in(&dir, &[]);
    let mut nc = RawClient::connect(node.port);
    assert!(nc.call(&["DBSIZE"]).as_integer().unwrap() > 0);
}

#[test]
fn keys_expired_on_disk_are_dropped_at_load() {
    let dir = scratch_dir("expired");
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let at = now_ms() + 300;
    {
        let node = node_in(&dir, &["--enable-debug-command", "yes"]);
        let mut nc = RawClient::connect(node.port);
        // Without active expiry the key stays in memory past its time, so SAVE writes it
        // whether or not the deadline has passed by then (Redis writes such keys too).
        ok(&mut nc, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        ok(&mut nc, &["SET", "short-lived", "v"]);
        ok(&mut nc, &["PEXPIREAT", "short-lived", &at.to_string()]);
        ok(&mut nc, &["SET", "kept", "v"]);
        ok(&mut nc, &["SAVE"]);
    }
    let bytes = std::fs::read(dir.join("dump.rdb")).unwrap();
    assert!(bytes.windows(11).any(|w| w == b"short-lived"));
    // Wait (bounded) until the expiry time is past on the wall clock.
    let deadline = Instant::now() + Duration::from_secs(30);
    while now_ms() <= at {
        assert!(Instant::now() < deadline, "the clock did not advance");
        std::thread::sleep(Duration::from_millis(10));
    }
    let node = node_in(&dir, &[]);
    let mut nc = RawClient::connect(node.port);
    assert_eq!(info_field(&mut nc, "rdb_last_load_keys_expired"), "1");
    assert_eq!(info_field(&mut nc, "rdb_last_load_keys_loaded"), "1");
    assert_eq!(nc.call(&["DBSIZE"]).as_integer(), Some(1));
}
