//! Streams compared with a real redis-server: every reply byte for byte in RESP2 and RESP3
//! (ids, ranges, trims, errors, XINFO), the node layout that `~` trimming and XINFO expose,
//! DUMP payloads in both directions, blocking XREAD with several clients, and keyspace
//! notifications. Random sequences are in `streams_props.rs`.

use slotproxy::resp::Frame;
use test_harness::notifications::compare_notifications;
use test_harness::{wait_blocked, Differential, RawClient};

#[test]
fn commands_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["XADD", "s", "1-1", "a", "1", "b", "2"],
        &["XADD", "s", "1-2", "a", "3", "b", "4"],
        &["XADD", "s", "1-*", "a", "3", "c", "4"],
        &["XADD", "s", "5", "x", "y"],
        &["XADD", "s", "5", "x", "y"],
        &["XADD", "s", "0-0", "x", "y"],
        &["XADD", "s2", "0-0", "x", "y"],
        &["XADD", "s2", "0-*", "x", "y"],
        &["XADD", "s", "nomkstream", "6-1", "x"],
        &["XADD", "nos", "nomkstream", "6-1", "x", "y"],
        &["XLEN", "s"],
        &["XRANGE", "s", "-", "+"],
        &["XREVRANGE", "s", "+", "-", "COUNT", "2"],
        &["XRANGE", "s", "(1-1", "+"],
        &["XRANGE", "s", "1", "1"],
        &["XRANGE", "s", "-", "+", "COUNT", "0"],
        &[
            "XRANGE",
            "s",
            "(18446744073709551615-18446744073709551615",
            "+",
        ],
        &["XRANGE", "s", "-", "(0-0"],
        &["XRANGE", "s", "abc", "+"],
        &["XRANGE", "s", "(", "+"],
        &["XRANGE", "s", "(-", "+"],
        &["XRANGE", "nokey", "-", "+"],
        &["XRANGE", "s", "-", "+", "count"],
        &["XRANGE", "s", "-", "+", "count", "1", "foo"],
        &["XDEL", "s", "1-2", "9-9"],
        &["XDEL", "s", "bad"],
        &["XDEL", "nokey", "1-1"],
        &["XINFO", "STREAM", "s"],
        &["XINFO", "STREAM", "nokey"],
        &["XINFO", "STREAM", "s", "FULL"],
        &["XINFO", "STREAM", "s", "FULL", "COUNT", "1"],
        &["XINFO", "STREAM", "s", "FULL", "COUNT"],
        &["XINFO", "STREAM", "s", "full", "count", "-1"],
        &["XINFO", "HELP"],
        &["XINFO", "FOO"],
        &["OBJECT", "ENCODING", "s"],
        &["TYPE", "s"],
        &["XSETID", "s", "1-1"],
        &["XSETID", "s", "10-10", "ENTRIESADDED", "1"],
        &["XSETID", "s", "10-10", "ENTRIESADDED", "-1"],
        &["XSETID", "s", "10-10", "MAXDELETEDID", "11-1"],
        &[
            "XSETID",
            "s",
            "10-10",
            "MAXDELETEDID",
            "2-1",
            "ENTRIESADDED",
            "10",
        ],
        &["XSETID", "nokey", "1-1"],
        &["XSETID", "s", "10-10", "foo"],
        &["XLEN", "s"],
        &["XSETID", "s", "10-10", "ENTRIESADDED", "3"],
        &["XSETID", "s", "10-10", "ENTRIESADDED", "2"],
        // Which comes first: the key's type or the arguments.
        &["ZADD", "zz", "1", "a"],
        &["XDEL", "nokey", "bad"],
        &["XDEL", "zz", "bad"],
        &["XSETID", "zz", "bad"],
        &["XRANGE", "zz", "bad", "+"],
        &["XLEN", "zz"],
        &["XREAD", "STREAMS", "zz", "bad"],
        &["XREAD", "STREAMS", "nokey", "zz", "0", "bad"],
        &["XREAD", "STREAMS", "nokey", "zz", "0"],
        &["XADD", "zz", "bad", "a", "b"],
        &["XADD", "zz", "NOMKSTREAM", "MAXLEN", "-1", "1-1", "a", "b"],
        &["XTRIM", "nokey", "MAXLEN", "=", "-1"],
        &["XTRIM", "zz", "MINID", "=", "a"],
        &["XTRIM", "nokey", "MAXLEN", "1", "LIMIT", "1"],
        &["XINFO", "STREAM", "zz"],
        // Whole-key commands carry streams.
        &["COPY", "s", "s-copy"],
        &["DUMP", "s-copy"],
        &["RENAME", "s-copy", "s-renamed"],
        &["XRANGE", "s-renamed", "-", "+"],
        &["OBJECT", "ENCODING", "s-renamed"],
        &["SORT", "s-renamed"],
        &["LPUSH", "s-renamed", "x"],
        // Redis 7.0 lets XSETID go below the max deleted id.
        &["DEL", "q"],
        &["XADD", "q", "1-1", "a", "b"],
        &["XADD", "q", "5-1", "a", "b"],
        &["XDEL", "q", "5-1"],
        &["XSETID", "q", "3-1"],
        &["XSETID", "q", "3-1", "MAXDELETEDID", "4-1"],
        &["XSETID", "q", "3-1", "MAXDELETEDID", "2-1"],
        &["XINFO", "STREAM", "q"],
        &["XDEL", "q", "1-1"],
        &["XSETID", "q", "0-1"],
        &["XINFO", "STREAM", "q"],
        &["XINFO", "STREAM", "s"],
        &["XADD", "s", "1000-1", "a", "b"],
        &["XADD", "s", "MAXLEN", "2", "20-*", "a", "b"],
        &["XLEN", "s"],
        &["XADD", "s", "MAXLEN", "~", "1", "21-*", "a", "b"],
        &["XADD", "s", "MINID", "21", "22-*", "a", "b"],
        &["XRANGE", "s", "-", "+"],
        &["XTRIM", "s", "MAXLEN", "0"],
        &["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "10"],
        &["XTRIM", "s", "FOO", "1"],
        &["XTRIM", "s", "MAXLEN", "-1"],
        &["XTRIM", "s", "MAXLEN", "=", "0", "LIMIT", "1"],
        &["XTRIM", "s", "MAXLEN", "1", "MINID", "1"],
        &["XTRIM", "s"],
        &["XINFO", "STREAM", "s"],
        &["XREAD", "STREAMS", "s2", "0"],
        &["XREAD", "COUNT", "1", "STREAMS", "s2", "s", "0", "0"],
        &["XREAD", "STREAMS", "s2", "$"],
        &["XREAD", "STREAMS", "s2"],
        &["XREAD", "STREAMS", "s2", ">"],
        &["XREAD", "BLOCK", "-1", "STREAMS", "s2", "0"],
        &["XREAD", "BLOCK", "abc", "STREAMS", "s2", "0"],
        &["XREAD", "FOO", "STREAMS", "s2", "0"],
        &["SET", "str", "x"],
        &["XADD", "str", "*", "a", "b"],
        &["XREAD", "STREAMS", "str", "0"],
        &["XRANGE", "str", "-", "+"],
        &["XADD", "s", "1-1", "a"],
        &["XADD", "s", "99999999999999999999-1", "a", "b"],
        &[
            "XADD",
            "s",
            "18446744073709551615-18446744073709551615",
            "a",
            "b",
        ],
        &["XADD", "s", "1000-1", "a", "b"],
        &["XADD", "s", "18446744073709551615-*", "a", "b"],
    ]);
}

