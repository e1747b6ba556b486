//! DUMP/RESTORE of lists and hashes: payloads byte-identical to Redis 7.0 where the
//! encoding is deterministic (small lists, listpack hashes, lists built by tail pushes),
//! and payloads that cross between redis-server and the node in both directions.

use std::collections::BTreeSet;

use slotproxy::resp::Frame;
use storage_node::persistence::crc64::crc64;
use test_harness::{Differential, RawClient};

fn bulk(frame: &Frame) -> Vec<u8> {
    frame
        .as_bytes()
        .unwrap_or_else(|| panic!("expected a bulk reply, got {frame:?}"))
        .to_vec()
}

fn call(client: &mut RawClient, args: &[&[u8]]) -> Frame {
    client.send(args);
    client.read_reply().0
}

fn sealed(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn pairs(frame: &Frame) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    let Frame::Array(items) = frame else {
        panic!("not an array: {frame:?}")
    };
    items
        .chunks(2)
        .map(|p| (bulk(&p[0]), bulk(&p[1])))
        .collect()
}

#[test]
fn small_list_and_hash_payloads_are_byte_identical() {
    let mut d = Differential::start();
    let long = "y".repeat(70);
    let mid = "z".repeat(300);
    d.check_all(&[
        &[
            "RPUSH",
            "l",
            "a",
            "1",
            "-5000",
            "300000",
            "hello",
            "9223372036854775807",
            &long,
        ],
        &["LPUSH", "l", "007", "", "-1", &mid],
        &["DUMP", "l"],
        &[
            "HSET",
            "h",
            "a",
            "1",
            "b",
            "-70000",
            "c",
            &long[..60],
            "",
            "x",
        ],
        &["DUMP", "h"],
        &["HDEL", "h", "b"],
        &["HSET", "h", "a", "changed"],
        &["DUMP", "h"],
    ]);
    // Long runs of similar elements: the listpack is LZF-compressed.
    let mut args = vec!["RPUSH".to_string(), "z".into()];
    args.extend((0..200).map(|i| format!("element-{}", i % 7)));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    d.check(&refs);
    d.check(&["DUMP", "z"]);
}

#[test]
fn lists_built_by_tail_pushes_cut_into_the_same_nodes() {
    let mut d = Differential::start();
    for (fill, count, size) in [
        ("-2", 2000, 20),
        ("-1", 500, 100),
        ("5", 23, 3),
        ("0", 4, 2),
    ] {
        d.check(&["CONFIG", "SET", "list-max-listpack-size", fill]);
        d.check(&["DEL", "big"]);
        for i in 0..count {
            let element = format!("{i:0size$}");
            d.check(&["RPUSH", "big", &element]);
        }
        d.check(&["DUMP", "big"]);
    }
    d.check(&["CONFIG", "SET", "list-max-listpack-size", "-2"]);
}

#[test]
fn big_hashes_and_lists_cross_in_both_directions() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    for client in [&mut node, &mut redis] {
        for i in 0..700 {
            let (f, v) = (format!("field:{i}"), format!("value:{}", i * 7));
            call(client, &[b"HSET", b"h", f.as_bytes(), v.as_bytes()]);
            call(client, &[b"LPUSH", b"l", v.as_bytes()]);
        }
    }
    for redis_to_node in [true, false] {
        let (from, to) = if redis_to_node {
            (&mut redis, &mut node)
        } else {
            (&mut node, &mut redis)
        };
        for key in [&b"h"[..], b"l"] {
            let payload = bulk(&call(from, &[b"DUMP", key]));
            let reply = call(to, &[b"RESTORE", b"copy", b"0", &payload, b"REPLACE"]);
            assert_eq!(reply, Frame::Simple("OK".into()));
            let encoding = call(to, &[b"OBJECT", b"ENCODING", b"copy"]);
            if key == b"h" {
                assert_eq!(encoding, Frame::bulk("hashtable"));
                let original = pairs(&call(from, &[b"HGETALL", key]));
                assert_eq!(pairs(&call(to, &[b"HGETALL", b"copy"])), original);
            } else {
                assert_eq!(encoding, Frame::bulk("quicklist"));
                let original = call(from, &[b"LRANGE", key, b"0", b"-1"]);
                assert_eq!(call(to, &[b"LRANGE", b"copy", b"0", b"-1"]), original);
            }
        }
    }
}

