//! String commands, compared with a real redis-server byte for byte; and, in process, the
//! expiry and encoding effects that need TTL or OBJECT (other families) to be seen.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use storage_node::cmd::execute;
use storage_node::config::Config;
use storage_node::keyspace::{unix_time_ms, Keyspace};
use storage_node::server::clients::{Client, ClientHandle};
use storage_node::server::Shared;
use test_harness::Differential;

#[test]
fn get_set_and_their_options_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["GET", "k"],
        &["SET", "k", "v"],
        &["GET", "k"],
        &["SET", "k", "1234"],
        &["GET", "k"],
        &["set", "k", "v2", "nx"],
        &["SET", "k", "v3", "XX"],
        &["SET", "missing", "v", "XX"],
        &["GET", "missing"],
        &["SET", "k", "v4", "GET"],
        &["SET", "fresh", "v", "GET"],
        &["SET", "k", "v5", "NX", "GET"],
        &["SET", "nx2", "v", "NX", "GET"],
        &["SET", "k", "v6", "XX", "GET"],
        &["SET", "gone", "v", "XX", "GET"],
        &["SET", "k", "v", "GET", "GET"],
        &["SET", "k", "v", "NX", "NX"],
        &["SET", "k", "v", "EX", "10", "EX", "20"],
        &["SET", "k", "v", "EX", "100"],
        &["SET", "k", "v", "PX", "100000"],
        &["SET", "k", "v", "EXAT", "9999999999"],
        &["SET", "k", "v", "PXAT", "9999999999999"],
        &["SET", "k", "v", "KEEPTTL"],
        &["SET", "k", "v", "KEEPTTL", "KEEPTTL", "GET"],
        &["SET", "k", "v", "EXAT", "9223372036854775"],
        &["SET", "k", "v", "PXAT", "9223372036854775807"],
        // Conflicting or incomplete options.
        &["SET", "k", "v", "NX", "XX"],
        &["SET", "k", "v", "XX", "NX"],
        &["SET", "k", "v", "EX", "10", "PX", "10"],
        &["SET", "k", "v", "PX", "10", "EXAT", "10"],
        &["SET", "k", "v", "KEEPTTL", "EX", "10"],
        &["SET", "k", "v", "PXAT", "10", "KEEPTTL"],
        &["SET", "k", "v", "PERSIST"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "GET", "PX"],
        &["SET", "k", "v", "FOO"],
        &["SET", "k", "v", "EX", "abc", "NX", "XX"],
        // Bad expire values.
        &["SET", "k", "v", "EX", "0"],
        &["SET", "k", "v", "EX", "-1"],
        &["SET", "k", "v", "PX", "0"],
        &["SET", "k", "v", "EXAT", "0"],
        &["SET", "k", "v", "PXAT", "-5"],
        &["SET", "k", "v", "EX", "abc"],
        &["SET", "k", "v", "EX", "1.5"],
        &["SET", "k", "v", "EX", "9223372036854775"],
        &["SET", "k", "v", "EX", "9223372036854776"],
        &["SET", "k", "v", "EXAT", "9223372036854776"],
        &["SET", "k", "v", "PX", "9223372036854775807"],
        &["SET", "k", "v", "PX", "9223372036854775808"],
        &["SET", "k", "v", "EX", "0", "GET"],
        &["GET", "k"],
        // An expire time already past: the key is gone on the next read.
        &["SET", "past", "v", "PXAT", "1"],
        &["GET", "past"],
        &["SET", "past", "v"],
        &["SET", "past", "w", "EXAT", "1", "GET"],
        &["GET", "past"],
        &["SET", "past", "x", "PXAT", "1", "GET"],
        &["SETNX", "n", "1"],
        &["SETNX", "n", "2"],
        &["GET", "n"],
        &["SETEX", "e", "100", "v"],
        &["GET", "e"],
        &["SETEX", "e", "0", "v"],
        &["SETEX", "e", "-5", "v"],
        &["SETEX", "e", "abc", "v"],
        &["SETEX", "e", "9223372036854775807", "v"],
        &["PSETEX", "e", "100000", "w"],
        &["GET", "e"],
        &["PSETEX", "e", "0", "v"],
        &["PSETEX", "e", "9223372036854775807", "v"],
        &["GETSET", "gs", "a"],
        &["GETSET", "gs", "b"],
        &["GET", "gs"],
        &["GETDEL", "gs"],
        &["GETDEL", "gs"],
        &["GET", "gs"],
        // Arity is Redis's.
        &["GET"],
        &["GET", "a", "b"],
        &["SET", "k"],
        &["SETNX", "k"],
        &["SETEX", "k", "1"],
        &["GETSET", "k"],
        &["GETDEL"],
    ]);
}