#[test]
fn id_edge_cases_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["XADD", "s", "0-1", "f", "v"],
        &["XADD", "s", "0-*", "f", "v"],
        &["XADD", "s", "5", "f", "v"],
        &["XADD", "s", "5-*", "f", "v"],
        &["XADD", "s", "007-1", "f", "v"],
        &["XADD", "s", "+8-1", "f", "v"],
        &["XADD", "s", " 9-1", "f", "v"],
        &["XADD", "s", "10--1", "f", "v"],
        &["XADD", "s", "10--01", "f", "v"],
        &["XADD", "s", "11-2-3", "f", "v"],
        &["XADD", "s", "-", "f", "v"],
        &["XADD", "s", "+", "f", "v"],
        &["XADD", "s", "12-", "f", "v"],
        &["XADD", "s", "-12", "f", "v"],
        &["XADD", "s", "18446744073709551616-1", "f", "v"],
        &["XADD", "s", "18446744073709551615-*", "f", "v"],
        &[
            "XADD",
            "s",
            "18446744073709551615-18446744073709551615",
            "f",
            "v",
        ],
        &["XADD", "s", "*", "f", "v"],
        &["XADD", "s", "18446744073709551615-*", "f", "v"],
        &["XRANGE", "s", "-", "+"],
        &["XRANGE", "s", "5", "5"],
        &[
            "XRANGE",
            "s",
            "(5-0",
            "(18446744073709551615-18446744073709551615",
        ],
        &[
            "XREVRANGE",
            "s",
            "(18446744073709551615",
            "(0-1",
            "COUNT",
            "2",
        ],
        &["XREVRANGE", "s", "+", "-", "COUNT", "-3"],
        &["XRANGE", "s", "(-", "+"],
        &["XRANGE", "s", "-", "(+"],
        &["XRANGE", "s", "(0-0", "+", "COUNT", "1"],
        &["XRANGE", "s", "10", "9"],
        &["XDEL", "s", "-"],
        &["XDEL", "s", "5", "5-1", "7-1"],
        &["XINFO", "STREAM", "s"],
        &[
            "XREAD",
            "STREAMS",
            "s",
            "18446744073709551615-18446744073709551615",
        ],
        &["XREAD", "STREAMS", "s", "(5"],
        &["XREAD", "COUNT", "2", "STREAMS", "s", "s", "0", "5"],
        &["XSETID", "s", "0-0"],
        &["XSETID", "s", "18446744073709551615-18446744073709551615"],
        // An empty stream is still a key.
        &["XADD", "e", "MAXLEN", "0", "1-1", "f", "v"],
        &["EXISTS", "e"],
        &["XLEN", "e"],
        &["XRANGE", "e", "-", "+"],
        &["XREVRANGE", "e", "+", "-"],
        &["XREAD", "STREAMS", "e", "0"],
        &["XINFO", "STREAM", "e"],
        &["XINFO", "STREAM", "e", "FULL"],
        &["XADD", "e", "1-1", "f", "v"],
        &["XSETID", "e", "0-5"],
        &["XADD", "e", "1-*", "f", "v"],
        &["XLEN", "e"],
        &[
            "XADD",
            "e",
            "MINID",
            "=",
            "18446744073709551615",
            "2-*",
            "f",
            "v",
        ],
        &[
            "XADD", "e", "MAXLEN", "~", "0", "LIMIT", "0", "3-*", "f", "v",
        ],
    ]);
}

