//! Keyspace notifications of the collection commands (lists, hashes, sets, sorted sets,
//! SORT ... STORE) compared byte for byte with a real redis-server: event names, which
//! commands publish nothing, the `del` of a collection that becomes empty, the order of
//! events of commands touching two keys, and blocking pops served by a push.

use test_harness::notifications::{
    compare_notifications, messages_until_sentinel, show, subscribe,
};
use test_harness::{wait_blocked, Differential, RawClient};

/// Runs a command list with several flag sets, in RESP2 and RESP3.
fn compare_with_flag_sets(commands: &[&[&str]]) {
    let d = Differential::start();
    compare_notifications(&d, "KEA", false, commands);
    compare_notifications(&d, "KEAn", true, commands);
    compare_notifications(&d, "Kg", false, commands);
    compare_notifications(&d, "Elshz", false, commands);
}

const LISTS: &[&[&str]] = &[
    &["LPUSH", "l", "a", "b", "c"],
    &["RPUSH", "l", "d", "e"],
    &["LPUSHX", "l", "x"],
    &["RPUSHX", "l", "y"],
    &["LPUSHX", "nolist", "x"],
    &["RPUSHX", "nolist", "x"],
    &["LINSERT", "l", "BEFORE", "a", "z"],
    &["LINSERT", "l", "AFTER", "a", "z2"],
    &["LINSERT", "l", "AFTER", "nosuch", "z"],
    &["LINSERT", "nolist", "AFTER", "a", "z"],
    &["LSET", "l", "0", "first"],
    &["LSET", "l", "100", "x"],
    &["LREM", "l", "0", "z"],
    &["LREM", "l", "0", "nosuch"],
    &["LTRIM", "l", "0", "-1"],
    &["LTRIM", "l", "1", "-2"],
    &["LTRIM", "nolist", "0", "1"],
    &["LPOP", "l"],
    &["RPOP", "l"],
    &["LPOP", "l", "0"],
    &["RPOP", "l", "2"],
    &["LPOP", "nolist"],
    &["LPOP", "nolist", "2"],
    &["LPOP", "l", "100"],
    &["RPUSH", "l", "a", "b"],
    &["RPOP", "l", "5"],
    &["RPUSH", "l", "only"],
    &["LPOP", "l"],
    &["RPUSH", "l", "a", "b", "c"],
    &["LTRIM", "l", "5", "10"],
    &["RPUSH", "l", "a", "a", "b"],
    &["LREM", "l", "0", "a"],
    &["LREM", "l", "1", "b"],
    &["RPUSH", "src", "1", "2", "3"],
    &["LMOVE", "src", "dst", "LEFT", "RIGHT"],
    &["LMOVE", "src", "dst", "RIGHT", "LEFT"],
    &["LMOVE", "src", "src", "LEFT", "RIGHT"],
    &["RPOPLPUSH", "src", "dst"],
    &["RPOPLPUSH", "src", "dst"],
    &["LMOVE", "nolist", "dst", "LEFT", "LEFT"],
    &["LMPOP", "2", "nolist", "dst", "LEFT"],
    &["LMPOP", "2", "nolist", "dst", "RIGHT", "COUNT", "10"],
    &["LMPOP", "1", "nolist", "LEFT"],
    &["RPUSH", "one", "x"],
    &["RPOPLPUSH", "one", "one"],
    &["LMOVE", "one", "one", "LEFT", "RIGHT"],
    &["BLPOP", "nolist", "one", "0"],
    &["RPUSH", "b", "1", "2", "3"],
    &["BRPOP", "b", "0"],
    &["BLMOVE", "b", "c", "LEFT", "LEFT", "0"],
    &["BRPOPLPUSH", "b", "c", "0"],
    &["BLMPOP", "0", "1", "c", "RIGHT", "COUNT", "5"],
    &["SET", "str", "v"],
    &["LPUSH", "str", "x"],
    &["LPOP", "str"],
];