#[test]
fn getex_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["GETEX", "x"],
        &["SET", "x", "v"],
        &["GETEX", "x"],
        &["GETEX", "x", "EX", "100"],
        &["GETEX", "x", "PX", "100000"],
        &["GETEX", "x", "EXAT", "9999999999"],
        &["GETEX", "x", "PXAT", "99999999999999"],
        &["GETEX", "x", "PERSIST"],
        &["GETEX", "x", "PERSIST", "PERSIST"],
        &["GETEX", "x", "EX", "10", "EX", "20"],
        &["GETEX", "x", "EX", "0"],
        &["GETEX", "x", "PX", "-1"],
        &["GETEX", "x", "EX", "abc"],
        &["GETEX", "x", "EX", "9223372036854776"],
        &["GETEX", "x", "PX", "9223372036854775807"],
        &["GETEX", "nokey", "EX", "0"],
        &["GETEX", "nokey", "EX", "abc"],
        &["GETEX", "nokey", "GET"],
        &["GETEX", "x", "GET"],
        &["GETEX", "x", "KEEPTTL"],
        &["GETEX", "x", "NX"],
        &["GETEX", "x", "EX", "1", "PERSIST"],
        &["GETEX", "x", "PERSIST", "EX", "1"],
        &["GETEX", "x", "EX", "1", "PX", "1"],
        &["GETEX", "x", "EX"],
        &["GETEX", "x", "FOO"],
        &["GETEX", "x", "PXAT", "1"],
        &["GET", "x"],
        &["SET", "x", "v"],
        &["GETEX", "x", "EXAT", "1"],
        &["GETEX", "x"],
        &["GETEX"],
    ]);
}

#[test]
fn multi_key_commands_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["MSET", "a", "1", "b", "2"],
        &["MGET", "a", "b", "c"],
        &["MGET", "c"],
        &["MSET", "a"],
        &["MSET", "a", "1", "b"],
        &["MSETNX", "a", "1", "b"],
        &["MSETNX", "c", "3", "d", "4"],
        &["MSETNX", "c", "5", "e", "6"],
        &["MGET", "c", "d", "e"],
        &["MSETNX", "f", "1", "f", "2"],
        &["GET", "f"],
        &["MSET", "a", "x", "a", "y"],
        &["GET", "a"],
        &["MGET", "a", "a", "missing", "a"],
        &["MGET"],
        &["MSETNX"],
    ]);
}

#[test]
fn integer_counters_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["INCR", "c"],
        &["INCRBY", "c", "10"],
        &["DECR", "c"],
        &["DECRBY", "c", "5"],
        &["INCRBY", "c", "-20"],
        &["GET", "c"],
        &["INCRBY", "c", "abc"],
        &["INCRBY", "c", "+1"],
        &["INCRBY", "c", "1.0"],
        &["INCRBY", "c", "9223372036854775808"],
        &["DECRBY", "fresh", "3"],
        &["SET", "c", "9223372036854775807"],
        &["INCR", "c"],
        &["INCRBY", "c", "0"],
        &["DECRBY", "c", "-1"],
        &["SET", "c", "-9223372036854775808"],
        &["DECR", "c"],
        &["INCRBY", "c", "-1"],
        &["DECRBY", "c", "-9223372036854775808"],
        &["DECRBY", "c", "9223372036854775807"],
        &["INCRBY", "c", "9223372036854775807"],
        &["GET", "c"],
        &["SET", "c", " 1"],
        &["INCR", "c"],
        &["SET", "c", "01"],
        &["INCR", "c"],
        &["SET", "c", "1.5"],
        &["DECR", "c"],
        &["SET", "c", "-0"],
        &["INCR", "c"],
        &["SET", "c", ""],
        &["INCR", "c"],
        &["SET", "c", "12345678901234567890"],
        &["INCR", "c"],
        &["SET", "c", "-5"],
        &["INCR", "c"],
        &["GET", "c"],
        &["INCR"],
        &["INCRBY", "c"],
        &["DECR", "a", "b"],
    ]);
}