/// A small deterministic generator, so the sequences repeat run to run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

fn owned(words: &[String]) -> Vec<&[u8]> {
    words.iter().map(|w| w.as_bytes()).collect()
}

/// Many entries of varied sizes and fields: nodes split by entries and by bytes as Redis's
/// do, so XINFO's radix-tree counts, `~` trims and DUMP bytes are Redis's.
fn node_layout_matches(d: &mut Differential, seed: u64) {
    let mut rng = Lcg(seed);
    d.check(&["FLUSHALL"]);
    for i in 1..900u64 {
        let mut words = vec![
            "XADD".to_string(),
            "s".into(),
            format!("{}-{}", i * 3, rng.next(4)),
        ];
        for j in 0..=rng.next(3) {
            let field = if rng.next(5) == 0 {
                format!("f{}", rng.next(100))
            } else {
                format!("f{j}")
            };
            let value = format!("{}{}", "v".repeat(rng.next(70) as usize), rng.next(100_000));
            words.push(field);
            words.push(value);
        }
        d.check_bytes(&owned(&words));
        if i % 61 == 0 {
            let a = format!("{}-0", (rng.next(i) + 1) * 3);
            let b = format!("{}-1", (rng.next(i) + 1) * 3);
            d.check(&["XDEL", "s", &a, &b]);
        }
        if i % 300 == 0 {
            d.check(&["XINFO", "STREAM", "s"]);
            d.check(&["DUMP", "s"]);
        }
    }
    let trims: &[&[&str]] = &[
        &["XTRIM", "s", "MAXLEN", "~", "700"],
        &["XTRIM", "s", "MINID", "~", "1200"],
        &["XTRIM", "s", "MINID", "1300"],
        &["XTRIM", "s", "MAXLEN", "=", "500"],
        &["XTRIM", "s", "MAXLEN", "~", "10", "LIMIT", "150"],
        &[
            "XADD",
            "s",
            "MAXLEN",
            "~",
            "100",
            "LIMIT",
            "250",
            "4000000-*",
            "a",
            "b",
        ],
        &["XADD", "s", "MINID", "~", "2500", "4000001-*", "a", "b"],
    ];
    for trim in trims {
        d.check(trim);
        d.check(&["XINFO", "STREAM", "s"]);
        d.check(&["DUMP", "s"]);
    }
    for _ in 0..40 {
        let id = format!("{}-{}", 1000 + rng.next(2700), rng.next(4));
        d.check(&["XDEL", "s", &id]);
    }
    d.check(&["XINFO", "STREAM", "s", "FULL", "COUNT", "3"]);
    d.check(&["XRANGE", "s", "-", "+", "COUNT", "7"]);
    d.check(&["XREVRANGE", "s", "+", "-", "COUNT", "7"]);
    d.check(&["DUMP", "s"]);
    d.check(&["XTRIM", "s", "MAXLEN", "0"]);
    d.check(&["XINFO", "STREAM", "s"]);
    d.check(&["DUMP", "s"]);
}