const HASHES: &[&[&str]] = &[
    &["HSET", "h", "a", "1", "b", "2"],
    &["HSET", "h", "a", "1"],
    &["HMSET", "h", "c", "3"],
    &["HSETNX", "h", "a", "9"],
    &["HSETNX", "h", "d", "4"],
    &["HSETNX", "h2", "d", "4"],
    &["HINCRBY", "h", "a", "5"],
    &["HINCRBY", "h", "new", "1"],
    &["HINCRBY", "h", "b", "x"],
    &["HINCRBYFLOAT", "h", "a", "1.5"],
    &["HINCRBYFLOAT", "h", "f", "2"],
    &["HINCRBYFLOAT", "nohash", "f", "2"],
    &["HDEL", "h", "nosuch"],
    &["HDEL", "h", "a", "b", "nosuch"],
    &["HDEL", "nohash", "a"],
    &["HDEL", "h2", "d"],
    &["HDEL", "h", "c", "d", "new", "f"],
    &["SET", "str", "v"],
    &["HSET", "str", "a", "1"],
];

const SETS: &[&[&str]] = &[
    &["SADD", "s", "a", "b", "c", "d"],
    &["SADD", "s", "a"],
    &["SADD", "s", "a", "e"],
    &["SREM", "s", "nosuch"],
    &["SREM", "s", "e"],
    &["SREM", "nokey", "e"],
    &["SPOP", "nokey"],
    &["SPOP", "nokey", "2"],
    &["SPOP", "s", "0"],
    &["SPOP", "s"],
    &["SPOP", "s", "1"],
    &["SPOP", "s", "1"],
    &["DEL", "s"],
    &["SADD", "s", "a", "b", "c", "d", "e", "f"],
    &["SPOP", "s", "2"],
    &["SPOP", "s", "100"],
    &["SADD", "s", "x"],
    &["SPOP", "s", "1"],
    &["SADD", "s", "x"],
    &["SPOP", "s"],
    &["SADD", "src", "1", "2"],
    &["SMOVE", "src", "dst", "1"],
    &["SMOVE", "src", "dst", "nosuch"],
    &["SMOVE", "src", "src", "2"],
    &["SMOVE", "src", "dst", "2"],
    &["SMOVE", "nokey", "dst", "2"],
    &["SADD", "dst", "3"],
    &["SADD", "src", "1"],
    &["SMOVE", "src", "dst", "1"],
    &["SADD", "a", "1", "2", "3"],
    &["SADD", "b", "2", "3", "4"],
    &["SINTERSTORE", "i", "a", "b"],
    &["SUNIONSTORE", "u", "a", "b"],
    &["SDIFFSTORE", "df", "a", "b"],
    &["SINTERSTORE", "i", "a", "nokey"],
    &["SINTERSTORE", "i", "a", "nokey"],
    &["SUNIONSTORE", "u", "nokey"],
    &["SUNIONSTORE", "u", "nokey"],
    &["SDIFFSTORE", "df", "a", "a"],
    &["SDIFFSTORE", "df", "a", "a"],
    &["SINTERSTORE", "a", "a", "b"],
    &["SET", "str", "v"],
    &["SADD", "str", "x"],
    &["SINTERSTORE", "str", "a"],
];

