//! Stream consumer groups compared with a real redis-server: XGROUP, XREADGROUP, XACK,
//! XPENDING, XCLAIM, XAUTOCLAIM and XINFO GROUPS / CONSUMERS, reply by reply in RESP2 and
//! RESP3 (times within a tolerance, as each server reads its own clock), blocked group
//! readers with several clients, DUMP payloads of streams with groups in both directions,
//! and keyspace notifications. Random sequences are in `streams_groups_props.rs`.

use slotproxy::resp::Frame;
use test_harness::notifications::compare_notifications;
use test_harness::{wait_blocked, Differential, RawClient};

/// Milliseconds two servers' idle and delivery times may differ by.
const CLOCK_TOLERANCE: i64 = 2_000;

#[test]
fn group_commands_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["XGROUP", "HELP"],
        &["XGROUP", "FOO"],
        &["XGROUP", "CREATE", "s", "g", "$"],
        &["XGROUP", "CREATE", "s", "g", "bad"],
        &["XGROUP", "CREATE", "s", "g", "bad", "MKSTREAM"],
        &["XGROUP", "CREATE", "s", "g", "0", "foo"],
        &[
            "XGROUP",
            "CREATE",
            "s",
            "g",
            "0",
            "ENTRIESREAD",
            "-2",
            "MKSTREAM",
        ],
        &["XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD"],
        &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
        &["XGROUP", "CREATE", "s", "g", "0"],
        &[
            "XGROUP",
            "CREATE",
            "s",
            "g9",
            "0",
            "MKSTREAM",
            "ENTRIESREAD",
            "1",
            "MKSTREAM",
        ],
        &["XGROUP", "SETID", "nokey", "g", "5", "foo", "3"],
        &["XGROUP", "SETID", "nokey", "g", "5", "ENTRIESREAD", "-5"],
        &["XGROUP", "SETID", "nokey", "g", "5"],
        &["XGROUP", "SETID", "s", "nog", "bad"],
        &["XGROUP", "SETID", "s", "g", "bad"],
        &["XGROUP", "SETID", "s", "g", "-"],
        &["XGROUP", "SETID", "s", "g", "5", "ENTRIESREAD", "x"],
        &["XGROUP", "SETID", "s", "g", "5", "ENTRIESREAD"],
        &["XGROUP", "DESTROY", "nokey", "g"],
        &["XGROUP", "DESTROY", "s", "nog"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c"],
        &["XGROUP", "CREATECONSUMER", "s", "nog", "c"],
        &["XGROUP", "DELCONSUMER", "s", "g", "nobody"],
        &["XGROUP", "DELCONSUMER", "s", "nog", "c"],
        &["XADD", "s", "1-1", "a", "1"],
        &["XADD", "s", "2-1", "b", "2"],
        &["XADD", "s", "3-1", "c", "3"],
        &["XGROUP", "CREATE", "s", "g2", "$"],
        &["XGROUP", "CREATE", "s", "g3", "1-1", "ENTRIESREAD", "5"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XINFO", "GROUPS", "s"],
        &["XINFO", "GROUPS", "nokey"],
        &["XINFO", "CONSUMERS", "s", "nog"],
        // Reading: errors first.
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"],
        &["XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "bad"],
        &["XREADGROUP", "COUNT", "1", "STREAMS", "s", ">"],
        &["XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">"],
        &["XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"],
        &["XREAD", "NOACK", "STREAMS", "s", "0"],
        // `>` delivers, history repeats, 0-0 and the largest id.
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">",
        ],
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"],
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0-0"],
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "STREAMS",
            "s",
            "18446744073709551615-18446744073709551615",
        ],
        &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"],
        &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
        &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "BLOCK",
            "10",
            "STREAMS",
            "s",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "g2",
            "carol",
            "NOACK",
            "STREAMS",
            "s",
            ">",
        ],
        &["XADD", "s", "4-1", "d", "4"],
        &[
            "XREADGROUP",
            "GROUP",
            "g2",
            "carol",
            "NOACK",
            "STREAMS",
            "s",
            ">",
        ],
        &["XINFO", "GROUPS", "s"],
        // Deleted entries stay pending and show as null in the history.
        &["XDEL", "s", "1-1"],
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"],
        &["XPENDING", "s", "g"],
        &["XPENDING", "s", "g2"],
        &["XPENDING", "s", "nog"],
        &["XPENDING", "nokey", "g"],
        &["XPENDING", "s", "g", "-", "+"],
        &["XPENDING", "s", "g", "IDLE", "0", "-", "+"],
        &["XPENDING", "s", "g", "-", "+", "x"],
        &["XPENDING", "s", "g", "bad", "+", "10"],
        &[
            "XPENDING",
            "s",
            "g",
            "(18446744073709551615-18446744073709551615",
            "+",
            "10",
        ],
        &["XPENDING", "s", "g", "IDLE", "x", "-", "+", "10"],
        &["XPENDING", "s", "g", "IDLE", "999999", "-", "+", "10"],
        &["XPENDING", "s", "g", "-", "+", "10", "nobody"],
        &["XPENDING", "s", "g", "+", "-", "10"],
        &["XPENDING", "s", "g", "-", "+", "0"],
        &["XPENDING", "s", "g", "-", "+", "-5"],
        // Acknowledging.
        &["XACK", "s", "g", "bad"],
        &["XACK", "s", "nog", "1-1"],
        &["XACK", "nokey", "g", "1-1"],
        &["XACK", "nokey", "g", "bad"],
        &["XACK", "s", "nog", "bad"],
        &["XACK", "s", "g", "1-1", "1-1", "9-9"],
        &["XACK", "s", "g", "1-1", "bad"],
        &["XPENDING", "s", "g"],
        // Claiming: errors, then idle times that are not met.
        &["XCLAIM", "nokey", "g", "c", "0", "1-1"],
        &["XCLAIM", "s", "nog", "c", "0", "1-1"],
        &["XCLAIM", "s\0\r\nx", "nog", "c", "0", "1-1"],
        &["XCLAIM", "s", "g", "c", "x", "2-1"],
        &["XCLAIM", "s", "g", "c", "0", "2-1", "FOO"],
        &["XCLAIM", "s", "g", "c", "0", "2-1", "IDLE", "x"],
        &["XCLAIM", "s", "g", "c", "0", "2-1", "TIME", "x"],
        &["XCLAIM", "s", "g", "c", "0", "2-1", "RETRYCOUNT", "x"],
        &["XCLAIM", "s", "g", "c", "0", "2-1", "LASTID", "x"],
        &["XCLAIM", "s", "g", "newc", "3600000", "2-1"],
        &["XINFO", "GROUPS", "s"],
        &[
            "XCLAIM",
            "s",
            "g",
            "newc",
            "0",
            "2-1",
            "9-9",
            "RETRYCOUNT",
            "7",
            "JUSTID",
        ],
        &["XCLAIM", "s", "g", "newc", "0", "2-1", "3-1"],
        &["XCLAIM", "s", "g", "newc", "0", "4-1", "FORCE", "JUSTID"],
        &["XCLAIM", "s", "g", "newc", "0", "4-1", "LASTID", "10-0"],
        &["XINFO", "GROUPS", "s"],
        &["XDEL", "s", "3-1"],
        &["XCLAIM", "s", "g", "other", "0", "3-1", "4-1", "JUSTID"],
        &["XPENDING", "s", "g"],
        // XAUTOCLAIM.
        &["XAUTOCLAIM", "s", "g", "c", "x", "0"],
        &["XAUTOCLAIM", "s", "g", "c", "0", "bad"],
        &["XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"],
        &["XAUTOCLAIM", "s", "g", "c", "0", "0", "FOO"],
        &["XAUTOCLAIM", "nokey", "g", "c", "0", "0"],
        &["XAUTOCLAIM", "s", "nog", "c", "0", "0"],
        &["XAUTOCLAIM", "s", "g", "c", "3600000", "0"],
        &["XADD", "s", "5-1", "e", "5"],
        &["XADD", "s", "6-1", "f", "6"],
        &["XREADGROUP", "GROUP", "g", "dave", "STREAMS", "s", ">"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XREADGROUP", "GROUP", "g", "erin", "STREAMS", "s", ">"],
        &["XDEL", "s", "5-1"],
        &["XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1"],
        &[
            "XAUTOCLAIM",
            "s",
            "g",
            "c",
            "0",
            "(2-1",
            "COUNT",
            "1",
            "JUSTID",
        ],
        &["XAUTOCLAIM", "s", "g", "c", "0", "0"],
        &["XAUTOCLAIM", "s", "g", "c", "0", "0", "JUSTID"],
        &["XPENDING", "s", "g"],
        &["XGROUP", "DELCONSUMER", "s", "g", "c"],
        &["XPENDING", "s", "g"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XINFO", "GROUPS", "s"],
        &["XLEN", "s"],
        &["XINFO", "STREAM", "s"],
        // The key's type comes first.
        &["SET", "str", "x"],
        &["XGROUP", "CREATE", "str", "g", "0"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"],
        &["XACK", "str", "g", "bad"],
        &["XPENDING", "str", "g"],
        &["XCLAIM", "str", "g", "c", "0", "1-1"],
        &["XAUTOCLAIM", "str", "g", "c", "0", "0"],
        &["XINFO", "GROUPS", "str"],
    ]);
}

/// Times: XPENDING's idle times, XINFO CONSUMERS' and FULL's, after claims that set them.
#[test]
fn idle_and_delivery_times_match_redis_within_a_tolerance() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["FLUSHALL"],
            &["XADD", "s", "1-1", "a", "1"],
            &["XADD", "s", "2-1", "b", "2"],
            &["XADD", "s", "3-1", "c", "3"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"],
            &[
                "XCLAIM", "s", "g", "bob", "0", "1-1", "IDLE", "500000", "JUSTID",
            ],
            &[
                "XCLAIM", "s", "g", "bob", "0", "2-1", "TIME", "1000", "JUSTID",
            ],
            &[
                "XCLAIM",
                "s",
                "g",
                "bob",
                "0",
                "3-1",
                "TIME",
                "99999999999999",
                "JUSTID",
            ],
        ]);
        for command in [
            &["XPENDING", "s", "g", "-", "+", "10"][..],
            &["XPENDING", "s", "g", "IDLE", "400000", "-", "+", "10"],
            &[
                "XPENDING", "s", "g", "IDLE", "400000", "-", "+", "10", "bob",
            ],
            &["XPENDING", "s", "g", "-", "+", "10", "bob", "extra"],
            &["XINFO", "CONSUMERS", "s", "g"],
            &["XAUTOCLAIM", "s", "g", "carol", "400000", "0", "JUSTID"],
            &["XPENDING", "s", "g", "-", "+", "10"],
        ] {
            d.check_within(command, CLOCK_TOLERANCE);
        }
        // Delivery times are absolute: compare how far from now they are.
        let (node, redis) = d.both(&["XINFO", "STREAM", "s", "FULL"]);
        assert!(
            test_harness::differential::same_within(&node, &redis, CLOCK_TOLERANCE),
            "{node:?} {redis:?}"
        );
    }
}