#[test]
fn node_layout_trims_and_dump_match_redis() {
    let mut d = Differential::start();
    node_layout_matches(&mut d, 7);
    // Smaller nodes, by entries and by bytes.
    for setting in [
        ["stream-node-max-entries", "7"],
        ["stream-node-max-bytes", "300"],
    ] {
        d.check(&["CONFIG", "SET", setting[0], setting[1]]);
        node_layout_matches(&mut d, 11);
    }
    d.check(&["CONFIG", "SET", "stream-node-max-entries", "0"]);
    d.check(&["CONFIG", "SET", "stream-node-max-bytes", "0"]);
    node_layout_matches(&mut d, 13);
}

fn bulk(frame: Frame) -> Vec<u8> {
    match frame {
        Frame::Bulk(bytes) => bytes.to_vec(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

#[test]
fn dump_payloads_cross_between_node_and_redis() {
    let mut d = Differential::start();
    let (mut node, mut redis) = d.clients();
    for client in [&mut node, &mut redis] {
        client.call(&["CONFIG", "SET", "stream-node-max-entries", "5"]);
    }
    d.check(&["CONFIG", "SET", "stream-node-max-entries", "5"]);
    for i in 1..40 {
        let id = format!("{i}-1");
        let value = "x".repeat(i * 3);
        d.check(&["XADD", "s", &id, "name", &value, "n", "12345"]);
        if i % 4 == 0 {
            d.check(&["XADD", "s", &format!("{i}-2"), "other", "7"]);
        }
    }
    d.check(&["XDEL", "s", "3-1", "9-1", "10-1"]);
    d.check(&["XTRIM", "s", "MINID", "2"]);
    d.check(&[
        "XSETID",
        "s",
        "90-0",
        "ENTRIESADDED",
        "500",
        "MAXDELETEDID",
        "80-0",
    ]);
    d.check(&["XADD", "empty", "MAXLEN", "0", "5-5", "a", "b"]);
    for key in ["s", "empty"] {
        let from_redis = bulk(redis.call(&["DUMP", key]));
        let from_node = bulk(node.call(&["DUMP", key]));
        assert_eq!(from_node, from_redis, "DUMP {key}");
        // Each restores the other's payload and then holds the same stream.
        let copy = format!("{key}-copy");
        let restore = |client: &mut RawClient, payload: &[u8]| {
            let reply = client.call_raw(&[b"RESTORE", copy.as_bytes(), b"0", payload]);
            assert_eq!(reply, b"+OK\r\n");
        };
        restore(&mut node, &from_redis);
        restore(&mut redis, &from_node);
        d.check(&["XINFO", "STREAM", &copy, "FULL", "COUNT", "0"]);
        d.check(&["XINFO", "STREAM", &copy]);
        d.check(&["DUMP", &copy]);
        // An explicit id: with `*` each server would take it from its own clock.
        d.check(&["XADD", &copy, "100-1", "after", "restore"]);
        d.check(&["XINFO", "STREAM", &copy]);
    }
    d.check(&["OBJECT", "ENCODING", "s-copy"]);
    d.check(&["TYPE", "s-copy"]);
}

#[test]
fn blocked_readers_are_served_like_redis() {
    let d = Differential::start();
    d.on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut replies = vec![admin.call_words_raw(&["FLUSHALL"])];
        admin.call_words_raw(&["XADD", "a", "1-1", "old", "x"]);
        // Three readers: `$` on a, an explicit id on b (missing key), both in RESP3.
        let mut dollar = RawClient::connect(port);
        let mut explicit = RawClient::connect(port);
        let mut resp3 = RawClient::connect(port);
        resp3.call_words_raw(&["HELLO", "3"]);
        dollar.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "a", "$"]);
        explicit.send_words(&[
            "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "b", "a", "0", "1-1",
        ]);
        resp3.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$"]);
        wait_blocked(&mut admin, 3);
        // A transaction that adds and then deletes wakes nobody.
        admin.call_words_raw(&["MULTI"]);
        admin.call_words_raw(&["XADD", "b", "5-1", "gone", "1"]);
        admin.call_words_raw(&["DEL", "b"]);
        replies.push(admin.call_words_raw(&["EXEC"]));
        wait_blocked(&mut admin, 3);
        // A transaction that adds twice wakes everyone once, after EXEC, with both entries.
        admin.call_words_raw(&["MULTI"]);
        admin.call_words_raw(&["XADD", "a", "2-1", "new", "1"]);
        admin.call_words_raw(&["XADD", "a", "2-2", "new", "2"]);
        replies.push(admin.call_words_raw(&["EXEC"]));
        replies.push(dollar.read_reply().1);
        replies.push(explicit.read_reply().1);
        replies.push(resp3.read_reply().1);
        // A timeout answers a null array; MULTI never waits.
        replies.push(dollar.call_words_raw(&["XREAD", "BLOCK", "1", "STREAMS", "a", "$"]));
        dollar.call_words_raw(&["MULTI"]);
        dollar.call_words_raw(&["XREAD", "BLOCK", "0", "STREAMS", "a", "$"]);
        replies.push(dollar.call_words_raw(&["EXEC"]));
        // A reader woken by a key turned into another type keeps waiting.
        explicit.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "c", "$"]);
        wait_blocked(&mut admin, 1);
        admin.call_words_raw(&["SET", "c", "string"]);
        admin.call_words_raw(&["DEL", "c"]);
        admin.call_words_raw(&["XADD", "c", "9-9", "k", "v"]);
        replies.push(explicit.read_reply().1);
        // Two streams fed in one transaction: a reader of both is served for the first
        // signalled one alone.
        dollar.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "a", "c", "$", "$"]);
        wait_blocked(&mut admin, 1);
        admin.call_words_raw(&["MULTI"]);
        admin.call_words_raw(&["XADD", "c", "10-1", "k", "v"]);
        admin.call_words_raw(&["XADD", "a", "10-1", "k", "v"]);
        admin.call_words_raw(&["EXEC"]);
        replies.push(dollar.read_reply().1);
        // An entry added and deleted again: the last id moved, so the reader is served,
        // with no entries, as Redis does.
        resp3.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "c", "$"]);
        wait_blocked(&mut admin, 1);
        admin.call_words_raw(&["MULTI"]);
        admin.call_words_raw(&["XADD", "c", "11-1", "k", "v"]);
        admin.call_words_raw(&["XDEL", "c", "11-1"]);
        admin.call_words_raw(&["EXEC"]);
        replies.push(resp3.read_reply().1);
        // A woken reader is not disturbed by another of its keys turning into another type.
        explicit.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "c", "str", "$", "0"]);
        wait_blocked(&mut admin, 1);
        admin.call_words_raw(&["SET", "str", "x"]);
        admin.call_words_raw(&["XADD", "c", "12-1", "k", "v"]);
        replies.push(explicit.read_reply().1);
        // CLIENT UNBLOCK ends a wait as a timeout would, or with an error.
        let id = String::from_utf8(dollar.call_words_raw(&["CLIENT", "ID"])[1..].to_vec()).unwrap();
        let id = id.trim_end().to_string();
        for how in ["TIMEOUT", "ERROR"] {
            dollar.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "quiet", "$"]);
            wait_blocked(&mut admin, 1);
            replies.push(admin.call_words_raw(&["CLIENT", "UNBLOCK", &id, how]));
            replies.push(dollar.read_reply().1);
        }
        replies
    });
}

