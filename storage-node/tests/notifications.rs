//! Keyspace notifications compared with a real redis-server: the `notify-keyspace-events`
//! setting (flag letters, validation, normalized form), and the exact messages every
//! implemented write command publishes, in RESP2 and RESP3.

use test_harness::notifications::{
    compare_notifications, messages_until_sentinel, show, subscribe,
};
use test_harness::{Differential, RawClient};

const WRITES: &[&[&str]] = &[
    &["SET", "a", "1"],
    &["SET", "a", "2", "EX", "100"],
    &["SET", "a", "3", "KEEPTTL"],
    &["PERSIST", "a"],
    &["PERSIST", "a"],
    &["EXPIRE", "a", "100"],
    &["EXPIRE", "a", "100", "NX"],
    &["PEXPIREAT", "a", "1"],
    &["SET", "b", "1", "NX"],
    &["SETNX", "b", "2"],
    &["SET", "b", "x", "GET"],
    &["SET", "missing", "x", "XX"],
    &["MSET", "b", "1", "c", "2"],
    &["MSETNX", "d", "1", "e", "2"],
    &["MSETNX", "d", "1", "f", "2"],
    &["GETSET", "d", "5"],
    &["GETDEL", "d"],
    &["GETDEL", "d"],
    &["GETEX", "e", "EX", "100"],
    &["GETEX", "e", "PERSIST"],
    &["GETEX", "e"],
    &["GETEX", "e", "PXAT", "1"],
    &["SETEX", "s", "100", "v"],
    &["PSETEX", "s", "100000", "v"],
    &["APPEND", "f", "x"],
    &["APPEND", "f", "y"],
    &["SETRANGE", "f", "0", "z"],
    &["SETRANGE", "f", "0", ""],
    &["SETRANGE", "g", "0", ""],
    &["INCR", "n"],
    &["INCRBY", "n", "5"],
    &["DECR", "n"],
    &["DECRBY", "n", "2"],
    &["INCRBYFLOAT", "n", "1.5"],
    &["INCR", "f"],
    &["SETBIT", "bits", "3", "1"],
    &["SETBIT", "bits", "3", "1"],
    &["SETBIT", "bits", "3", "0"],
    &["BITOP", "AND", "dst", "bits", "bits"],
    &["BITOP", "AND", "dst", "nosuch"],
    &["BITOP", "AND", "dst", "nosuch"],
    &["BITFIELD", "bf", "SET", "u8", "0", "1"],
    &["BITFIELD", "bf", "SET", "u8", "0", "1"],
    &["BITFIELD", "bf", "GET", "u8", "0"],
    &["SET", "a", "1"],
    &["SET", "b", "2"],
    &["RENAME", "a", "z"],
    &["RENAME", "z", "z"],
    &["RENAMENX", "z", "b"],
    &["RENAME", "z", "b"],
    &["RENAMENX", "b", "fresh"],
    &["COPY", "b", "cp"],
    &["COPY", "b", "cp"],
    &["COPY", "b", "cp", "REPLACE"],
    &["COPY", "b", "cp", "DB", "2"],
    &["MOVE", "cp", "1"],
    &["MOVE", "b", "2"],
    &["SWAPDB", "0", "1"],
    &["SWAPDB", "0", "1"],
    &["DEL", "fresh", "cp", "nothing"],
    &["UNLINK", "c", "s"],
    &["SET", "r", "v"],
    &["FLUSHDB"],
    &["FLUSHALL"],
];

#[test]
fn write_commands_publish_what_redis_publishes() {
    let d = Differential::start();
    compare_notifications(&d, "KEA", false, WRITES);
    compare_notifications(&d, "KEAn", true, WRITES);
    compare_notifications(&d, "Kg", false, WRITES);
    compare_notifications(&d, "E$", true, WRITES);
    compare_notifications(&d, "A", false, WRITES);
    compare_notifications(&d, "Kn", false, WRITES);
}

#[test]
fn restore_publishes_restore() {
    let d = Differential::start();
    restore_raw(&d);
}