#[test]
fn incrbyfloat_fixed_cases_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["INCRBYFLOAT", "f", "0.1"],
        &["INCRBYFLOAT", "f", "0.2"],
        &["INCRBYFLOAT", "f", "-0.3"],
        &["GET", "f"],
        &["INCRBYFLOAT", "f", "abc"],
        &["INCRBYFLOAT", "f", ""],
        &["INCRBYFLOAT", "f", " 1"],
        &["INCRBYFLOAT", "f", "1 "],
        &["INCRBYFLOAT", "f", "nan"],
        &["INCRBYFLOAT", "f", "inf"],
        &["INCRBYFLOAT", "f", "-infinity"],
        &["INCRBYFLOAT", "f", "1e5000"],
        &["INCRBYFLOAT", "f", "1e-5000"],
        &["INCRBYFLOAT", "f", "0x1.8p3"],
        &["INCRBYFLOAT", "f", "1e-4940"],
        &["INCRBYFLOAT", "f", "0e99999"],
        &["INCRBYFLOAT", "f", "1e300"],
        &["INCRBYFLOAT", "f", "-1e300"],
        &["SET", "f", "inf"],
        &["INCRBYFLOAT", "f", "1"],
        &["INCRBYFLOAT", "f", "abc"],
        &["SET", "f", "1e4932"],
        &["INCRBYFLOAT", "f", "1e4932"],
        &["INCRBYFLOAT", "f", "-1e4932"],
        &["SET", "f", "abc"],
        &["INCRBYFLOAT", "f", "1"],
        &["SET", "f", "5"],
        &["INCRBYFLOAT", "f", "0"],
        &["INCR", "f"],
        &["INCRBYFLOAT", "f", "1.5"],
        &["INCR", "f"],
        &["SET", "f", "9223372036854775807"],
        &["INCRBYFLOAT", "f", "1"],
        &["SET", "f", "-0.0000000000000000001"],
        &["INCRBYFLOAT", "f", "0"],
        &["INCRBYFLOAT", "f", "0.000003814697265625"],
        &["INCRBYFLOAT", "f", "0.000011444091796875"],
        &["INCRBYFLOAT"],
        &["INCRBYFLOAT", "f"],
    ]);
    let long = format!("0.{}", "0".repeat(5117));
    d.check(&["INCRBYFLOAT", "g", &long]);
    let too_long = format!("0.{}", "0".repeat(5118));
    d.check(&["INCRBYFLOAT", "g", &too_long]);
    for _ in 0..20 {
        d.check(&["INCRBYFLOAT", "tenths", "0.1"]);
    }
}