#[test]
fn notifications_match_redis() {
    let d = Differential::start();
    for resp3 in [false, true] {
        compare_notifications(
            &d,
            "KEA",
            resp3,
            &[
                &["XADD", "s", "1-1", "a", "b"],
                &["XADD", "s", "NOMKSTREAM", "2-1", "a", "b"],
                &["XADD", "none", "NOMKSTREAM", "2-1", "a", "b"],
                &["XADD", "s", "MAXLEN", "1", "3-1", "a", "b"],
                &["XADD", "s", "MAXLEN", "5", "4-1", "a", "b"],
                &["XDEL", "s", "4-1"],
                &["XDEL", "s", "4-1"],
                &["XTRIM", "s", "MAXLEN", "0"],
                &["XTRIM", "s", "MAXLEN", "0"],
                &["XSETID", "s", "10-1"],
                &["XADD", "s", "10-1", "a", "b"],
            ],
        );
    }
}

#[test]
fn scripts_and_transactions_never_wait() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["XADD", "s", "1-1", "f", "v"],
        &[
            "EVAL",
            "return redis.call('xread','block','0','streams','s','$')",
            "0",
        ],
        &["EVAL", "return redis.call('xread','streams','s','0')", "0"],
        &[
            "EVAL",
            "return redis.call('xread','count','1','streams','s','$')",
            "0",
        ],
        &["MULTI"],
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "0"],
        &["EXEC"],
    ]);
}

