//! MOVE and COPY between databases for every type (with DB and REPLACE), and SMOVE's
//! notifications, compared byte for byte with a real redis-server.

use test_harness::notifications::compare_notifications;
use test_harness::Differential;

/// One key of each type, with a fixed absolute expiry on some so EXPIRETIME compares.
const FILL: &[&[&str]] = &[
    &["SET", "str", "v", "EXAT", "4000000000"],
    &["RPUSH", "list", "a", "b", "c"],
    &["HSET", "hash", "f1", "1", "f2", "2"],
    &["SADD", "ints", "1", "2", "3"],
    &["SADD", "set", "x", "y"],
    &["ZADD", "zset", "1", "a", "2", "b"],
    &["PEXPIREAT", "zset", "4000000000000"],
];

const KEYS: &[&str] = &["str", "list", "hash", "ints", "set", "zset"];

/// Reads a key's type, encoding, expiry and contents.
fn inspect(key: &str) -> Vec<Vec<&str>> {
    let read: Vec<&str> = match key {
        "str" => vec!["GET", key],
        "list" => vec!["LRANGE", key, "0", "-1"],
        "hash" => vec!["HGETALL", key],
        "ints" | "set" => vec!["SORT", key, "ALPHA"],
        _ => vec!["ZRANGE", key, "0", "-1", "WITHSCORES"],
    };
    vec![
        vec!["TYPE", key],
        vec!["OBJECT", "ENCODING", key],
        vec!["EXPIRETIME", key],
        read,
    ]
}

fn check(d: &mut Differential, commands: Vec<Vec<&str>>) {
    for command in commands {
        d.check(&command);
    }
}

#[test]
fn move_carries_every_type_to_another_database() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["FLUSHALL"]);
        d.check_all(FILL);
        for key in KEYS {
            check(&mut d, vec![vec!["MOVE", key, "3"], vec!["EXISTS", key]]);
            check(&mut d, vec![vec!["SELECT", "3"]]);
            check(&mut d, inspect(key));
            // Back again onto an existing key: refused.
            check(&mut d, vec![vec!["MOVE", key, "0"], vec!["SELECT", "0"]]);
            check(
                &mut d,
                vec![vec!["SET", key, "occupied"], vec!["SELECT", "3"]],
            );
            check(
                &mut d,
                vec![
                    vec!["MOVE", key, "0"],
                    vec!["EXISTS", key],
                    vec!["SELECT", "0"],
                ],
            );
        }
        d.check_all(&[
            &["MOVE", "missing", "1"],
            &["MOVE", "str", "0"],
            &["MOVE", "str", "16"],
            &["MOVE", "str", "x"],
        ]);
    }
}

#[test]
fn copy_duplicates_every_type_with_db_and_replace() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["FLUSHALL"]);
        d.check_all(FILL);
        for key in KEYS {
            let copy = format!("{key}-copy");
            check(
                &mut d,
                vec![
                    vec!["COPY", key, &copy],
                    vec!["COPY", key, &copy],
                    vec!["COPY", key, key, "DB", "5"],
                    vec!["COPY", key, key, "DB", "5"],
                    vec!["COPY", key, "str", "REPLACE"],
                    vec!["COPY", key, key, "DB", "5", "REPLACE"],
                ],
            );
            check(&mut d, inspect(&copy));
            check(&mut d, inspect("str"));
            check(&mut d, vec![vec!["SELECT", "5"]]);
            check(&mut d, inspect(key));
            // The copy is independent of its source.
            check(&mut d, vec![vec!["DEL", key], vec!["SELECT", "0"]]);
            check(&mut d, inspect(key));
            // Put the string back for the next type's REPLACE.
            check(&mut d, vec![vec!["SET", "str", "v", "EXAT", "4000000000"]]);
        }
        d.check_all(&[
            &["COPY", "missing", "x"],
            &["COPY", "list", "list"],
            &["COPY", "list", "list", "DB", "0"],
            &["COPY", "list", "x", "DB", "99"],
            &["COPY", "list", "x", "REPLACE", "EXTRA"],
        ]);
    }
}

#[test]
fn smove_notifies_an_addition_only_when_the_member_is_new() {
    let d = Differential::start();
    for resp3 in [false, true] {
        compare_notifications(
            &d,
            "KEA",
            resp3,
            &[
                &["SADD", "{s}src", "a", "b", "c"],
                &["SADD", "{s}dst", "b"],
                // Already in the destination: removed from the source only.
                &["SMOVE", "{s}src", "{s}dst", "b"],
                &["SMOVE", "{s}src", "{s}dst", "a"],
                &["SMOVE", "{s}src", "{s}dst", "missing"],
                &["SMOVE", "{s}src", "{s}src", "c"],
                // The last member: the source goes, the destination is created.
                &["SMOVE", "{s}src", "{s}new", "c"],
                &["SMEMBERS", "{s}new"],
            ],
        );
    }
}