/// A small deterministic generator, so the case list is the same on every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `fixed` digits, plus up to `extra - 1` more.
    fn digits(&mut self, fixed: u64, extra: u64) -> String {
        let count = fixed + self.below(extra.max(1));
        (0..count)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }

    /// A number in one of the forms `strtold` reads, over the whole 80-bit range.
    fn number(&mut self) -> String {
        let sign = ["", "-", "+", ""][self.below(4) as usize];
        let body = match self.below(9) {
            0 => self.digits(1, 19),
            1 => format!("{}.{}", self.digits(1, 12), self.digits(0, 25)),
            2 => format!("0.{}", self.digits(1, 30)),
            3 => format!("{}e{}", self.digits(3, 1), self.below(600) as i64 - 300),
            4 => format!("{}e-{}", self.digits(17, 1), 4900 + self.below(60)),
            5 => format!("{}e{}", self.digits(15, 1), 4900 + self.below(20)),
            6 => format!(
                "0x{:x}.{:x}p{}",
                self.next(),
                self.next() >> 40,
                self.below(200) as i64 - 100
            ),
            7 => format!(
                "{}.{}e-{}",
                self.digits(1, 1),
                self.digits(16, 1),
                self.below(20)
            ),
            _ => format!("{}", self.next() as f64 / (1u64 << self.below(64)) as f64),
        };
        format!("{sign}{body}")
    }
}

#[test]
fn incrbyfloat_generated_cases_match_redis() {
    let mut d = Differential::start();
    let mut rng = XorShift(0x5eed_1234_abcd_ef01);
    for round in 0..600 {
        let (start, increment) = (rng.number(), rng.number());
        d.check(&["SET", "f", &start]);
        d.check(&["INCRBYFLOAT", "f", &increment]);
        // Keep adding to the stored result: the formatted text must read back exactly.
        if round % 3 == 0 {
            let more = rng.number();
            d.check(&["INCRBYFLOAT", "f", &more]);
            d.check(&["GET", "f"]);
        }
    }
}

#[test]
fn ranges_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["APPEND", "s", "hello"],
        &["APPEND", "s", " world"],
        &["GET", "s"],
        &["APPEND", "s", ""],
        &["STRLEN", "s"],
        &["STRLEN", "nokey"],
        &["SET", "n", "42"],
        &["APPEND", "n", "7"],
        &["INCR", "n"],
        &["GETRANGE", "nokey", "0", "-1"],
        &["GETRANGE", "s", "a", "1"],
        &["GETRANGE", "s", "0", "b"],
        &["SUBSTR", "s", "1", "3"],
        &["SETRANGE", "r", "5", "abc"],
        &["GET", "r"],
        &["SETRANGE", "r", "0", "XY"],
        &["SETRANGE", "r", "6", "0123456789"],
        &["GET", "r"],
        &["SETRANGE", "r", "-1", "x"],
        &["SETRANGE", "r", "abc", "x"],
        &["SETRANGE", "r", "2", ""],
        &["SETRANGE", "empty", "5", ""],
        &["GET", "empty"],
        &["SETRANGE", "r", "536870911", ""],
        &["SETRANGE", "r", "536870912", "x"],
        &["SETRANGE", "r", "536870911", "xy"],
        &["SETRANGE", "newkey", "536870912", "x"],
        &["SETRANGE", "r", "9223372036854775807", "x"],
        &["SETRANGE", "r", "9223372036854775808", "x"],
        &["SET", "num", "12345"],
        &["SETRANGE", "num", "1", "9"],
        &["INCR", "num"],
        &["APPEND"],
        &["STRLEN"],
        &["GETRANGE", "s", "0"],
        &["SETRANGE", "s", "0"],
    ]);
}

#[test]
fn getrange_index_combinations_match_redis() {
    let mut d = Differential::start();
    let indexes = [
        "-9223372036854775808",
        "-100",
        "-6",
        "-5",
        "-2",
        "-1",
        "0",
        "1",
        "3",
        "4",
        "5",
        "100",
        "9223372036854775807",
    ];
    for value in ["", "x", "hello", "12345"] {
        d.check(&["SET", "s", value]);
        for start in indexes {
            for end in indexes {
                d.check(&["GETRANGE", "s", start, end]);
            }
        }
    }
}

