//! Generic keyspace commands (DEL UNLINK EXISTS TOUCH TYPE RENAME RENAMENX COPY MOVE SWAPDB
//! KEYS RANDOMKEY SCAN errors), compared with a real redis-server in RESP2 and RESP3, plus a
//! proptest of random command sequences.

use proptest::prelude::*;
use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient, ServerProcess};

/// The elements of a KEYS reply, sorted (servers list keys in their own hash order).
fn sorted(frame: &Frame) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = frame
        .as_array()
        .unwrap_or_else(|| panic!("expected an array, got {frame:?}"))
        .iter()
        .map(|k| k.as_bytes().expect("bulk key").to_vec())
        .collect();
    keys.sort();
    keys
}

/// Sends KEYS to both servers and compares the replies as sets.
fn check_keys(d: &mut Differential, pattern: &str) {
    let (node, redis) = d.both(&["KEYS", pattern]);
    assert_eq!(sorted(&node), sorted(&redis), "KEYS {pattern:?}");
}

#[test]
fn del_unlink_exists_touch_type_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SELECT", "0"],
        &["SET", "a", "1"],
        &["SET", "b", "2"],
        &["SET", "c", "3"],
        &["EXISTS", "a"],
        &["EXISTS", "a", "a", "b", "nope"],
        &["TOUCH", "a", "a", "nope", "c"],
        &["TYPE", "a"],
        &["TYPE", "nope"],
        &["DEL", "a", "a", "nope"],
        &["EXISTS", "a"],
        &["UNLINK", "b", "c", "d"],
        &["DEL", "b"],
        &["DBSIZE"],
        &["DEL"],
        &["UNLINK"],
        &["EXISTS"],
        &["TOUCH"],
        &["TYPE"],
        &["TYPE", "a", "b"],
        &["SET", "", "empty"],
        &["TYPE", ""],
        &["DEL", ""],
    ]);
}

#[test]
fn rename_and_renamenx_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SELECT", "0"],
        &["RENAME", "nope", "x"],
        &["RENAMENX", "nope", "x"],
        &["RENAME", "nope", "nope"],
        &["RENAMENX", "nope", "nope"],
        &["SET", "a", "1"],
        &["RENAME", "a", "a"],
        &["RENAMENX", "a", "a"],
        &["RENAME", "a", "b"],
        &["EXISTS", "a"],
        &["GET", "b"],
        &["SET", "c", "3"],
        &["RENAMENX", "b", "c"],
        &["GET", "b"],
        &["RENAME", "b", "c"],
        &["GET", "c"],
        &["EXISTS", "b"],
        // The TTL travels with the value and replaces the target's.
        &["PEXPIREAT", "c", "99999999999999"],
        &["SET", "d", "4"],
        &["RENAME", "c", "d"],
        &["PEXPIRETIME", "d"],
        &["SET", "e", "5"],
        &["PEXPIREAT", "e", "88888888888888"],
        &["SET", "f", "6"],
        &["RENAME", "f", "e"],
        &["PEXPIRETIME", "e"],
        &["RENAMENX", "e", "{tag}e"],
        &["GET", "{tag}e"],
        &["RENAME", "a"],
        &["RENAME", "a", "b", "c"],
    ]);
}

#[test]
fn copy_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SELECT", "0"],
        &["COPY", "nope", "x"],
        &["COPY", "nope", "nope"],
        &["SET", "a", "1"],
        &["COPY", "a", "a"],
        &["COPY", "a", "a", "DB", "0"],
        &["COPY", "a", "b"],
        &["GET", "b"],
        &["SET", "b", "other"],
        &["COPY", "a", "b"],
        &["GET", "b"],
        &["COPY", "a", "b", "REPLACE"],
        &["GET", "b"],
        &["COPY", "a", "a", "DB", "1"],
        &["COPY", "a", "a", "DB", "1"],
        &["COPY", "a", "a", "db", "1", "replace"],
        &["COPY", "a", "x", "DB", "16"],
        &["COPY", "a", "x", "DB", "-1"],
        &["COPY", "a", "x", "DB", "abc"],
        &["COPY", "a", "x", "DB", "4294967296"],
        &["COPY", "a", "x", "DB"],
        &["COPY", "a", "x", "REPLACE", "FOO"],
        &["COPY", "a", "x", "DB", "1", "DB", "2"],
        &["COPY", "a"],
        // TTLs are copied.
        &["PEXPIREAT", "a", "77777777777777"],
        &["COPY", "a", "ttl"],
        &["PEXPIRETIME", "ttl"],
        &["COPY", "a", "ttl2", "DB", "3"],
        &["SELECT", "3"],
        &["PEXPIRETIME", "ttl2"],
        &["GET", "ttl2"],
        &["SELECT", "2"],
        &["GET", "x"],
        &["SELECT", "1"],
        &["GET", "a"],
        &["SELECT", "0"],
        // The copy is independent of the original.
        &["DEL", "a"],
        &["GET", "b"],
    ]);
}

