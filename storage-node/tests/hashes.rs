//! Hash commands compared with a real redis-server, in RESP2 and RESP3.
//!
//! Small (`listpack`) hashes reply in insertion order in both servers and are compared
//! byte for byte; big (`hashtable`) ones are compared as sets of pairs, since Redis's dict
//! order cannot be reproduced.

use std::collections::BTreeSet;

use slotproxy::resp::Frame;
use test_harness::Differential;

#[test]
fn field_commands_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["HSET", "h", "a", "10", "d", "4"],
        &["HSET", "h"],
        &["HSET", "h", "a"],
        &["HSET", "h", "a", "1", "b"],
        &["HMSET", "h", "e", "5"],
        &["HMSET", "h", "e"],
        &["HSETNX", "h", "a", "x"],
        &["HSETNX", "h", "f", "6"],
        &["HSETNX", "new", "f", "6"],
        &["HGET", "h", "a"],
        &["HGET", "h", "zz"],
        &["HGET", "missing", "a"],
        &["HMGET", "h", "a", "zz", "b"],
        &["HMGET", "missing", "a", "b"],
        &["HEXISTS", "h", "a"],
        &["HEXISTS", "h", "zz"],
        &["HEXISTS", "missing", "a"],
        &["HLEN", "h"],
        &["HLEN", "missing"],
        &["HSTRLEN", "h", "a"],
        &["HSTRLEN", "h", "zz"],
        &["HSTRLEN", "missing", "a"],
        &["HGETALL", "h"],
        &["HKEYS", "h"],
        &["HVALS", "h"],
        &["HGETALL", "missing"],
        &["HKEYS", "missing"],
        &["HVALS", "missing"],
        &["HDEL", "h", "a", "zz", "a"],
        &["HDEL", "missing", "a"],
        &["HGETALL", "h"],
        &["HDEL", "h", "b", "c", "d", "e", "f"],
        &["EXISTS", "h"],
        &["TYPE", "new"],
        &["OBJECT", "ENCODING", "new"],
        &["SET", "s", "v"],
        &["HSET", "s", "a", "1"],
        &["HSETNX", "s", "a", "1"],
        &["HGET", "s", "a"],
        &["HMGET", "s", "a"],
        &["HDEL", "s", "a"],
        &["HLEN", "s"],
        &["HGETALL", "s"],
        &["HEXISTS", "s", "a"],
        &["HSTRLEN", "s", "a"],
        &["HINCRBY", "s", "a", "1"],
        &["HRANDFIELD", "s"],
        &["HSCAN", "s", "0"],
        &["LPUSH", "new", "x"],
        &["GET", "new"],
    ]);
}

#[test]
fn counters_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["HINCRBY", "h", "n", "5"],
        &["HINCRBY", "h", "n", "-7"],
        &["HINCRBY", "h", "n", "x"],
        &["HINCRBY", "h", "n", "9223372036854775807"],
        &[
            "HSET",
            "h",
            "max",
            "9223372036854775807",
            "s",
            "abc",
            "sp",
            " 1",
        ],
        &["HINCRBY", "h", "max", "1"],
        &["HINCRBY", "h", "s", "1"],
        &["HINCRBY", "h", "sp", "1"],
        &["HINCRBYFLOAT", "h", "f", "1.5"],
        &["HINCRBYFLOAT", "h", "f", "0.1"],
        &["HINCRBYFLOAT", "h", "f", "-1e3"],
        &["HINCRBYFLOAT", "h", "n", "2"],
        &["HINCRBYFLOAT", "h", "s", "1"],
        &["HINCRBYFLOAT", "h", "f", "inf"],
        &["HINCRBYFLOAT", "h", "f", "nan"],
        &["HINCRBYFLOAT", "h", "f", "x"],
        &["HINCRBYFLOAT", "h", "max", "1.5"],
        &["HSET", "h", "i", "inf"],
        &["HINCRBYFLOAT", "h", "i", "1"],
        &["HINCRBYFLOAT", "h2", "f", "x"],
        &["EXISTS", "h2"],
        &["HINCRBY", "h3", "f", "x"],
        &["EXISTS", "h3"],
        &["HGETALL", "h"],
    ]);
}