#[test]
fn binary_values_round_trip_like_redis() {
    let mut d = Differential::start();
    let value: Vec<u8> = (0..=255u8).collect();
    d.check_bytes(&[b"SET", b"bin\x00key", &value]);
    d.check_bytes(&[b"GET", b"bin\x00key"]);
    d.check_bytes(&[b"APPEND", b"bin\x00key", b"\r\n\x00"]);
    d.check_bytes(&[b"GETRANGE", b"bin\x00key", b"250", b"-1"]);
    d.check_bytes(&[b"SETRANGE", b"bin\x00key", b"1", b"\xff\x00"]);
    d.check_bytes(&[b"MGET", b"bin\x00key", b"bin"]);
    d.check_bytes(&[b"STRLEN", b"bin\x00key"]);
    let long = vec![b'z'; 100_000];
    d.check_bytes(&[b"SET", b"long", &long]);
    d.check_bytes(&[b"APPEND", b"long", &long]);
    d.check_bytes(&[b"GET", b"long"]);
}

#[test]
fn lcs_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["MSET", "a", "ohmytext", "b", "mynewtext"],
        &["LCS", "a", "b"],
        &["LCS", "a", "b", "LEN"],
        &["LCS", "a", "b", "IDX"],
        &["LCS", "a", "b", "idx", "MINMATCHLEN", "4"],
        &["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"],
        &["LCS", "a", "b", "IDX", "WITHMATCHLEN"],
        &["LCS", "a", "b", "WITHMATCHLEN"],
        &["LCS", "a", "b", "LEN", "WITHMATCHLEN", "MINMATCHLEN", "2"],
        &["LCS", "a", "b", "LEN", "IDX"],
        &["LCS", "a", "b", "FOO"],
        &["LCS", "a", "b", "MINMATCHLEN"],
        &["LCS", "a", "b", "MINMATCHLEN", "x", "LEN", "IDX"],
        &["LCS", "a", "b", "MINMATCHLEN", "-5", "IDX"],
        &["LCS", "a", "b", "IDX", "MINMATCHLEN", "100"],
        &["LCS", "a", "nokey"],
        &["LCS", "a", "nokey", "IDX"],
        &["LCS", "nokey", "nokey2", "LEN"],
        &["MSET", "x", "aaaa", "y", "aa"],
        &["LCS", "x", "y", "IDX", "WITHMATCHLEN"],
        &["MSET", "x", "abcabcabc", "y", "cbacbacba"],
        &["LCS", "x", "y", "IDX", "WITHMATCHLEN"],
        &["LCS", "x", "x", "IDX", "WITHMATCHLEN"],
        &["LCS", "a"],
    ]);
    let big = "ab".repeat(6000);
    d.check(&["MSET", "big1", &big, "big2", &big]);
    d.check(&["LCS", "big1", "big2"]);
    d.check(&["LCS", "big1", "a", "LEN"]);
}

#[test]
fn lcs_of_generated_strings_matches_redis() {
    let mut d = Differential::start();
    let mut rng = XorShift(0xfeed_face_cafe_beef);
    for _ in 0..150 {
        let text = |rng: &mut XorShift| -> String {
            let len = rng.below(40);
            (0..len)
                .map(|_| char::from(b'a' + rng.below(4) as u8))
                .collect()
        };
        let (a, b) = (text(&mut rng), text(&mut rng));
        d.check(&["MSET", "a", &a, "b", &b]);
        d.check(&["LCS", "a", "b"]);
        d.check(&["LCS", "a", "b", "IDX", "WITHMATCHLEN"]);
        let min = rng.below(4).to_string();
        d.check(&["LCS", "a", "b", "IDX", "MINMATCHLEN", &min]);
    }
}

/// Runs commands in process, to look at expiry times and encodings directly.
struct InProcess {
    shared: Shared,
    keyspace: Keyspace,
    client: Client,
}

impl InProcess {
    fn new() -> InProcess {
        let addr: SocketAddr = ([127, 0, 0, 1], 1).into();
        InProcess {
            shared: Shared::new(Config::default(), 0),
            keyspace: Keyspace::new(16),
            client: Client::new(Arc::new(ClientHandle::new(1, addr, addr)), false),
        }
    }

