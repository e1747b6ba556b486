//! Sorted set commands, compared with a real redis-server byte for byte (sorted sets have
//! a defined order, so every deterministic reply must match exactly).

use slotproxy::resp::Frame;
use test_harness::Differential;

#[test]
fn zadd_options_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["ZADD", "z", "1", "a"],
        &["ZADD", "z", "CH", "5", "a", "1", "x"],
        &["ZADD", "z", "NX", "9", "a", "9", "n"],
        &["ZADD", "z", "XX", "9", "a", "9", "never"],
        &["ZADD", "z", "XX", "CH", "8", "a", "9", "never"],
        &["ZADD", "z", "GT", "CH", "1", "a", "100", "b"],
        &["ZADD", "z", "LT", "CH", "1", "a", "100", "c"],
        &["ZADD", "z", "GT", "5", "brand-new"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZADD", "z", "INCR", "2.5", "a"],
        &["ZADD", "z", "INCR", "NX", "1", "a"],
        &["ZADD", "z", "INCR", "XX", "1", "missing"],
        &["ZADD", "z", "INCR", "GT", "-1", "a"],
        &["ZADD", "z", "INCR", "LT", "-1", "a"],
        &["ZADD", "z", "INCR", "1", "a", "2", "b"],
        &["ZADD", "z", "NX", "XX", "1", "a"],
        &["ZADD", "z", "GT", "LT", "1", "a"],
        &["ZADD", "z", "GT", "NX", "1", "a"],
        &["ZADD", "z", "LT", "NX", "1", "a"],
        &["ZADD", "z", "1"],
        &["ZADD", "z", "1", "a", "2"],
        &["ZADD", "z", "NX"],
        &["ZADD", "z", "abc", "a"],
        &["ZADD", "z", "nan", "a"],
        &["ZADD", "z", "1e400", "a"],
        &["ZADD", "z", "1", "a", "x", "b"],
        &["ZADD", "z", "inf", "top", "-inf", "bottom", "+inf", "top2"],
        &["ZADD", "z", "INCR", "-inf", "top"],
        &["ZSCORE", "z", "top"],
        &["ZINCRBY", "z", "+inf", "bottom"],
        &["ZINCRBY", "z", "1", "fresh"],
        &["ZINCRBY", "z", "0.1", "fresh"],
        &["ZINCRBY", "z", "abc", "fresh"],
        &["ZINCRBY", "missing", "3", "m"],
        &["ZADD", "xxmiss", "XX", "1", "a"],
        &["EXISTS", "xxmiss"],
        &["ZADD", "xxmiss", "XX", "INCR", "1", "a"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &[
            "ZADD",
            "z",
            "0.1",
            "p",
            "1e20",
            "q",
            "-0",
            "r",
            "3.0000000000000004",
            "s",
        ],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZSCORE", "z", "r"],
        &["SET", "str", "x"],
        &["ZADD", "str", "1", "a"],
        &["ZINCRBY", "str", "1", "a"],
        &["ZADD", "str", "NX", "XX", "1", "a"],
        &["ZADD", "str", "abc", "a"],
    ]);
}

#[test]
fn single_member_reads_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a", "2", "b", "2", "c", "-5.5", "d"],
        &["ZCARD", "z"],
        &["ZCARD", "missing"],
        &["ZSCORE", "z", "d"],
        &["ZSCORE", "z", "nope"],
        &["ZSCORE", "missing", "a"],
        &["ZMSCORE", "z", "a", "nope", "d"],
        &["ZMSCORE", "missing", "a", "b"],
        &["ZRANK", "z", "d"],
        &["ZRANK", "z", "c"],
        &["ZRANK", "z", "nope"],
        &["ZREVRANK", "z", "d"],
        &["ZREVRANK", "z", "c"],
        &["ZREVRANK", "missing", "c"],
        &["ZREM", "z", "a", "nope"],
        &["ZREM", "z", "b", "c", "d"],
        &["EXISTS", "z"],
        &["ZREM", "missing", "a"],
        &["SET", "str", "x"],
        &["ZCARD", "str"],
        &["ZSCORE", "str", "a"],
        &["ZMSCORE", "str", "a"],
        &["ZRANK", "str", "a"],
        &["ZREM", "str", "a"],
        &["TYPE", "str"],
    ]);
}