/// Groups with consumers and pending entries, made on redis-server (the node has no group
/// commands yet), DUMPed and restored on both: the same bytes back, and the same XINFO STREAM
/// (FULL shows every group, PEL and consumer, times included, as they travel in the payload).
#[test]
fn streams_with_consumer_groups_cross_dump_intact() {
    let mut d = Differential::start();
    let (mut node, mut redis) = d.clients();
    for i in 1..30 {
        let id = format!("{i}-1");
        d.check(&["XADD", "s", &id, "f", &i.to_string()]);
    }
    let setup: &[&[&str]] = &[
        &["XGROUP", "CREATE", "s", "g1", "0"],
        &["XGROUP", "CREATE", "s", "g2", "$"],
        &["XGROUP", "CREATE", "s", "g3", "5-1", "ENTRIESREAD", "3"],
        &["XGROUP", "CREATE", "s", "", "0"],
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "4",
            "STREAMS",
            "s",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "bob",
            "COUNT",
            "3",
            "STREAMS",
            "s",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ],
        &["XACK", "s", "g1", "2-1"],
        &["XGROUP", "CREATECONSUMER", "s", "g2", "idle"],
        &["XREADGROUP", "GROUP", "g3", "carol", "STREAMS", "s", ">"],
        &["XDEL", "s", "20-1"],
    ];
    for command in setup {
        redis.call(command);
    }
    let payload = bulk(redis.call(&["DUMP", "s"]));
    for client in [&mut node, &mut redis] {
        let reply = client.call_raw(&[b"RESTORE", b"copy", b"0", &payload]);
        assert_eq!(reply, b"+OK\r\n");
    }
    let from_node = bulk(node.call(&["DUMP", "copy"]));
    assert_eq!(from_node, payload, "the node's DUMP of the restored stream");
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["XINFO", "STREAM", "copy"]);
        d.check(&["XINFO", "STREAM", "copy", "FULL"]);
        d.check(&["XINFO", "STREAM", "copy", "FULL", "COUNT", "2"]);
        d.check(&["XINFO", "STREAM", "copy", "FULL", "COUNT", "0"]);
    }
    d.set_resp3(false);
    // Adding, deleting and trimming leave the groups alone, as in Redis 7.0.
    d.check(&["XADD", "copy", "50-1", "f", "v"]);
    d.check(&["XDEL", "copy", "3-1"]);
    d.check(&["XTRIM", "copy", "MAXLEN", "10"]);
    d.check(&["XINFO", "STREAM", "copy", "FULL"]);
    d.check(&["DUMP", "copy"]);
}