    fn run(&mut self, args: &[&str]) -> String {
        let args: Vec<Bytes> = args
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        let mut out = BytesMut::new();
        execute(
            &self.shared,
            &mut self.keyspace,
            &mut self.client,
            &mut out,
            &args,
        );
        String::from_utf8_lossy(&out).into_owned()
    }

    fn expiry(&mut self, key: &str) -> Option<u64> {
        self.keyspace
            .db(0)
            .peek(key.as_bytes())
            .map(|entry| entry.expire_at_ms())
    }

    fn encoding(&mut self, key: &str) -> &'static str {
        self.keyspace
            .db(0)
            .peek(key.as_bytes())
            .map_or("none", |entry| entry.value.encoding_name())
    }
}

#[test]
fn expiry_is_set_kept_and_cleared_like_redis() {
    let mut node = InProcess::new();
    let before = unix_time_ms();
    node.run(&["SET", "k", "v", "EX", "100"]);
    let deadline = node.expiry("k").expect("key exists");
    assert!((before + 100_000..=unix_time_ms() + 100_000).contains(&deadline));
    node.run(&["SET", "k", "w", "KEEPTTL"]);
    assert_eq!(node.expiry("k"), Some(deadline));
    node.run(&["INCRBYFLOAT", "k2", "1"]);
    node.run(&["SET", "k2", "7", "PXAT", "99999999999999"]);
    node.run(&["INCR", "k2"]);
    node.run(&["INCRBYFLOAT", "k2", "0.5"]);
    node.run(&["APPEND", "k2", "1"]);
    node.run(&["SETRANGE", "k2", "0", "9"]);
    assert_eq!(node.expiry("k2"), Some(99_999_999_999_999));
    node.run(&["SET", "k", "x"]);
    assert_eq!(node.expiry("k"), Some(0));
    node.run(&["SETEX", "k", "5", "v"]);
    assert!(node.expiry("k").is_some_and(|at| at >= before + 5_000));
    node.run(&["GETSET", "k", "v"]);
    assert_eq!(node.expiry("k"), Some(0));
    node.run(&["PSETEX", "k", "5000", "v"]);
    node.run(&["MSET", "k", "v"]);
    assert_eq!(node.expiry("k"), Some(0));
    node.run(&["GETEX", "k", "EXAT", "9999999999"]);
    assert_eq!(node.expiry("k"), Some(9_999_999_999_000));
    node.run(&["GETEX", "k"]);
    assert_eq!(node.expiry("k"), Some(9_999_999_999_000));
    node.run(&["GETEX", "k", "PERSIST"]);
    assert_eq!(node.expiry("k"), Some(0));
    node.run(&["GETEX", "k", "PX", "50000"]);
    assert!(node.expiry("k").is_some_and(|at| at >= before + 50_000));
    assert_eq!(node.run(&["GETEX", "k", "PXAT", "1"]), "$1\r\nv\r\n");
    assert_eq!(node.expiry("k"), None);
}

#[test]
fn encodings_follow_redis() {
    let mut node = InProcess::new();
    let cases: &[(&[&str], &str)] = &[
        (&["SET", "k", "123"], "int"),
        (&["SET", "k", "abc"], "embstr"),
        (&["APPEND", "k", "d"], "raw"),
        (&["INCR", "n"], "int"),
        (&["INCRBYFLOAT", "n", "1"], "embstr"),
        (&["INCR", "n"], "int"),
        (&["APPEND", "fresh", "12"], "int"),
        (&["APPEND", "fresh2", "ab"], "embstr"),
        (&["SETRANGE", "r", "0", "5"], "raw"),
        (&["SET", "e", "5"], "int"),
        (&["SETRANGE", "e", "0", ""], "int"),
        (&["APPEND", "e", ""], "raw"),
        (&["SET", "f", "1e300"], "embstr"),
        (&["INCRBYFLOAT", "f", "0"], "raw"),
    ];
    for (command, encoding) in cases {
        node.run(command);
        assert_eq!(node.encoding(command[1]), *encoding, "after {command:?}");
    }
}