#[test]
fn move_and_swapdb_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SELECT", "0"],
        &["MOVE", "nope", "1"],
        &["MOVE", "nope", "0"],
        &["SET", "a", "1"],
        &["MOVE", "a", "0"],
        &["MOVE", "a", "16"],
        &["MOVE", "a", "-1"],
        &["MOVE", "a", "abc"],
        &["MOVE", "a", "4294967296"],
        &["PEXPIREAT", "a", "66666666666666"],
        &["MOVE", "a", "1"],
        &["EXISTS", "a"],
        &["SET", "a", "again"],
        &["MOVE", "a", "1"],
        &["GET", "a"],
        &["SELECT", "1"],
        &["GET", "a"],
        &["PEXPIRETIME", "a"],
        &["SELECT", "0"],
        &["SWAPDB", "0", "1"],
        &["GET", "a"],
        &["PEXPIRETIME", "a"],
        &["DBSIZE"],
        &["SWAPDB", "0", "0"],
        &["SWAPDB", "a", "1"],
        &["SWAPDB", "1", "a"],
        &["SWAPDB", "4294967296", "1"],
        &["SWAPDB", "1", "-4294967296"],
        &["SWAPDB", "-1", "0"],
        &["SWAPDB", "0", "16"],
        &["SWAPDB", "0"],
        &["SWAPDB", "2", "0"],
        &["DBSIZE"],
        &["SELECT", "2"],
        &["GET", "a"],
        &["SELECT", "0"],
    ]);
}

#[test]
fn keys_matches_redis_as_a_set() {
    let mut d = Differential::start();
    for key in [
        "hello",
        "hallo",
        "hxllo",
        "hllo",
        "heeeello",
        "a*b",
        "a?b",
        "a[b",
        "x\\y",
        "",
        "UPPER",
        "upper",
        "{t}1",
        "{t}2",
        "user:1:name",
        "user:2:name",
        "user:10:mail",
    ] {
        d.check(&["SET", key, "v"]);
    }
    for pattern in [
        "*",
        "**",
        "h?llo",
        "h*llo",
        "h[ae]llo",
        "h[^e]llo",
        "h[a-b]llo",
        "h[b-a]llo",
        "a\\*b",
        "a\\?b",
        "a[[]b",
        "a\\[b",
        "x\\\\y",
        "user:*:name",
        "user:?:*",
        "user:[0-9]*",
        "UPP*",
        "upp*",
        "{t}*",
        "",
        "nomatch",
        "[",
        "[^",
        "[a-",
        "\\",
        "*\\",
    ] {
        check_keys(&mut d, pattern);
    }
    d.check(&["KEYS"]);
    d.check(&["KEYS", "a", "b"]);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["KEYS", "user:1:*"]);
        d.check(&["KEYS", "nomatch"]);
    }
}

#[test]
fn randomkey_matches_redis_where_deterministic() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["RANDOMKEY"],
        &["SET", "only", "1"],
        &["RANDOMKEY"],
        &["RANDOMKEY", "x"],
        &["DEL", "only"],
        &["RANDOMKEY"],
    ]);
}

#[test]
fn randomkey_returns_only_existing_keys() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    for i in 0..50 {
        c.call(&["SET", &format!("k{i}"), "v"]);
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..300 {
        let key = c.call(&["RANDOMKEY"]);
        let key = key.as_bytes().expect("a key").to_vec();
        assert!(key.starts_with(b"k"));
        seen.insert(key);
    }
    // Not uniform, but it must not keep answering the same few keys.
    assert!(seen.len() > 20, "only {} distinct keys", seen.len());
}

