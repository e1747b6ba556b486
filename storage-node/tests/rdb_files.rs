//! RDB files (`dump.rdb`) exchanged with a real redis-server 7.0 in both directions: keys
//! of every type and encoding the node holds, TTLs, several databases and a function
//! library survive the trip; `redis-check-rdb` accepts what the node writes; a corrupt or
//! truncated file stops the node's start with a message naming the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::process::storage_node_binary;
use test_harness::{free_port, RawClient, ServerProcess};

/// Databases the fixture writes to (several, not only 0).
const DATABASES: &[usize] = &[0, 1, 5];
/// PTTLs read from the two servers at different moments may differ by this much.
const TTL_TOLERANCE_MS: i64 = 120_000;

const LIBRARY: &str = "#!lua name=rdblib\nredis.register_function('rdbecho', function(keys, args) return args[1] end)";

/// A fresh, empty directory for one server of one test, removed when dropped.
struct ScratchDir(PathBuf);

impl std::ops::Deref for ScratchDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch_dir(name: &str) -> ScratchDir {
    let dir = std::env::temp_dir().join(format!("rdb-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    ScratchDir(dir)
}

fn node_in(dir: &Path, extra: &[&str]) -> ServerProcess {
    let dir = dir.display().to_string();
    let mut args = vec!["--dir", dir.as_str()];
    args.extend_from_slice(extra);
    ServerProcess::storage_node(&args)
}

fn redis_in(dir: &Path, extra: &[&str]) -> ServerProcess {
    ServerProcess::redis_server_on(free_port(), dir, extra)
}

fn ok(client: &mut RawClient, args: &[&str]) {
    let reply = client.call(args);
    assert!(
        !matches!(reply, Frame::Error(_)),
        "{args:?} failed: {reply:?}"
    );
}

fn bytes_of(frame: &Frame) -> Vec<u8> {
    frame
        .as_bytes()
        .unwrap_or_else(|| panic!("expected a bulk reply, got {frame:?}"))
        .to_vec()
}

fn strings_of(frame: &Frame) -> Vec<Vec<u8>> {
    frame
        .as_array()
        .unwrap_or_else(|| panic!("expected an array, got {frame:?}"))
        .iter()
        .map(bytes_of)
        .collect()
}

/// Keys of every type, in their small and big encodings, some with TTLs, in several
/// databases, and a function library.
fn populate(client: &mut RawClient) {
    ok(client, &["FUNCTION", "LOAD", LIBRARY]);
    for &db in DATABASES {
        ok(client, &["SELECT", &db.to_string()]);
        let p = format!("db{db}:");
        let k = |name: &str| format!("{p}{name}");
        // Strings: integer encodings of each width, plain, LZF-compressible, binary, empty.
        for (name, value) in [
            ("int8", "-7"),
            ("int16", "30000"),
            ("int32", "-2000000000"),
            ("int64", "9223372036854775807"),
            ("text", "hello, persistent world"),
            ("empty", ""),
        ] {
            ok(client, &["SET", &k(name), value]);
        }
        ok(client, &["SET", &k("lzf"), &"abcabcabc".repeat(200)]);
        ok(client, &["SET", &k("bin"), "\u{0}\u{1}\u{ff}zz\r\n"]);
        // Lists: one small, one of many nodes, one with a plain (over-size) node.
        ok(client, &["RPUSH", &k("list:small"), "a", "1", "-5", "b"]);
        let many: Vec<String> = (0..1500).map(|i| format!("item-{i}")).collect();
        let mut cmd = vec!["RPUSH".to_string(), k("list:big")];
        cmd.extend(many);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        ok(client, &cmd);
        ok(
            client,
            &["RPUSH", &k("list:plain"), "x", &"p".repeat(10_000), "y"],
        );
        // Hashes: listpack, hashtable by count, hashtable by value size.
        ok(client, &["HSET", &k("hash:small"), "f1", "v1", "f2", "2"]);
        for i in 0..600 {
            ok(
                client,
                &["HSET", &k("hash:big"), &format!("f{i}"), &i.to_string()],
            );
        }
        ok(client, &["HSET", &k("hash:long"), "f", &"v".repeat(100)]);
        // Sets: intset, intset of wide integers, hashtable of strings, hashtable by count.
        ok(client, &["SADD", &k("set:ints"), "1", "2", "3", "-100"]);
        ok(
            client,
            &["SADD", &k("set:wide"), "9000000000", "-9000000000", "5"],
        );
        ok(client, &["SADD", &k("set:strings"), "a", "b", "c"]);
        for i in 0..600 {
            ok(client, &["SADD", &k("set:big"), &i.to_string()]);
        }
        // Sorted sets: listpack, skiplist by count, skiplist by member size.
        ok(
            client,
            &["ZADD", &k("zset:small"), "1", "a", "2.5", "b", "-3", "c"],
        );
        for i in 0..200 {
            ok(
                client,
                &["ZADD", &k("zset:big"), &format!("{i}.25"), &format!("m{i}")],
            );
        }
        ok(client, &["ZADD", &k("zset:long"), "1", &"m".repeat(100)]);
        // TTLs, relative and absolute, on several types.
        ok(client, &["PEXPIRE", &k("text"), "100000000"]);
        ok(client, &["EXPIRE", &k("list:small"), "200000"]);
        ok(client, &["PEXPIREAT", &k("hash:big"), "4102444800000"]);
        ok(client, &["EXPIREAT", &k("zset:small"), "4102444800"]);
    }
    ok(client, &["SELECT", "0"]);
}

/// One key as compared between servers.
#[derive(Debug, PartialEq)]
struct KeyState {
    encoding: Vec<u8>,
    /// The DUMP payload, where the encoding fixes the order of elements (every encoding
    /// but `hashtable`, whose order is the dictionary's and differs between servers).
    dump: Option<Vec<u8>>,
    /// The contents, sorted where the type is unordered.
    contents: Vec<Vec<u8>>,
    pttl: i64,
}

/// Every key of the fixture's databases by (database, key), and FUNCTION DUMP.
type ServerState = (BTreeMap<(usize, Vec<u8>), KeyState>, Vec<u8>);

/// Every key of the fixture's databases, and FUNCTION DUMP.
fn state_of(client: &mut RawClient) -> ServerState {
    let mut keys = BTreeMap::new();
    for &db in DATABASES {
        ok(client, &["SELECT", &db.to_string()]);
        for key in strings_of(&client.call(&["KEYS", "*"])) {
            let key_text = String::from_utf8(key.clone()).unwrap();
            let k = key_text.as_str();
            let kind = bytes_of(&client.call(&["TYPE", k]));
            let mut contents = match kind.as_slice() {
                b"string" => vec![bytes_of(&client.call(&["GET", k]))],
                b"list" => strings_of(&client.call(&["LRANGE", k, "0", "-1"])),
                b"hash" => strings_of(&client.call(&["HGETALL", k]))
                    .chunks(2)
                    .map(|pair| [pair[0].clone(), b"=".to_vec(), pair[1].clone()].concat())
                    .collect(),
                b"set" => strings_of(&client.call(&["SMEMBERS", k])),
                b"zset" => strings_of(&client.call(&["ZRANGE", k, "0", "-1", "WITHSCORES"])),
                other => panic!("unexpected type {other:?}"),
            };
            if matches!(kind.as_slice(), b"hash" | b"set") {
                contents.sort();
            }
            let encoding = bytes_of(&client.call(&["OBJECT", "ENCODING", k]));
            let dump = (encoding != b"hashtable").then(|| bytes_of(&client.call(&["DUMP", k])));
            let pttl = client.call(&["PTTL", k]).as_integer().unwrap();
            keys.insert(
                (db, key),
                KeyState {
                    encoding,
                    dump,
                    contents,
                    pttl,
                },
            );
        }
    }
    ok(client, &["SELECT", "0"]);
    let functions = bytes_of(&client.call(&["FUNCTION", "DUMP"]));
    (keys, functions)
}

fn assert_same_state(expected: &ServerState, actual: &ServerState) {
    let (want, want_functions) = expected;
    let (got, got_functions) = actual;
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>(),
        "different key sets"
    );
    assert!(want.len() >= 20 * DATABASES.len(), "fixture too small");
    let encodings: std::collections::BTreeSet<&[u8]> =
        want.values().map(|k| k.encoding.as_slice()).collect();
    for encoding in [
        &b"int"[..],
        b"embstr",
        b"raw",
        b"quicklist",
        b"listpack",
        b"hashtable",
        b"intset",
        b"skiplist",
    ] {
        assert!(
            encodings.contains(encoding),
            "the fixture lacks {}",
            String::from_utf8_lossy(encoding)
        );
    }
    for (id, w) in want {
        let g = &got[id];
        let id = format!("db {} key {}", id.0, String::from_utf8_lossy(&id.1));
        assert_eq!(w.encoding, g.encoding, "encoding of {id}");
        assert!(
            w.dump == g.dump,
            "DUMP of {id} differs: {:?} vs {:?} bytes",
            w.dump.as_ref().map(Vec::len),
            g.dump.as_ref().map(Vec::len)
        );
        assert!(w.contents == g.contents, "contents of {id} differ");
        if w.pttl < 0 || g.pttl < 0 {
            assert_eq!(w.pttl, g.pttl, "PTTL of {id}");
        } else {
            assert!(
                (w.pttl - g.pttl).abs() <= TTL_TOLERANCE_MS,
                "PTTL of {id}: {} vs {}",
                w.pttl,
                g.pttl
            );
        }
    }
    assert_eq!(want_functions, got_functions, "FUNCTION DUMP");
}

fn info_field(client: &mut RawClient, name: &str) -> String {
    let info = String::from_utf8(bytes_of(&client.call(&["INFO", "persistence"]))).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {info}"))
        .to_string()
}

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
    assert!(node.log().contains("DB reloaded by DEBUG RELOAD"));
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
