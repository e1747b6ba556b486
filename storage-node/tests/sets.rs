//! Set commands, compared with a real redis-server. Small integer sets (intsets) reply in
//! Redis's order, so they are compared byte for byte; hashtable sets reply in dict order,
//! so those replies are compared as sets. Random commands are checked by their properties.

use slotproxy::resp::Frame;
use test_harness::Differential;

/// The members of an array/set reply, sorted.
fn sorted_members(frame: &Frame) -> Vec<Vec<u8>> {
    let items = match frame {
        Frame::Array(items) | Frame::Set(items) => items.clone(),
        other => panic!("not a collection: {other:?}"),
    };
    let mut members: Vec<Vec<u8>> = items
        .iter()
        .map(|f| f.as_bytes().expect("bulk member").to_vec())
        .collect();
    members.sort();
    members
}

/// Sends to both and compares the replies as unordered collections.
fn check_unordered(d: &mut Differential, args: &[&str]) -> Vec<Vec<u8>> {
    let (node, redis) = d.both(args);
    assert_eq!(
        std::mem::discriminant(&node),
        std::mem::discriminant(&redis),
        "{args:?}: {node:?} vs {redis:?}"
    );
    let (a, b) = (sorted_members(&node), sorted_members(&redis));
    assert_eq!(a, b, "{args:?}");
    a
}

#[test]
fn basic_commands_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SADD", "s", "3", "1", "2", "1"],
        &["SADD", "s", "2", "5"],
        &["SMEMBERS", "s"],
        &["SCARD", "s"],
        &["SCARD", "missing"],
        &["SISMEMBER", "s", "1"],
        &["SISMEMBER", "s", "9"],
        &["SISMEMBER", "missing", "9"],
        &["SMISMEMBER", "s", "1", "9", "5"],
        &["SMISMEMBER", "missing", "1"],
        &["SMEMBERS", "missing"],
        &["OBJECT", "ENCODING", "s"],
        &[
            "SADD",
            "neg",
            "-5",
            "0",
            "-9223372036854775808",
            "9223372036854775807",
        ],
        &["SMEMBERS", "neg"],
        &["OBJECT", "ENCODING", "neg"],
        &["SADD", "neg", "01"],
        &["OBJECT", "ENCODING", "neg"],
        &["SADD", "h", "a"],
        &["OBJECT", "ENCODING", "h"],
        &["SREM", "s", "1", "9"],
        &["SREM", "s", "2", "3", "5"],
        &["EXISTS", "s"],
        &["SREM", "missing", "a"],
        &["SET", "str", "x"],
        &["SADD", "str", "a"],
        &["SREM", "str", "a"],
        &["SCARD", "str"],
        &["SISMEMBER", "str", "a"],
        &["SMISMEMBER", "str", "a"],
        &["SMEMBERS", "str"],
        &["SADD", "one"],
        &["SMISMEMBER", "one"],
        &["TYPE", "neg"],
    ]);
}

#[test]
fn smove_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SADD", "a", "1", "2"],
        &["SMOVE", "a", "b", "1"],
        &["SMEMBERS", "a"],
        &["SMEMBERS", "b"],
        &["SMOVE", "a", "b", "9"],
        &["SMOVE", "a", "a", "2"],
        &["SMOVE", "a", "a", "9"],
        &["SMOVE", "missing", "b", "1"],
        &["SET", "str", "x"],
        &["SMOVE", "missing", "str", "1"],
        &["SMOVE", "a", "str", "2"],
        &["SMOVE", "str", "a", "2"],
        &["SMOVE", "a", "b", "2"],
        &["EXISTS", "a"],
        &["SMEMBERS", "b"],
        &["SADD", "c", "x"],
        &["SMOVE", "c", "b", "x"],
        &["OBJECT", "ENCODING", "b"],
        &["SCARD", "b"],
    ]);
}