const ZSETS: &[&[&str]] = &[
    &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    &["ZADD", "z", "1", "a"],
    &["ZADD", "z", "5", "a"],
    &["ZADD", "z", "NX", "9", "a"],
    &["ZADD", "z", "XX", "9", "new"],
    &["ZADD", "z", "GT", "1", "a"],
    &["ZADD", "z", "CH", "6", "a"],
    &["ZADD", "z", "INCR", "1", "a"],
    &["ZADD", "z", "NX", "INCR", "1", "a"],
    &["ZADD", "z", "INCR", "1", "d"],
    &["ZADD", "nozset", "XX", "1", "a"],
    &["ZINCRBY", "z", "2", "b"],
    &["ZINCRBY", "z", "2", "e"],
    &["ZINCRBY", "z2", "2", "e"],
    &["ZREM", "z", "nosuch"],
    &["ZREM", "z", "e", "nosuch"],
    &["ZREM", "nozset", "e"],
    &["ZREM", "z2", "e"],
    &["ZADD", "z", "10", "f", "11", "g", "12", "h", "13", "i"],
    &["ZREMRANGEBYRANK", "z", "0", "0"],
    &["ZREMRANGEBYRANK", "z", "100", "200"],
    &["ZREMRANGEBYSCORE", "z", "10", "11"],
    &["ZREMRANGEBYSCORE", "z", "100", "200"],
    &["ZREMRANGEBYLEX", "z", "[h", "[h"],
    &["ZREMRANGEBYLEX", "z", "[x", "[y"],
    &["ZREMRANGEBYRANK", "nozset", "0", "1"],
    &["ZREMRANGEBYSCORE", "z", "-inf", "+inf"],
    &["ZADD", "z", "0", "a", "0", "b", "0", "c"],
    &["ZREMRANGEBYLEX", "z", "-", "+"],
    &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
    &["ZREMRANGEBYRANK", "z", "0", "-1"],
    &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
    &["ZPOPMIN", "z"],
    &["ZPOPMAX", "z"],
    &["ZPOPMIN", "z", "0"],
    &["ZPOPMIN", "nozset"],
    &["ZPOPMAX", "z", "10"],
    &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    &["BZPOPMIN", "nozset", "z", "0"],
    &["BZPOPMAX", "z", "0"],
    &["BZPOPMAX", "z", "0"],
    &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    &["ZMPOP", "2", "nozset", "z", "MIN"],
    &["ZMPOP", "1", "z", "MAX", "COUNT", "10"],
    &["ZMPOP", "1", "z", "MAX"],
    &["ZADD", "z", "1", "a", "2", "b"],
    &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "1"],
    &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "10"],
    &["ZADD", "x", "1", "a", "2", "b", "3", "c"],
    &["ZADD", "y", "1", "b", "2", "c", "3", "d"],
    &["ZUNIONSTORE", "u", "2", "x", "y"],
    &["ZINTERSTORE", "i", "2", "x", "y"],
    &["ZDIFFSTORE", "df", "2", "x", "y"],
    &["ZINTERSTORE", "i", "2", "x", "nozset"],
    &["ZINTERSTORE", "i", "2", "x", "nozset"],
    &["ZUNIONSTORE", "u", "1", "nozset"],
    &["ZDIFFSTORE", "df", "2", "x", "x"],
    &["ZDIFFSTORE", "df", "2", "x", "x"],
    &["ZUNIONSTORE", "x", "2", "x", "y"],
    &["ZRANGESTORE", "r", "x", "0", "1"],
    &["ZRANGESTORE", "r", "x", "5", "10"],
    &["ZRANGESTORE", "r", "x", "5", "10"],
    &["ZRANGESTORE", "r", "nozset", "0", "-1"],
    &["ZRANGESTORE", "r", "x", "(1", "+inf", "BYSCORE"],
    &["SET", "str", "v"],
    &["ZADD", "str", "1", "x"],
    &["ZUNIONSTORE", "str", "1", "x"],
];

const SORTS: &[&[&str]] = &[
    &["RPUSH", "l", "3", "1", "2"],
    &["SORT", "l", "STORE", "out"],
    &["SORT", "nolist", "STORE", "out"],
    &["SORT", "nolist", "STORE", "out"],
    &["SADD", "s", "b", "a"],
    &["SORT", "s", "ALPHA", "STORE", "out"],
];

#[test]
fn list_commands_publish_what_redis_publishes() {
    compare_with_flag_sets(LISTS);
}

#[test]
fn hash_commands_publish_what_redis_publishes() {
    compare_with_flag_sets(HASHES);
}