#[test]
fn restored_hashes_take_the_encoding_redis_gives_them() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    // A big hash shrunk to 3 fields is still a hashtable, dumped as a plain hash (type 4);
    // loading it back gives a listpack in both servers.
    for client in [&mut node, &mut redis] {
        call(
            client,
            &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"4"],
        );
        call(
            client,
            &[
                b"HSET", b"h", b"a", b"1", b"b", b"2", b"c", b"3", b"d", b"4", b"e", b"5",
            ],
        );
        call(client, &[b"HDEL", b"h", b"a", b"b"]);
    }
    for redis_to_node in [true, false] {
        let (from, to) = if redis_to_node {
            (&mut redis, &mut node)
        } else {
            (&mut node, &mut redis)
        };
        let payload = bulk(&call(from, &[b"DUMP", b"h"]));
        assert_eq!(payload[0], 4, "a hashtable is dumped as type 4");
        call(to, &[b"RESTORE", b"copy", b"0", &payload, b"REPLACE"]);
        assert_eq!(
            call(to, &[b"OBJECT", b"ENCODING", b"copy"]),
            Frame::bulk("listpack")
        );
        assert_eq!(call(to, &[b"HLEN", b"copy"]), Frame::Integer(3));
    }
    // A listpack payload with more pairs than allowed becomes a hashtable.
    for client in [&mut node, &mut redis] {
        call(
            client,
            &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"512"],
        );
        call(client, &[b"DEL", b"h"]);
        call(client, &[b"HSET", b"h", b"a", b"1", b"b", b"2", b"c", b"3"]);
    }
    let payload = bulk(&call(&mut redis, &[b"DUMP", b"h"]));
    assert_eq!(payload, bulk(&call(&mut node, &[b"DUMP", b"h"])));
    for client in [&mut node, &mut redis] {
        call(
            client,
            &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"2"],
        );
        call(client, &[b"RESTORE", b"copy", b"0", &payload, b"REPLACE"]);
        assert_eq!(
            call(client, &[b"OBJECT", b"ENCODING", b"copy"]),
            Frame::bulk("hashtable")
        );
        call(
            client,
            &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"512"],
        );
    }
}

#[test]
fn unsupported_or_corrupt_collection_payloads_are_refused_like_redis() {
    let mut d = Differential::start();
    let bodies: Vec<Vec<u8>> = vec![
        // Empty plain list and empty plain hash.
        b"\x01\x00".to_vec(),
        b"\x04\x00".to_vec(),
        // A plain list and a plain hash (accepted by Redis 7.0).
        b"\x01\x02\x01a\x01b".to_vec(),
        b"\x04\x01\x01f\x01v".to_vec(),
        // Quicklist with no nodes, and with an unknown container.
        b"\x12\x00".to_vec(),
        b"\x12\x01\x03\x01a".to_vec(),
        // Ziplist-era encodings this node does not read.
        b"\x0a\x01a".to_vec(),
        b"\x0d\x01a".to_vec(),
        b"\x09\x01a".to_vec(),
        // A hash listpack holding an empty listpack.
        b"\x10\x07\x07\x00\x00\x00\x00\x00\xff".to_vec(),
    ];
    for body in bodies {
        let payload = sealed(&body);
        d.check_bytes(&[b"RESTORE", b"k", b"0", &payload, b"REPLACE"]);
        d.check(&["TYPE", "k"]);
        d.check(&["DUMP", "k"]);
    }
    // Duplicate fields: a small plain hash loads (Redis does not look for duplicates in
    // listpacks unless sanitizing), a big one does not.
    let duplicate = sealed(b"\x04\x02\x01f\x01v\x01f\x01w");
    d.check_bytes(&[b"RESTORE", b"k", b"0", &duplicate, b"REPLACE"]);
    d.check(&["HGET", "k", "f"]);
    d.check(&["CONFIG", "SET", "hash-max-listpack-entries", "1"]);
    d.check_bytes(&[b"RESTORE", b"k", b"0", &duplicate, b"REPLACE"]);
    d.check(&["CONFIG", "SET", "hash-max-listpack-entries", "512"]);
}

#[test]
fn a_restored_list_wakes_a_blocked_client() {
    let d = Differential::start();
    for port in [d.node.port, d.redis.port] {
        let mut source = RawClient::connect(port);
        call(&mut source, &[b"RPUSH", b"src", b"x", b"y"]);
        let payload = bulk(&call(&mut source, &[b"DUMP", b"src"]));
        let mut waiter = RawClient::connect(port);
        waiter.send(&[b"BLPOP", b"dst", b"0"]);
        let mut polls = 0;
        while call(&mut source, &[b"CLIENT", b"LIST"])
            .as_bytes()
            .is_some_and(|list| !String::from_utf8_lossy(list).contains("cmd=blpop"))
        {
            polls += 1;
            assert!(polls < 10_000, "the waiter never blocked");
        }
        // Poll INFO for the blocked client before restoring.
        loop {
            let info = bulk(&call(&mut source, &[b"INFO", b"clients"]));
            if String::from_utf8_lossy(&info).contains("blocked_clients:1") {
                break;
            }
            polls += 1;
            assert!(polls < 10_000, "the waiter never blocked");
        }
        call(&mut source, &[b"RESTORE", b"dst", b"0", &payload]);
        let reply = waiter.read_reply().0;
        assert_eq!(
            reply,
            Frame::Array(vec![Frame::bulk("dst"), Frame::bulk("x")])
        );
    }
}