/// RESTORE with a binary payload: the same notifications on both servers.
fn restore_raw(d: &Differential) {
    let (mut node, mut redis) = d.clients();
    let (mut node_sub, mut redis_sub) = d.clients();
    node.call(&["SET", "src", "value"]);
    let payload = node
        .call(&["DUMP", "src"])
        .as_bytes()
        .unwrap_or_default()
        .to_vec();
    let mut events = Vec::new();
    for (client, subscriber) in [(&mut node, &mut node_sub), (&mut redis, &mut redis_sub)] {
        client.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        subscribe(subscriber);
        let mut seen = Vec::new();
        for command in [
            &[&b"RESTORE"[..], b"r", b"0", &payload][..],
            &[b"RESTORE", b"r", b"0", &payload, b"REPLACE"],
            &[b"RESTORE", b"r", b"1", &payload, b"REPLACE", b"ABSTTL"],
        ] {
            seen.push(show(&client.call_raw(command)));
            client.call(&["PUBLISH", "__sentinel__", "end"]);
            seen.extend(messages_until_sentinel(subscriber));
        }
        client.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
        events.push(seen);
    }
    assert_eq!(events[0], events[1]);
}

/// Waits (bounded) until `probe` is gone on a server.
fn wait_until_gone(client: &mut RawClient, probe: &str) {
    for _ in 0..2000 {
        if client.call(&["PTTL", probe]).as_integer() == Some(-2) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    panic!("{probe} never expired");
}

#[test]
fn lazy_and_active_expiry_publish_expired() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    let (mut node_sub, mut redis_sub) = d.clients();
    let mut events = Vec::new();
    for (client, subscriber) in [(&mut node, &mut node_sub), (&mut redis, &mut redis_sub)] {
        client.call(&["CONFIG", "SET", "notify-keyspace-events", "KEx"]);
        subscribe(subscriber);
        // Lazy: the key is found expired by a write that then creates it again.
        client.call(&["SET", "lazy", "1", "PX", "20"]);
        client.call(&["SET", "probe", "1", "PX", "20"]);
        wait_until_gone(client, "probe");
        client.call(&["SET", "lazy", "2"]);
        client.call(&["PUBLISH", "__sentinel__", "end"]);
        let mut seen = messages_until_sentinel(subscriber);
        // Active: nobody touches the key; the expiry cycle removes it.
        client.call(&["SET", "active", "1", "PX", "20"]);
        for _ in 0..2000 {
            if client.call(&["DBSIZE"]).as_integer() == Some(1) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        client.call(&["PUBLISH", "__sentinel__", "end"]);
        seen.extend(messages_until_sentinel(subscriber));
        client.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
        events.push(seen);
    }
    assert_eq!(events[0], events[1]);
}

#[test]
fn notify_setting_is_validated_and_normalized_as_redis() {
    let mut d = Differential::start();
    for flags in [
        "KEA", "An", "AnKE", "Kx", "x", "", "KEAm", "K$gn", "Q", "gg", "AE", "Kd", "KEt", "KEl",
        "Ks", "Kh", "Kz", "Ke", "Km", "KA$",
    ] {
        d.check(&["CONFIG", "SET", "notify-keyspace-events", flags]);
        d.check(&["CONFIG", "GET", "notify-keyspace-events"]);
    }
    d.check(&["CONFIG", "SET", "notify-keyspace-events", ""]);
}

#[test]
fn notifications_can_be_enabled_at_startup() {
    let flags = ["--notify-keyspace-events", "KE$"];
    let mut d = Differential::start_with(&flags, &flags);
    d.check(&["CONFIG", "GET", "notify-keyspace-events"]);
    compare_notifications_without_config(&d);
}

/// Checks events with the startup setting left alone.
fn compare_notifications_without_config(d: &Differential) {
    let (mut node, mut redis) = d.clients();
    let (mut node_sub, mut redis_sub) = d.clients();
    let mut events = Vec::new();
    for (client, subscriber) in [(&mut node, &mut node_sub), (&mut redis, &mut redis_sub)] {
        subscribe(subscriber);
        client.call(&["SET", "k", "v"]);
        client.call(&["DEL", "k"]);
        client.call(&["PUBLISH", "__sentinel__", "end"]);
        events.push(messages_until_sentinel(subscriber));
    }
    assert_eq!(events[0], events[1]);
}

#[test]
fn output_buffer_limit_setting_matches_redis() {
    let mut d = Differential::start();
    for value in [
        "pubsub 1mb 512kb 10",
        "pubsub 1mb 512kb",
        "foo 1mb 512kb 1",
        "pubsub x 512kb 1",
        "pubsub 1 2 -1",
        "replica 1 2 3 master 1 1 1",
        "replica 1 2 3",
        "",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
    ] {
        d.check(&["CONFIG", "SET", "client-output-buffer-limit", value]);
        d.check(&["CONFIG", "GET", "client-output-buffer-limit"]);
    }
}