#[test]
fn random_fields_follow_redis_rules() {
    let mut d = Differential::start();
    // Replies that do not depend on chance are compared exactly.
    d.check_both_protocols(&[
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["HRANDFIELD", "missing"],
        &["HRANDFIELD", "missing", "5"],
        &["HRANDFIELD", "missing", "-5", "WITHVALUES"],
        &["HRANDFIELD", "h", "0"],
        &["HRANDFIELD", "h", "0", "WITHVALUES"],
        &["HRANDFIELD", "h", "3"],
        &["HRANDFIELD", "h", "10", "WITHVALUES"],
        &["HRANDFIELD", "h", "x"],
        &["HRANDFIELD", "h", "1", "withvalue"],
        &["HRANDFIELD", "h", "1", "WITHVALUES", "x"],
        &["HRANDFIELD", "h", "-9223372036854775808"],
        &["HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES"],
        &["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"],
    ]);
    // Random replies: check their properties.
    d.check(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    for _ in 0..20 {
        let (node, _) = d.both(&["HRANDFIELD", "h"]);
        assert!(
            matches!(node, Frame::Bulk(ref f) if ["a", "b", "c"].contains(&&*String::from_utf8_lossy(f)))
        );
        let (node, _) = d.both(&["HRANDFIELD", "h", "2"]);
        let fields = bulks(&node);
        assert_eq!(fields.len(), 2);
        assert_ne!(fields[0], fields[1]);
        // A subset keeps the hash's order.
        assert!(fields[0] < fields[1], "{fields:?}");
        let (node, _) = d.both(&["HRANDFIELD", "h", "-7", "WITHVALUES"]);
        let flat = bulks(&node);
        assert_eq!(flat.len(), 14);
        for pair in flat.chunks(2) {
            let expected = match pair[0].as_str() {
                "a" => "1",
                "b" => "2",
                "c" => "3",
                other => panic!("unknown field {other}"),
            };
            assert_eq!(pair[1], expected);
        }
    }
    d.set_resp3(true);
    let (node, redis) = d.both(&["HRANDFIELD", "h", "-2", "WITHVALUES"]);
    for reply in [node, redis] {
        let Frame::Array(pairs) = reply else {
            panic!("not an array: {reply:?}")
        };
        assert_eq!(pairs.len(), 2);
        assert!(pairs
            .iter()
            .all(|p| matches!(p, Frame::Array(inner) if inner.len() == 2)));
    }
}

#[test]
fn hscan_matches_redis_on_small_hashes() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["HSET", "h", "a1", "1", "b1", "2", "a2", "3"],
        &["HSCAN", "h", "0"],
        &["HSCAN", "h", "0", "COUNT", "1"],
        &["HSCAN", "h", "0", "MATCH", "a*"],
        &["HSCAN", "h", "0", "MATCH", "*", "COUNT", "100"],
        &["HSCAN", "h", "0", "COUNT", "0"],
        &["HSCAN", "h", "0", "MATCH"],
        &["HSCAN", "h", "0", "TYPE", "string"],
        &["HSCAN", "h", "x"],
        &["HSCAN", "h", "-1"],
        &["HSCAN", "missing", "0"],
        &["HSCAN", "missing", "0", "COUNT", "0"],
        &["HSCAN", "missing", "x"],
    ]);
}