/// A payload with a correct footer (RDB version 10) around `body`.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&10u16.to_le_bytes());
    let crc = storage_node::persistence::crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Every byte of a stream payload (nodes, metadata, groups) altered in turn, with a valid
/// checksum so the node must read it: RESTORE answers OK or an error, a stream it accepts
/// can be read, added to and trimmed without a panic, and the node lives on.
#[test]
fn corrupt_stream_payloads_are_refused_not_fatal() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    redis.call(&["CONFIG", "SET", "stream-node-max-entries", "4"]);
    for i in 1..12 {
        let id = format!("{i}-1");
        let field = if i % 3 == 0 { "other" } else { "f" };
        redis.call(&["XADD", "s", &id, field, &"v".repeat(i), "n", &i.to_string()]);
    }
    redis.call(&["XDEL", "s", "2-1", "6-1"]);
    redis.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    redis.call(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c1",
        "COUNT",
        "3",
        "STREAMS",
        "s",
        ">",
    ]);
    redis.call(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c2",
        "COUNT",
        "2",
        "STREAMS",
        "s",
        ">",
    ]);
    let payload = bulk(redis.call(&["DUMP", "s"]));
    let body = &payload[..payload.len() - 10];
    let mut accepted = 0;
    for position in 1..body.len() {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut altered = body.to_vec();
            altered[position] ^= flip;
            let reply = node.call_raw(&[b"RESTORE", b"x", b"0", &sealed(&altered), b"REPLACE"]);
            assert!(
                reply == b"+OK\r\n"
                    || (reply.starts_with(b"-") && !reply.starts_with(b"-ERR internal error")),
                "byte {position} ^ {flip:#x}: {}",
                String::from_utf8_lossy(&reply)
            );
            if reply == b"+OK\r\n" {
                accepted += 1;
                for read in [
                    &["XRANGE", "x", "-", "+"][..],
                    &["XREVRANGE", "x", "+", "-"],
                    &["XINFO", "STREAM", "x", "FULL"],
                    &["XADD", "x", "*", "a", "b"],
                    &["XTRIM", "x", "MAXLEN", "2"],
                    &["DUMP", "x"],
                ] {
                    let args: Vec<&[u8]> = read.iter().map(|a| a.as_bytes()).collect();
                    let reply = node.call_raw(&args);
                    assert!(
                        !reply.starts_with(b"-ERR internal error"),
                        "byte {position} ^ {flip:#x}: {read:?} panicked in the node"
                    );
                }
            }
        }
    }
    assert_eq!(node.call(&["PING"]), Frame::Simple("PONG".into()));
    // Flipped values (not structure) load; the count shows both paths ran.
    assert!(accepted > 0);
}