#[test]
fn encodings_follow_the_listpack_settings() {
    let mut d = Differential::start();
    let long = "x".repeat(65);
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a"],
        &["OBJECT", "ENCODING", "z"],
        &["ZADD", "z", "2", &long],
        &["OBJECT", "ENCODING", "z"],
        &["ZADD", "long", "1", &long],
        &["OBJECT", "ENCODING", "long"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "2"],
        &["ZADD", "small", "1", "a", "2", "b"],
        &["OBJECT", "ENCODING", "small"],
        &["ZADD", "small", "3", "c"],
        &["OBJECT", "ENCODING", "small"],
        &["ZREM", "small", "c"],
        &["OBJECT", "ENCODING", "small"],
        &["ZUNIONSTORE", "u", "1", "small"],
        &["OBJECT", "ENCODING", "u"],
        &["ZRANGESTORE", "r", "small", "0", "0"],
        &["OBJECT", "ENCODING", "r"],
        &["CONFIG", "SET", "zset-max-ziplist-entries", "0"],
        &["CONFIG", "GET", "zset-max-listpack-entries"],
        &["CONFIG", "GET", "zset-max-ziplist-entries"],
        &["ZADD", "none", "1", "a"],
        &["OBJECT", "ENCODING", "none"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
        &["CONFIG", "SET", "zset-max-listpack-value", "1kb"],
        &["CONFIG", "GET", "zset-max-ziplist-value"],
        &["CONFIG", "SET", "zset-max-listpack-value", "64"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "x"],
        // -0 is kept by a skiplist but written as 0 in a listpack.
        &["ZADD", "neg", "-0", "a"],
        &["ZSCORE", "neg", "a"],
        &["ZADD", "neg", "1", &long],
        &["ZADD", "neg", "-0", "b"],
        &["ZSCORE", "neg", "b"],
    ]);
}

#[test]
fn pops_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
        &["ZPOPMIN", "z"],
        &["ZPOPMAX", "z"],
        &["ZPOPMIN", "z", "1"],
        &["ZPOPMIN", "z", "0"],
        &["ZPOPMIN", "z", "-1"],
        &["ZPOPMIN", "z", "x"],
        &["ZPOPMIN", "z", "1", "2"],
        &["ZPOPMAX", "z", "10"],
        &["EXISTS", "z"],
        &["ZPOPMIN", "missing"],
        &["ZPOPMAX", "missing", "3"],
        &["ZADD", "y", "1", "a", "2", "b", "3", "c"],
        &["ZMPOP", "2", "missing", "y", "MIN"],
        &["ZMPOP", "2", "missing", "y", "MAX", "COUNT", "5"],
        &["ZMPOP", "1", "missing", "MIN"],
        &["ZMPOP", "0", "y", "MIN"],
        &["ZMPOP", "x", "y", "MIN"],
        &["ZMPOP", "1", "y"],
        &["ZMPOP", "1", "y", "LEFT"],
        &["ZMPOP", "1", "y", "MIN", "COUNT", "0"],
        &["ZMPOP", "1", "y", "MIN", "COUNT", "-1"],
        &["ZMPOP", "1", "y", "MIN", "COUNT"],
        &["ZMPOP", "1", "y", "MIN", "COUNT", "1", "COUNT", "1"],
        &["ZMPOP", "5", "y", "MIN"],
        &["SET", "str", "x"],
        &["ZPOPMIN", "str"],
        &["ZPOPMIN", "str", "0"],
        &["ZMPOP", "2", "missing", "str", "MIN"],
        &["ZADD", "y", "1", "a"],
        &["ZMPOP", "2", "y", "str", "MIN"],
        &["ZMPOP", "2", "str", "y", "MIN"],
    ]);
}