fn bulks(frame: &Frame) -> Vec<String> {
    match frame {
        Frame::Array(items) => items
            .iter()
            .flat_map(|item| match item {
                Frame::Array(_) => bulks(item),
                Frame::Bulk(b) => vec![String::from_utf8_lossy(b).into_owned()],
                other => panic!("unexpected {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

fn pairs_of(flat: &[String]) -> BTreeSet<(String, String)> {
    flat.chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

#[test]
fn encodings_and_thresholds_match_redis() {
    let mut d = Differential::start();
    let long = "x".repeat(65);
    d.check_all(&[
        &["CONFIG", "GET", "hash-max-listpack-entries"],
        &["CONFIG", "GET", "hash-max-ziplist-entries"],
        &["CONFIG", "GET", "hash-max-listpack-value"],
        &["CONFIG", "GET", "hash-max-ziplist-value"],
        &["HSET", "v", "f", &long],
        &["OBJECT", "ENCODING", "v"],
        &["HSET", "k", &long, "1"],
        &["OBJECT", "ENCODING", "k"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "3"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "x"],
        &["CONFIG", "SET", "hash-max-listpack-value", "-1"],
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "4",
            "hash-max-listpack-entries",
            "3",
        ],
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "4",
            "hash-max-ziplist-entries",
            "3",
        ],
        &["CONFIG", "GET", "hash-max-listpack-entries"],
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["OBJECT", "ENCODING", "h"],
        &["HGETALL", "h"],
        &["HSET", "h", "d", "4"],
        &["OBJECT", "ENCODING", "h"],
        &["HDEL", "h", "a", "b", "c"],
        &["OBJECT", "ENCODING", "h"],
        &["CONFIG", "SET", "hash-max-ziplist-value", "2"],
        &["HSET", "i", "f", "1"],
        &["HINCRBY", "i", "f", "1000"],
        &["OBJECT", "ENCODING", "i"],
        &["HSET", "j", "f", "1"],
        &["HINCRBYFLOAT", "j", "f", "0.5"],
        &["OBJECT", "ENCODING", "j"],
        &["HSETNX", "n", "abc", "1"],
        &["OBJECT", "ENCODING", "n"],
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-value",
            "64",
            "hash-max-listpack-entries",
            "512",
        ],
    ]);
}

#[test]
fn big_hashes_hold_the_same_pairs_as_redis() {
    let mut d = Differential::start();
    let mut args: Vec<String> = vec!["HSET".into(), "big".into()];
    for i in 0..600 {
        args.push(format!("field:{i}"));
        args.push(format!("value:{i}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    d.check(&refs);
    d.check(&["OBJECT", "ENCODING", "big"]);
    d.check(&["HLEN", "big"]);
    d.check(&["HGET", "big", "field:599"]);
    d.check(&["HDEL", "big", "field:0", "field:1", "field:300"]);
    d.check(&["HLEN", "big"]);
    for command in [["HGETALL", "big"], ["HKEYS", "big"], ["HVALS", "big"]] {
        let (node, redis) = d.both(&command);
        let (mut node, mut redis) = (bulks(&node), bulks(&redis));
        if command[0] == "HGETALL" {
            assert_eq!(pairs_of(&node), pairs_of(&redis));
        }
        node.sort();
        redis.sort();
        assert_eq!(node, redis, "{command:?}");
    }
    // A full HSCAN returns every pair, COUNT at a time (at least once each).
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let (node, _) = d.both(&["HSCAN", "big", &cursor, "COUNT", "50"]);
        let Frame::Array(parts) = node else { panic!() };
        let Frame::Bulk(next) = &parts[0] else {
            panic!()
        };
        let flat = bulks(&parts[1]);
        assert!(flat.len() <= 100);
        seen.extend(pairs_of(&flat));
        cursor = String::from_utf8_lossy(next).into_owned();
        calls += 1;
        assert!(calls < 100, "HSCAN does not end");
        if cursor == "0" {
            break;
        }
    }
    let (_, redis) = d.both(&["HGETALL", "big"]);
    assert_eq!(seen, pairs_of(&bulks(&redis)));
    d.set_resp3(true);
    let (node, redis) = d.both(&["HGETALL", "big"]);
    let size = |f: &Frame| match f {
        Frame::Map(m) => m.len(),
        other => panic!("not a map: {other:?}"),
    };
    assert_eq!(size(&node), size(&redis));
}