#[test]
fn algebra_matches_redis_on_intsets() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SADD", "a", "1", "2", "3", "4"],
        &["SADD", "b", "3", "4", "5"],
        &["SADD", "c", "4", "6"],
        &["SINTER", "a", "b"],
        &["SINTER", "a", "b", "c"],
        &["SINTER", "a", "missing"],
        &["SINTER", "a", "a"],
        &["SUNION", "a", "b", "c"],
        &["SUNION", "a", "missing"],
        &["SUNION", "missing"],
        &["SDIFF", "a", "b"],
        &["SDIFF", "a", "b", "c"],
        &["SDIFF", "missing", "a"],
        &["SDIFF", "a", "a"],
        &["SINTERSTORE", "d", "a", "b"],
        &["SMEMBERS", "d"],
        &["SUNIONSTORE", "d", "a", "c"],
        &["SMEMBERS", "d"],
        &["SDIFFSTORE", "d", "a", "b"],
        &["SMEMBERS", "d"],
        &["SDIFFSTORE", "d", "a", "a"],
        &["EXISTS", "d"],
        &["SET", "str", "x"],
        &["EXPIRE", "a", "100"],
        &["SUNIONSTORE", "a", "a", "b"],
        &["TTL", "a"],
        &["SMEMBERS", "a"],
        &["SINTERSTORE", "str", "a", "missing"],
        &["EXISTS", "str"],
        &["SET", "str", "x"],
        &["SINTER", "str", "a"],
        &["SINTER", "missing", "str"],
        &["SINTER", "a", "str"],
        &["SUNION", "a", "str"],
        &["SDIFF", "missing", "str"],
        &["SINTERSTORE", "d", "str"],
        &["SUNIONSTORE", "d", "a", "str"],
        &["SINTERCARD", "2", "a", "b"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "1"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "0"],
        &["SINTERCARD", "2", "a", "missing"],
        &["SINTERCARD", "1", "a", "b"],
        &["SINTERCARD", "0", "a"],
        &["SINTERCARD", "-1", "a"],
        &["SINTERCARD", "x", "a"],
        &["SINTERCARD", "3", "a", "b"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "-1"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "x"],
        &["SINTERCARD", "2", "a", "b", "LIMIT"],
        &["SINTERCARD", "2", "a", "b", "FOO", "1"],
        &["SINTERCARD", "2", "a", "str"],
    ]);
}

#[test]
fn hashtable_sets_match_redis_as_sets() {
    let mut d = Differential::start();
    d.check(&["SADD", "a", "x", "y", "z", "1"]);
    d.check(&["SADD", "b", "y", "z", "w"]);
    check_unordered(&mut d, &["SMEMBERS", "a"]);
    check_unordered(&mut d, &["SINTER", "a", "b"]);
    check_unordered(&mut d, &["SUNION", "a", "b"]);
    check_unordered(&mut d, &["SDIFF", "a", "b"]);
    d.check(&["SUNIONSTORE", "u", "a", "b"]);
    check_unordered(&mut d, &["SMEMBERS", "u"]);
    d.check(&["OBJECT", "ENCODING", "u"]);
    d.check(&["SDIFFSTORE", "n", "a", "b"]);
    d.check(&["OBJECT", "ENCODING", "n"]);
    d.check(&["SINTERCARD", "2", "a", "b"]);
    // Past set-max-intset-entries an integer set becomes a hashtable.
    d.check(&["CONFIG", "SET", "set-max-intset-entries", "3"]);
    d.check(&["SADD", "big", "1", "2", "3"]);
    d.check(&["OBJECT", "ENCODING", "big"]);
    d.check(&["SADD", "big", "4"]);
    d.check(&["OBJECT", "ENCODING", "big"]);
    d.check(&["CONFIG", "GET", "set-max-intset-entries"]);
    d.check(&["CONFIG", "SET", "set-max-intset-entries", "-1"]);
    d.check(&["CONFIG", "SET", "set-max-intset-entries", "512"]);
    let args: Vec<String> = ["SADD", "many"]
        .iter()
        .map(|s| s.to_string())
        .chain((0..600).map(|i| i.to_string()))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    d.check(&args);
    d.check(&["OBJECT", "ENCODING", "many"]);
    d.check(&["SCARD", "many"]);
    check_unordered(&mut d, &["SMEMBERS", "many"]);
}