#[test]
fn randomkey_ends_when_every_key_has_expired() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    for i in 0..200 {
        let key = format!("k{i}");
        c.call(&["SET", &key, "v"]);
        c.call(&["PEXPIRE", &key, "1"]);
    }
    // Each call answers (the client times out if the server loops); the expired keys it
    // draws are removed, so it soon says null.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match c.call(&["RANDOMKEY"]) {
            Frame::Null => break,
            Frame::Bulk(_) => {}
            other => panic!("unexpected {other:?}"),
        }
        assert!(std::time::Instant::now() < deadline, "keys never expired");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn scan_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SCAN"],
        &["SCAN", "x"],
        &["SCAN", " 0"],
        &["SCAN", "0 "],
        &["SCAN", "0x10"],
        &["SCAN", "-"],
        &["SCAN", "18446744073709551616"],
        &["SCAN", "0", "COUNT", "0"],
        &["SCAN", "0", "COUNT", "-1"],
        &["SCAN", "0", "COUNT", "x"],
        &["SCAN", "0", "COUNT", "99999999999999999999"],
        &["SCAN", "0", "COUNT"],
        &["SCAN", "0", "MATCH"],
        &["SCAN", "0", "TYPE"],
        &["SCAN", "0", "FOO", "bar"],
        &["SCAN", "0", "COUNT", "x", "FOO"],
        &["SCAN", "x", "FOO"],
        // On an empty database every valid cursor ends at once.
        &["SCAN", "0"],
        &["SCAN", ""],
        &["SCAN", "+0"],
        &["SCAN", "-1"],
        &["SCAN", "18446744073709551615"],
        &["SCAN", "0", "MATCH", "*", "COUNT", "5", "TYPE", "string"],
        // One key is returned whole on the first call by both servers.
        &["SET", "k", "v"],
        &["SCAN", "0"],
        &["SCAN", "0", "TYPE", "STRING"],
        &["SCAN", "0", "TYPE", "list"],
        &["SCAN", "0", "MATCH", "k*"],
        &["SCAN", "0", "MATCH", "x*"],
        &["SCAN", "0", "COUNT", "9223372036854775807"],
        &["SCAN", "0", "count", "1000", "match", "k", "type", "string"],
    ]);
}

/// One command of the proptest, over a small alphabet so keys collide often.
fn command() -> impl Strategy<Value = Vec<String>> {
    let key = prop::sample::select(vec!["a", "b", "c", "{a}x"]);
    let db = prop::sample::select(vec!["0", "1", "2"]);
    let far = prop::sample::select(vec!["99999999999", "88888888888", "77777777777"]);
    prop_oneof![
        (key.clone(), "[0-9]{1,3}").prop_map(|(k, v)| vec!["SET".into(), k.into(), v]),
        key.clone().prop_map(|k| vec!["GET".into(), k.into()]),
        (key.clone(), key.clone()).prop_map(|(a, b)| vec!["DEL".into(), a.into(), b.into()]),
        key.clone().prop_map(|k| vec!["UNLINK".into(), k.into()]),
        (key.clone(), key.clone()).prop_map(|(a, b)| vec!["EXISTS".into(), a.into(), b.into()]),
        key.clone().prop_map(|k| vec!["TOUCH".into(), k.into()]),
        key.clone().prop_map(|k| vec!["TYPE".into(), k.into()]),
        (key.clone(), key.clone()).prop_map(|(a, b)| vec!["RENAME".into(), a.into(), b.into()]),
        (key.clone(), key.clone()).prop_map(|(a, b)| vec!["RENAMENX".into(), a.into(), b.into()]),
        (key.clone(), key.clone(), db.clone(), any::<bool>()).prop_map(|(a, b, db, replace)| {
            let mut c = vec!["COPY".into(), a.into(), b.into(), "DB".into(), db.into()];
            if replace {
                c.push("REPLACE".into());
            }
            c
        }),
        (key.clone(), db.clone()).prop_map(|(k, db)| vec!["MOVE".into(), k.into(), db.into()]),
        db.clone().prop_map(|db| vec!["SELECT".into(), db.into()]),
        (db.clone(), db).prop_map(|(a, b)| vec!["SWAPDB".into(), a.into(), b.into()]),
        (
            key.clone(),
            far,
            prop::sample::select(vec!["", "NX", "XX", "GT", "LT"])
        )
            .prop_map(|(k, t, flag)| {
                let mut c = vec!["PEXPIREAT".into(), k.into(), t.into()];
                if !flag.is_empty() {
                    c.push(flag.into());
                }
                c
            }),
        (key.clone(), prop::sample::select(vec!["-1", "0", "1000"])).prop_map(|(k, t)| vec![
            "EXPIRE".into(),
            k.into(),
            t.into()
        ]),
        key.clone()
            .prop_map(|k| vec!["PEXPIRETIME".into(), k.into()]),
        key.clone().prop_map(|k| vec!["TTL".into(), k.into()]),
        key.prop_map(|k| vec!["PERSIST".into(), k.into()]),
        Just(vec!["DBSIZE".into()]),
    ]
}

#[test]
fn random_keyspace_sequences_match_redis() {
    // The runner wants a `Fn`; the server pair is shared through a RefCell.
    let d = std::cell::RefCell::new(Differential::start());
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    let sequences = prop::collection::vec(command(), 1..40);
    let result = runner.run(&sequences, |commands| {
        let mut d = d.borrow_mut();
        d.check(&["SELECT", "0"]);
        d.check(&["FLUSHALL"]);
        for c in &commands {
            let words: Vec<&str> = c.iter().map(String::as_str).collect();
            d.check(&words);
        }
        check_keys(&mut d, "*");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