#[test]
fn set_commands_publish_what_redis_publishes() {
    compare_with_flag_sets(SETS);
}

#[test]
fn sorted_set_commands_publish_what_redis_publishes() {
    compare_with_flag_sets(ZSETS);
}

#[test]
fn sort_store_publishes_what_redis_publishes() {
    compare_with_flag_sets(SORTS);
}

fn call(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    show(&client.call_raw(&args))
}

/// A blocking command waits, a push serves it: the reply and every event (the push's,
/// the pop's, the `del` of the emptied source, the move's push) in order.
fn served_by_push(port: u16, blocking: &[&str], push: &[&[&str]]) -> Vec<String> {
    let mut admin = RawClient::connect(port);
    let mut waiter = RawClient::connect(port);
    let mut subscriber = RawClient::connect(port);
    call(&mut admin, &["FLUSHALL"]);
    call(
        &mut admin,
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
    );
    subscribe(&mut subscriber);
    let args: Vec<&[u8]> = blocking.iter().map(|a| a.as_bytes()).collect();
    waiter.send(&args);
    wait_blocked(&mut admin, 1);
    let mut transcript = Vec::new();
    for command in push {
        transcript.push(call(&mut admin, command));
    }
    transcript.push(show(&waiter.read_reply().1));
    wait_blocked(&mut admin, 0);
    call(&mut admin, &["PUBLISH", "__sentinel__", "end"]);
    transcript.extend(messages_until_sentinel(&mut subscriber));
    call(&mut admin, &["CONFIG", "SET", "notify-keyspace-events", ""]);
    transcript
}

#[test]
fn blocking_pops_served_by_a_push_publish_what_redis_publishes() {
    let d = Differential::start();
    let scenarios: &[(&[&str], &[&[&str]])] = &[
        (&["BLPOP", "q", "0"], &[&["RPUSH", "q", "a"]]),
        (&["BRPOP", "q", "0"], &[&["LPUSH", "q", "a", "b"]]),
        (
            &["BLMPOP", "0", "1", "q", "LEFT", "COUNT", "5"],
            &[&["RPUSH", "q", "a", "b"]],
        ),
        (
            &["BLMOVE", "q", "d", "LEFT", "RIGHT", "0"],
            &[&["RPUSH", "q", "a"]],
        ),
        (&["BRPOPLPUSH", "q", "d", "0"], &[&["RPUSH", "q", "a", "b"]]),
        (
            &["BLMOVE", "q", "q", "LEFT", "RIGHT", "0"],
            &[&["RPUSH", "q", "a"]],
        ),
        (&["BZPOPMIN", "z", "0"], &[&["ZADD", "z", "1", "a"]]),
        (
            &["BZPOPMAX", "z", "0"],
            &[&["ZADD", "z", "1", "a", "2", "b"]],
        ),
        (
            &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"],
            &[&["ZADD", "z", "1", "a"]],
        ),
        (&["BZPOPMIN", "z", "0"], &[&["ZINCRBY", "z", "1", "a"]]),
        (
            &["BZPOPMIN", "z", "0"],
            &[
                &["ZUNIONSTORE", "z", "1", "nozset"],
                &["ZADD", "other", "1", "a"],
                &["ZUNIONSTORE", "z", "1", "other"],
            ],
        ),
        (
            &["BLPOP", "q", "0"],
            &[&["RPUSH", "src", "a"], &["RPOPLPUSH", "src", "q"]],
        ),
        (
            &["BLPOP", "q", "0"],
            &[
                &["MULTI"],
                &["RPUSH", "q", "a"],
                &["LPOP", "q"],
                &["RPUSH", "q", "b"],
                &["EXEC"],
            ],
        ),
    ];
    for (blocking, push) in scenarios {
        let node = served_by_push(d.node.port, blocking, push);
        let redis = served_by_push(d.redis.port, blocking, push);
        assert_eq!(node, redis, "{blocking:?} served by {push:?}");
    }
}