#[test]
fn algebra_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "a", "1", "x", "2", "y", "3", "z"],
        &["ZADD", "b", "10", "y", "20", "z", "30", "w"],
        &["SADD", "s", "x", "w", "q"],
        &["ZUNION", "2", "a", "b"],
        &["ZUNION", "2", "a", "b", "WITHSCORES"],
        &["ZUNION", "3", "a", "b", "s", "WITHSCORES"],
        &["ZUNION", "2", "a", "b", "WEIGHTS", "2", "0.5", "WITHSCORES"],
        &["ZUNION", "2", "a", "b", "AGGREGATE", "MIN", "WITHSCORES"],
        &["ZUNION", "2", "a", "b", "AGGREGATE", "max", "WITHSCORES"],
        &["ZUNION", "2", "a", "missing", "WITHSCORES"],
        &["ZINTER", "2", "a", "b", "WITHSCORES"],
        &["ZINTER", "3", "a", "b", "s", "WITHSCORES"],
        &["ZINTER", "2", "a", "s", "WEIGHTS", "1", "inf", "WITHSCORES"],
        &["ZINTER", "2", "a", "b", "WEIGHTS", "inf", "0", "WITHSCORES"],
        &["ZINTER", "2", "a", "missing"],
        &["ZDIFF", "2", "a", "b", "WITHSCORES"],
        &["ZDIFF", "2", "b", "s", "WITHSCORES"],
        &["ZDIFF", "1", "a"],
        &["ZDIFF", "2", "missing", "a"],
        &["ZUNIONSTORE", "d", "2", "a", "b"],
        &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        &["ZINTERSTORE", "d", "2", "a", "b", "AGGREGATE", "MAX"],
        &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        &["ZDIFFSTORE", "d", "2", "a", "b"],
        &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        &["ZINTERSTORE", "d", "2", "a", "missing"],
        &["EXISTS", "d"],
        &["ZINTERCARD", "2", "a", "b"],
        &["ZINTERCARD", "2", "a", "b", "LIMIT", "1"],
        &["ZINTERCARD", "2", "a", "b", "LIMIT", "-1"],
        &["ZINTERCARD", "0", "a"],
        &["ZINTERCARD", "3", "a", "b"],
        &["ZINTERCARD", "2", "a", "b", "WITHSCORES"],
        // Errors, in Redis's order.
        &["ZUNION", "0", "a"],
        &["ZUNION", "-1", "a"],
        &["ZUNION", "x", "a"],
        &["ZUNION", "3", "a", "b"],
        &["ZUNIONSTORE", "d", "0", "a"],
        &["ZUNION", "2", "a", "b", "WEIGHTS", "1"],
        &["ZUNION", "2", "a", "b", "WEIGHTS", "1", "x"],
        &["ZUNION", "2", "a", "b", "AGGREGATE", "AVG"],
        &["ZUNION", "2", "a", "b", "AGGREGATE"],
        &["ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"],
        &["ZDIFF", "2", "a", "b", "WEIGHTS", "1", "2"],
        &["ZDIFF", "2", "a", "b", "AGGREGATE", "SUM"],
        &["SET", "str", "x"],
        &["ZUNION", "2", "a", "str"],
        &["ZUNION", "2", "a", "str", "BADOPTION"],
        &["ZINTERSTORE", "d", "2", "str", "a"],
        &["ZUNIONSTORE", "a", "2", "a", "a"],
        &["ZRANGE", "a", "0", "-1", "WITHSCORES"],
    ]);
}

#[test]
fn zrandmember_keeps_its_properties() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["ZRANDMEMBER", "missing"],
        &["ZRANDMEMBER", "missing", "2"],
        &["ZRANDMEMBER", "z", "0"],
        &["ZRANDMEMBER", "z", "3", "WITHSCORES"],
        &["ZRANDMEMBER", "z", "10", "WITHSCORES"],
        &["ZRANDMEMBER", "z", "10"],
        &["ZRANDMEMBER", "z", "x"],
        &["ZRANDMEMBER", "z", "1", "WITHSCORE"],
        &["ZRANDMEMBER", "z", "1", "WITHSCORES", "x"],
        &["ZRANDMEMBER", "z", "-9223372036854775808"],
        &["ZRANDMEMBER", "z", "9223372036854775807", "WITHSCORES"],
        &["SET", "str", "x"],
        &["ZRANDMEMBER", "str"],
        &["ZRANDMEMBER", "str", "1"],
    ]);
    d.check(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    let member = d.node_client.call(&["ZRANDMEMBER", "z"]);
    assert!([&b"a"[..], b"b", b"c"].contains(&member.as_bytes().unwrap()));
    let Frame::Array(items) = d
        .node_client
        .call(&["ZRANDMEMBER", "z", "-7", "WITHSCORES"])
    else {
        panic!("array expected");
    };
    assert_eq!(items.len(), 14);
    let Frame::Array(items) = d.node_client.call(&["ZRANDMEMBER", "z", "2"]) else {
        panic!("array expected");
    };
    assert_eq!(items.len(), 2);
    assert_ne!(items[0], items[1]);
}

#[test]
fn zscan_matches_redis_on_listpacks_and_covers_skiplists() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a", "2.5", "b", "0.1", "c", "-inf", "d"],
        &["ZSCAN", "z", "0"],
        &["ZSCAN", "z", "0", "MATCH", "a*"],
        &["ZSCAN", "z", "0", "COUNT", "1"],
        &["ZSCAN", "z", "0", "NOPE", "1"],
        &["ZSCAN", "missing", "0"],
        &["ZSCAN", "z", "-"],
        &["SET", "str", "x"],
        &["ZSCAN", "str", "0"],
    ]);
    let mut args = vec!["ZADD".to_string(), "big".to_string()];
    for i in 0..500 {
        args.push(i.to_string());
        args.push(format!("member{i}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    d.check(&args);
    let mut seen = std::collections::HashMap::new();
    let mut cursor = "0".to_string();
    for _ in 0..10_000 {
        let reply = d.node_client.call(&["ZSCAN", "big", &cursor]);
        let parts = reply.as_array().unwrap().to_vec();
        cursor = String::from_utf8(parts[0].as_bytes().unwrap().to_vec()).unwrap();
        for pair in parts[1].as_array().unwrap().chunks(2) {
            seen.insert(pair[0].as_bytes().unwrap().to_vec(), pair[1].clone());
        }
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 500);
    assert_eq!(seen[&b"member7"[..]], Frame::bulk("7"));
}