#[test]
fn sscan_matches_redis_on_intsets_and_covers_hashtables() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SADD", "s", "1", "2", "3", "10", "20"],
        &["SSCAN", "s", "0"],
        &["SSCAN", "s", "0", "MATCH", "1*"],
        &["SSCAN", "s", "0", "COUNT", "1"],
        &["SSCAN", "s", "0", "COUNT", "0"],
        &["SSCAN", "s", "0", "COUNT", "x"],
        &["SSCAN", "s", "0", "TYPE", "set"],
        &["SSCAN", "s", "0", "MATCH"],
        &["SSCAN", "s", "x"],
        &["SSCAN", "missing", "0"],
        &["SSCAN", "missing", "0", "BAD"],
        &["SET", "str", "x"],
        &["SSCAN", "str", "0"],
    ]);
    // A hashtable set: a full iteration returns every member at least once.
    let members: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", "big"];
    args.extend(members.iter().map(String::as_str));
    d.check(&args);
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    for _ in 0..10_000 {
        let reply = d
            .node_client
            .call(&["SSCAN", "big", &cursor, "COUNT", "50"]);
        let parts = reply.as_array().expect("array").to_vec();
        cursor = String::from_utf8(parts[0].as_bytes().unwrap().to_vec()).unwrap();
        for m in parts[1].as_array().unwrap() {
            seen.insert(m.as_bytes().unwrap().to_vec());
        }
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(cursor, "0");
    assert_eq!(seen.len(), 1000);
}

#[test]
fn random_commands_keep_their_properties() {
    let mut d = Differential::start();
    d.check(&["SADD", "s", "a", "b", "c", "d", "e"]);
    for args in [
        &["SRANDMEMBER", "s", "0"][..],
        &["SRANDMEMBER", "missing", "3"],
        &["SRANDMEMBER", "missing"],
        &["SRANDMEMBER", "s", "x"],
        &["SRANDMEMBER", "s", "-9223372036854775808"],
        &["SRANDMEMBER", "s", "1", "2"],
        &["SPOP", "missing"],
        &["SPOP", "missing", "2"],
        &["SPOP", "s", "-1"],
        &["SPOP", "s", "x"],
        &["SPOP", "s", "0"],
        &["SPOP", "s", "1", "2"],
        &["SET", "str", "x"],
        &["SPOP", "str"],
        &["SRANDMEMBER", "str", "2"],
    ] {
        d.check(args);
    }
    let all: Vec<Vec<u8>> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|m| m.as_bytes().to_vec())
        .collect();
    // Positive counts: distinct members; the whole set when the count is big enough.
    for count in ["1", "3", "5", "100"] {
        let members = sorted_members(&d.node_client.call(&["SRANDMEMBER", "s", count]));
        let expected = count.parse::<usize>().unwrap().min(5);
        assert_eq!(members.len(), expected);
        let mut unique = members.clone();
        unique.dedup();
        assert_eq!(unique.len(), expected);
        assert!(members.iter().all(|m| all.contains(m)));
    }
    check_unordered(&mut d, &["SRANDMEMBER", "s", "100"]);
    // Negative counts: exactly |count| members, repeats allowed.
    let members = sorted_members(&d.node_client.call(&["SRANDMEMBER", "s", "-20"]));
    assert_eq!(members.len(), 20);
    assert!(members.iter().all(|m| all.contains(m)));
    // SPOP removes what it returns.
    let popped = sorted_members(&d.node_client.call(&["SPOP", "s", "2"]));
    assert_eq!(popped.len(), 2);
    let left = sorted_members(&d.node_client.call(&["SMEMBERS", "s"]));
    assert_eq!(left.len(), 3);
    assert!(popped.iter().all(|m| !left.contains(m)));
    let one = d.node_client.call(&["SPOP", "s"]);
    assert!(all.contains(&one.as_bytes().unwrap().to_vec()));
    let rest = sorted_members(&d.node_client.call(&["SPOP", "s", "10"]));
    assert_eq!(rest.len(), 2);
    assert_eq!(d.node_client.call(&["EXISTS", "s"]), Frame::Integer(0));
    // Whole-set pops of intsets come back sorted, as in Redis.
    d.set_resp3(true);
    d.check(&["SADD", "i", "3", "1", "2"]);
    d.check(&["SPOP", "i", "3"]);
    d.check(&["SADD", "i", "3", "1", "2"]);
    d.check(&["SRANDMEMBER", "i", "3"]);
    d.check(&["SPOP", "i", "0"]);
    d.check(&["SPOP", "missing", "1"]);
}
