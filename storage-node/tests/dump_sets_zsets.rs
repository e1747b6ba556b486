//! DUMP/RESTORE of sets and sorted sets: small intsets and listpack sorted sets dump to the
//! same bytes as Redis 7.0; every encoding crosses between redis-server and storage-node in
//! both directions and reads back identically.

use slotproxy::resp::Frame;
use test_harness::Differential;

fn dump(client: &mut test_harness::RawClient, key: &str) -> Vec<u8> {
    match client.call(&["DUMP", key]) {
        Frame::Bulk(b) => b.to_vec(),
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn restore(client: &mut test_harness::RawClient, key: &str, payload: &[u8]) -> Frame {
    let args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), b"0", payload, b"REPLACE"];
    let raw = client.call_raw(&args);
    assert_eq!(
        raw,
        b"+OK\r\n",
        "RESTORE {key}: {}",
        String::from_utf8_lossy(&raw)
    );
    Frame::Simple("OK".into())
}

fn build(d: &mut Differential) {
    let long = "v".repeat(100);
    d.check(&["SADD", "intset16", "1", "2", "3", "-5"]);
    d.check(&["SADD", "intset32", "1", "70000", "-5"]);
    d.check(&["SADD", "intset64", "1", "5000000000"]);
    d.check(&["SADD", "table", "a", "b", "1"]);
    d.check(&[
        "ZADD", "lp", "1", "a", "2.5", "b", "-0", "c", "1e20", "d", "0.1", "e",
    ]);
    d.check(&[
        "ZADD",
        "lp",
        "4503599627370496",
        "g",
        "-inf",
        "h",
        "inf",
        "i",
        "3",
        &long,
    ]);
    d.check(&[
        "ZADD",
        "skip",
        "1",
        "a",
        "2.5",
        "b",
        "-0",
        "c",
        "3",
        &"x".repeat(80),
    ]);
    let mut big_set = vec!["SADD".to_string(), "bigset".to_string()];
    let mut big_zset = vec!["ZADD".to_string(), "bigzset".to_string()];
    for i in 0..1000 {
        big_set.push(format!("member-{i}"));
        big_zset.push(format!("{}", i as f64 * 0.25));
        big_zset.push(format!("member-{i}"));
    }
    for args in [big_set, big_zset] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        d.check(&args);
    }
}

#[test]
fn small_payloads_are_byte_identical() {
    let mut d = Differential::start();
    build(&mut d);
    for key in ["intset16", "intset32", "intset64", "lp"] {
        d.check(&["DUMP", key]);
    }
    // One-member hashtable sets have a single order, so they match too.
    d.check(&["SADD", "one", "word"]);
    d.check(&["DUMP", "one"]);
}

#[test]
fn payloads_cross_in_both_directions() {
    let mut d = Differential::start();
    build(&mut d);
    let keys = [
        "intset16", "intset32", "intset64", "table", "lp", "skip", "bigset", "bigzset",
    ];
    for key in keys {
        let from_node = dump(&mut d.node_client, key);
        let from_redis = dump(&mut d.redis_client, key);
        let copy = format!("{key}-copy");
        // Each server restores the other's payload.
        restore(&mut d.node_client, &copy, &from_redis);
        restore(&mut d.redis_client, &copy, &from_node);
        d.check(&["OBJECT", "ENCODING", &copy]);
        d.check(&["TYPE", &copy]);
        let (node, redis) = d.both(&["SORT", &copy, "ALPHA"]);
        if !node.is_error() {
            assert_eq!(node, redis, "{key}");
        }
        if key.starts_with("intset") || key == "lp" || key == "skip" || key == "bigzset" {
            if key.starts_with("intset") {
                d.check(&["SMEMBERS", &copy]);
            } else {
                d.check(&["ZRANGE", &copy, "0", "-1", "WITHSCORES"]);
            }
        } else {
            d.check(&["SCARD", &copy]);
            d.check(&["SINTERCARD", "2", &copy, key]);
        }
    }
    // Loaded values take the encoding the settings give.
    d.check(&["CONFIG", "SET", "zset-max-listpack-entries", "2"]);
    d.check(&["CONFIG", "SET", "set-max-intset-entries", "2"]);
    for key in ["intset16", "lp"] {
        let payload = dump(&mut d.redis_client, key);
        restore(&mut d.node_client, "refit", &payload);
        restore(&mut d.redis_client, "refit", &payload);
        d.check(&["OBJECT", "ENCODING", "refit"]);
    }
    d.check(&["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
    d.check(&["CONFIG", "SET", "set-max-intset-entries", "512"]);
    d.check(&["SADD", "small-table", "1", "2", "x"]);
    d.check(&["SREM", "small-table", "x"]);
    let payload = dump(&mut d.redis_client, "small-table");
    restore(&mut d.node_client, "back-to-intset", &payload);
    restore(&mut d.redis_client, "back-to-intset", &payload);
    d.check(&["OBJECT", "ENCODING", "back-to-intset"]);
    d.check(&["SMEMBERS", "back-to-intset"]);
}
