//! The persistence tests' shared fixture: keys of every type and encoding in several
//! databases plus a function library, and the comparison of two servers' data by every
//! key's DUMP, contents and TTL (used by `rdb_files` and `aof`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use slotproxy::resp::Frame;
use test_harness::{free_port, RawClient, ServerProcess};

/// Databases the fixture writes to (several, not only 0).
pub const DATABASES: &[usize] = &[0, 1, 5];
/// PTTLs read from the two servers at different moments may differ by this much.
pub const TTL_TOLERANCE_MS: i64 = 120_000;

pub const LIBRARY: &str = "#!lua name=rdblib\nredis.register_function('rdbecho', function(keys, args) return args[1] end)";

/// A fresh, empty directory for one server of one test, removed when dropped.
pub struct ScratchDir(pub PathBuf);

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

pub fn scratch_dir(name: &str) -> ScratchDir {
    let dir = std::env::temp_dir().join(format!("persistence-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    ScratchDir(dir)
}

pub fn node_in(dir: &Path, extra: &[&str]) -> ServerProcess {
    let dir = dir.display().to_string();
    let mut args = vec!["--dir", dir.as_str()];
    args.extend_from_slice(extra);
    ServerProcess::storage_node(&args)
}

pub fn redis_in(dir: &Path, extra: &[&str]) -> ServerProcess {
    ServerProcess::redis_server_on(free_port(), dir, extra)
}

pub fn ok(client: &mut RawClient, args: &[&str]) {
    let reply = client.call(args);
    assert!(
        !matches!(reply, Frame::Error(_)),
        "{args:?} failed: {reply:?}"
    );
}

pub fn bytes_of(frame: &Frame) -> Vec<u8> {
    frame
        .as_bytes()
        .unwrap_or_else(|| panic!("expected a bulk reply, got {frame:?}"))
        .to_vec()
}

pub fn strings_of(frame: &Frame) -> Vec<Vec<u8>> {
    frame
        .as_array()
        .unwrap_or_else(|| panic!("expected an array, got {frame:?}"))
        .iter()
        .map(bytes_of)
        .collect()
}

/// Keys of every type, in their small and big encodings, some with TTLs, in several
/// databases, and a function library.
pub fn populate(client: &mut RawClient) {
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
pub struct KeyState {
    pub encoding: Vec<u8>,
    /// The DUMP payload, where the encoding fixes the order of elements (every encoding
    /// but `hashtable`, whose order is the dictionary's and differs between servers).
    pub dump: Option<Vec<u8>>,
    /// The contents, sorted where the type is unordered.
    pub contents: Vec<Vec<u8>>,
    pub pttl: i64,
}

/// Every key of the fixture's databases by (database, key), and FUNCTION DUMP.
pub type ServerState = (BTreeMap<(usize, Vec<u8>), KeyState>, Vec<u8>);

/// Every key of the fixture's databases, and FUNCTION DUMP.
pub fn state_of(client: &mut RawClient) -> ServerState {
    let mut keys = BTreeMap::new();
    for &db in DATABASES {
        ok(client, &["SELECT", &db.to_string()]);
        for key in strings_of(&client.call(&["KEYS", "*"])) {
            let key_text = String::from_utf8(key.clone()).unwrap();
            let k = key_text.as_str();
            let kind = bytes_of(&client.call(&["TYPE", k]));
            if kind == b"none" {
                // It expired between KEYS and TYPE (a load's short TTLs): gone on every
                // server alike, since a replica hides a key past its TTL too.
                continue;
            }
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

pub fn assert_same_state(expected: &ServerState, actual: &ServerState) {
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

/// The field `name` of the INFO section `section`, if the server shows it.
pub fn find_info(client: &mut RawClient, section: &str, name: &str) -> Option<String> {
    let text = String::from_utf8(bytes_of(&client.call(&["INFO", section]))).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(str::to_string)
}

/// A field of INFO persistence.
pub fn info_field(client: &mut RawClient, name: &str) -> String {
    find_info(client, "persistence", name)
        .unwrap_or_else(|| panic!("no {name} in INFO persistence"))
}

/// The AOF directory and manifest names (Redis 7.0's defaults).
pub const AOF_DIR: &str = "appendonlydir";
pub const MANIFEST: &str = "appendonly.aof.manifest";

pub fn manifest_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(AOF_DIR).join(MANIFEST)).unwrap()
}

/// The files the manifest names, with their type letter.
pub fn manifest_files(dir: &Path) -> Vec<(String, String)> {
    manifest_text(dir)
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            (words[1].to_string(), words[5].to_string())
        })
        .collect()
}

/// The incremental file the manifest names last.
pub fn incr_file(dir: &Path) -> std::path::PathBuf {
    let name = manifest_files(dir)
        .into_iter()
        .rev()
        .find(|(_, kind)| kind == "i")
        .expect("an incremental file")
        .0;
    dir.join(AOF_DIR).join(name)
}

/// The node's incremental AOF file (in `node_dir`) holds the same bytes as redis-server's
/// (in `redis_dir`); both are shown, CRLF as blanks, when they differ.
pub fn assert_same_log(node_dir: &Path, redis_dir: &Path) {
    assert_same_log_after(node_dir, redis_dir, |log| log);
}

/// [`assert_same_log`] once `normalize` has rewritten both logs (clock readings, which the
/// two servers take at different instants).
pub fn assert_same_log_after(
    node_dir: &Path,
    redis_dir: &Path,
    normalize: impl Fn(Vec<u8>) -> Vec<u8>,
) {
    let node_log = normalize(std::fs::read(incr_file(node_dir)).unwrap());
    let redis_log = normalize(std::fs::read(incr_file(redis_dir)).unwrap());
    let text = |log: &[u8]| String::from_utf8_lossy(log).replace("\r\n", " ");
    assert!(
        node_log == redis_log,
        "the node logged\n{}\nredis-server logged\n{}",
        text(&node_log),
        text(&redis_log)
    );
}

/// `redis-check-aof` accepts the manifest in `dir`'s AOF directory.
pub fn check_aof(dir: &Path) {
    let manifest = dir.join(AOF_DIR).join(MANIFEST);
    let check = std::process::Command::new("redis-check-aof")
        .arg(&manifest)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && report.contains("is valid"),
        "redis-check-aof refused {}: {report}",
        manifest.display()
    );
}