fn read(client: &mut RawClient) -> Vec<u8> {
    client.read_reply().1
}

#[test]
fn blocked_group_readers_are_served_like_redis() {
    let d = Differential::start();
    d.on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut replies = vec![admin.call_words_raw(&["FLUSHALL"])];
        admin.call_words_raw(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        // Two readers of one group and a `$` reader: one entry goes to the first reader,
        // the second keeps waiting, the `$` reader sees it too.
        let mut first = RawClient::connect(port);
        let mut second = RawClient::connect(port);
        let mut dollar = RawClient::connect(port);
        second.call_words_raw(&["HELLO", "3"]);
        let group_read = [
            "XREADGROUP",
            "GROUP",
            "g",
            "c1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ];
        first.send_words(&group_read);
        wait_blocked(&mut admin, 1);
        second.send_words(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c2",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ]);
        wait_blocked(&mut admin, 2);
        dollar.send_words(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
        wait_blocked(&mut admin, 3);
        replies.push(admin.call_words_raw(&["XADD", "s", "1-1", "a", "1"]));
        replies.push(read(&mut first));
        replies.push(read(&mut dollar));
        wait_blocked(&mut admin, 1);
        // MULTI: an XADD undone by DEL wakes the group reader with the key's error.
        replies.push(admin.call_words_raw(&["MULTI"]));
        admin.call_words_raw(&["XADD", "s", "2-1", "b", "2"]);
        admin.call_words_raw(&["DEL", "s"]);
        replies.push(admin.call_words_raw(&["EXEC"]));
        replies.push(read(&mut second));
        // A destroyed group wakes its readers with NOGROUP.
        admin.call_words_raw(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        first.send_words(&group_read);
        wait_blocked(&mut admin, 1);
        replies.push(admin.call_words_raw(&["XGROUP", "DESTROY", "s", "g"]));
        replies.push(read(&mut first));
        // A replaced key, CLIENT UNBLOCK, a timeout, and MULTI never waiting.
        admin.call_words_raw(&["XGROUP", "CREATE", "s", "g", "$"]);
        first.send_words(&group_read);
        wait_blocked(&mut admin, 1);
        replies.push(admin.call_words_raw(&["SET", "s", "x"]));
        replies.push(read(&mut first));
        admin.call_words_raw(&["DEL", "s"]);
        admin.call_words_raw(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        let id = String::from_utf8_lossy(&first.call_words_raw(&["CLIENT", "ID"]))
            .trim_start_matches(':')
            .trim()
            .to_string();
        first.send_words(&group_read);
        wait_blocked(&mut admin, 1);
        replies.push(admin.call_words_raw(&["CLIENT", "UNBLOCK", &id, "ERROR"]));
        replies.push(read(&mut first));
        replies.push(first.call_words_raw(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c1",
            "BLOCK",
            "20",
            "STREAMS",
            "s",
            ">",
        ]));
        replies.push(first.call_words_raw(&["MULTI"]));
        first.call_words_raw(&group_read);
        replies.push(first.call_words_raw(&["EXEC"]));
        // Entries added while nobody waits, then a reader that waits for the next one.
        admin.call_words_raw(&["XADD", "s", "5-1", "e", "5"]);
        replies.push(first.call_words_raw(&group_read));
        first.send_words(&group_read);
        wait_blocked(&mut admin, 1);
        replies.push(admin.call_words_raw(&["XADD", "s", "6-1", "f", "6"]));
        replies.push(read(&mut first));
        replies.push(admin.call_words_raw(&["XPENDING", "s", "g"]));
        replies
    });
}

fn bulk(frame: Frame) -> Vec<u8> {
    match frame {
        Frame::Bulk(bytes) => bytes.to_vec(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// A stream whose groups, consumers and PEL were made by the real commands crosses DUMP
/// both ways: the node's payload is redis-server's byte for byte (delivery and seen times
/// set to fixed values with XCLAIM TIME first, on both servers alike).
#[test]
fn streams_with_groups_made_by_commands_cross_dump() {
    let mut d = Differential::start();
    d.check_all(&[
        &["XADD", "s", "1-1", "a", "1"],
        &["XADD", "s", "2-1", "b", "2"],
        &["XADD", "s", "3-1", "c", "3"],
        &["XGROUP", "CREATE", "s", "g", "0"],
        &["XGROUP", "CREATE", "s", "other", "$", "ENTRIESREAD", "3"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">",
        ],
        &[
            "XCLAIM",
            "s",
            "g",
            "bob",
            "0",
            "2-1",
            "TIME",
            "1000",
            "RETRYCOUNT",
            "4",
            "JUSTID",
        ],
        &[
            "XCLAIM", "s", "g", "alice", "0", "1-1", "TIME", "2000", "JUSTID",
        ],
        &["XDEL", "s", "2-1"],
    ]);
    let (mut node, mut redis) = d.clients();
    // Consumers' seen times differ by the servers' clocks: compare the payloads after the
    // node restores redis-server's, and the other way round.
    let from_redis = bulk(redis.call(&["DUMP", "s"]));
    let from_node = bulk(node.call(&["DUMP", "s"]));
    for (client, payload) in [(&mut node, &from_redis), (&mut redis, &from_node)] {
        let reply = client.call_raw(&[b"RESTORE", b"copy", b"0", payload]);
        assert_eq!(reply, b"+OK\r\n");
    }
    // Each server now holds the other's stream as `copy`: DUMP gives back the bytes it got.
    assert_eq!(bulk(node.call(&["DUMP", "copy"])), from_redis);
    assert_eq!(bulk(redis.call(&["DUMP", "copy"])), from_node);
    // The payloads differ only where the clocks do: the same length and structure.
    assert_eq!(from_node.len(), from_redis.len());
    d.check(&["XPENDING", "copy", "g"]);
    d.check(&["XINFO", "GROUPS", "copy"]);
    d.check_within(&["XINFO", "STREAM", "copy", "FULL"], CLOCK_TOLERANCE);
    // Restored groups go on working alike.
    d.check(&["XREADGROUP", "GROUP", "g", "carol", "STREAMS", "copy", ">"]);
    d.check(&["XACK", "copy", "g", "1-1", "2-1", "3-1"]);
    d.check(&["XPENDING", "copy", "g"]);
}

#[test]
fn group_notifications_match_redis() {
    let d = Differential::start();
    for resp3 in [false, true] {
        compare_notifications(&d, "KEA", resp3, GROUP_EVENTS);
    }
}

const GROUP_EVENTS: &[&[&str]] = &[
    &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
    &["XGROUP", "CREATE", "s", "g", "$"],
    &["XGROUP", "SETID", "s", "g", "0"],
    &["XGROUP", "CREATECONSUMER", "s", "g", "c"],
    &["XGROUP", "CREATECONSUMER", "s", "g", "c"],
    &["XADD", "s", "1-1", "a", "1"],
    &["XREADGROUP", "GROUP", "g", "new", "STREAMS", "s", ">"],
    &["XCLAIM", "s", "g", "other", "0", "1-1"],
    &["XAUTOCLAIM", "s", "g", "third", "0", "0"],
    &["XGROUP", "DELCONSUMER", "s", "g", "c"],
    &["XGROUP", "DELCONSUMER", "s", "g", "nobody"],
    &["XACK", "s", "g", "1-1"],
    &["XGROUP", "DESTROY", "s", "g"],
    &["XGROUP", "DESTROY", "s", "g"],
];
