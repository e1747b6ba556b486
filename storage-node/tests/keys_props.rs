//! Properties of SCAN (its cursors and order are the node's own, so it is checked by what it
//! guarantees rather than byte equality) and of glob matching (KEYS compared with Redis for
//! random patterns).

use std::collections::HashSet;

use proptest::prelude::*;
use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient, ServerProcess};

/// One SCAN call: the next cursor and the keys.
fn scan_page(c: &mut RawClient, cursor: &str, options: &[&str]) -> (String, Vec<Vec<u8>>) {
    let mut args = vec!["SCAN", cursor];
    args.extend_from_slice(options);
    let reply = c.call(&args);
    let parts = reply
        .as_array()
        .unwrap_or_else(|| panic!("SCAN answered {reply:?}"));
    assert_eq!(parts.len(), 2);
    let cursor = String::from_utf8(parts[0].as_bytes().expect("cursor").to_vec()).expect("utf8");
    let keys = parts[1]
        .as_array()
        .expect("key array")
        .iter()
        .map(|k| k.as_bytes().expect("bulk key").to_vec())
        .collect();
    (cursor, keys)
}

/// A whole iteration; `between` runs after each call. Returns all keys and the page sizes.
fn full_scan(
    c: &mut RawClient,
    options: &[&str],
    mut between: impl FnMut(usize),
) -> (Vec<Vec<u8>>, Vec<usize>) {
    let mut cursor = "0".to_string();
    let (mut keys, mut sizes) = (Vec::new(), Vec::new());
    for call in 0..100_000 {
        let (next, page) = scan_page(c, &cursor, options);
        sizes.push(page.len());
        keys.extend(page);
        if next == "0" {
            return (keys, sizes);
        }
        cursor = next;
        between(call);
    }
    panic!("SCAN never returned cursor 0");
}

fn fill(c: &mut RawClient, keys: impl IntoIterator<Item = String>) {
    for key in keys {
        c.call(&["SET", &key, "v"]);
    }
}

fn set(keys: &[Vec<u8>]) -> HashSet<Vec<u8>> {
    keys.iter().cloned().collect()
}

#[test]
fn full_scan_returns_every_key_once_when_nothing_changes() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    let expected: HashSet<Vec<u8>> = (0..2000)
        .map(|i| format!("key:{i}"))
        .chain((0..1500).map(|i| format!("{{hot}}:{i}")))
        .map(String::into_bytes)
        .collect();
    fill(
        &mut c,
        expected
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned()),
    );
    for count in ["1", "10", "100", "100000"] {
        let (keys, _) = full_scan(&mut c, &["COUNT", count], |_| {});
        assert_eq!(
            keys.len(),
            expected.len(),
            "COUNT {count}: duplicates or misses"
        );
        assert_eq!(set(&keys), expected, "COUNT {count}");
    }
}

#[test]
fn keys_present_throughout_are_returned_despite_changes() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    let mut writer = RawClient::connect(node.port);
    let stable: Vec<String> = (0..1000)
        .map(|i| format!("stable:{i}"))
        .chain((0..500).map(|i| format!("{{hot}}stable:{i}")))
        .collect();
    fill(&mut c, stable.iter().cloned());
    fill(&mut c, (0..1000).map(|i| format!("doomed:{i}")));
    let (keys, _) = full_scan(&mut c, &["COUNT", "20"], |call| {
        // Between calls another client adds keys (growing tables) and removes others.
        for j in 0..30 {
            let n = call * 30 + j;
            writer.call(&["SET", &format!("new:{n}"), "v"]);
            writer.call(&["SET", &format!("{{hot}}new:{n}"), "v"]);
            writer.call(&["DEL", &format!("doomed:{n}")]);
        }
    });
    let seen = set(&keys);
    for key in &stable {
        assert!(seen.contains(key.as_bytes()), "{key} was never returned");
    }
}

#[test]
fn count_is_respected_approximately() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    fill(&mut c, (0..3000).map(|i| format!("k{i}")));
    for (count, limit) in [(10usize, 40usize), (100, 200)] {
        let count_text = count.to_string();
        let (keys, sizes) = full_scan(&mut c, &["COUNT", &count_text], |_| {});
        assert_eq!(keys.len(), 3000);
        let largest = sizes.iter().copied().max().unwrap_or(0);
        assert!(largest <= limit, "COUNT {count}: a page of {largest}");
        assert!(
            sizes.len() >= 3000 / limit,
            "COUNT {count}: only {} calls",
            sizes.len()
        );
    }
    // Default COUNT is 10.
    let (_, first) = scan_page(&mut c, "0", &[]);
    assert!((1..=40).contains(&first.len()), "{} keys", first.len());
}

#[test]
fn match_and_type_filter_like_redis() {
    let mut d = Differential::start();
    let keys: Vec<String> = (0..300)
        .map(|i| format!("user:{i}:name"))
        .chain((0..300).map(|i| format!("item:{i}")))
        .chain(["a*b".to_string(), "".to_string()])
        .collect();
    for key in &keys {
        d.check(&["SET", key, "v"]);
    }
    let (mut node, _) = d.clients();
    for pattern in [
        "user:*",
        "user:1?:*",
        "item:[0-4]*",
        "a\\*b",
        "*",
        "nothing*",
        "*:1*",
    ] {
        let (found, _) = full_scan(&mut node, &["MATCH", pattern, "COUNT", "7"], |_| {});
        let (expected, _) = d.both(&["KEYS", pattern]);
        let expected: HashSet<Vec<u8>> = expected
            .as_array()
            .expect("array")
            .iter()
            .map(|k| k.as_bytes().expect("bulk").to_vec())
            .collect();
        assert_eq!(found.len(), expected.len(), "MATCH {pattern}");
        assert_eq!(set(&found), expected, "MATCH {pattern}");
    }
    for (type_name, expected) in [("string", keys.len()), ("STRING", keys.len()), ("list", 0)] {
        let (found, _) = full_scan(&mut node, &["TYPE", type_name], |_| {});
        assert_eq!(found.len(), expected, "TYPE {type_name}");
    }
    let (found, _) = full_scan(&mut node, &["MATCH", "item:1*", "TYPE", "string"], |_| {});
    assert_eq!(found.len(), 111);
}

#[test]
fn scan_reply_shape_in_both_protocols() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    c.call(&["SET", "k", "v"]);
    for proto in ["2", "3"] {
        c.call(&["HELLO", proto]);
        let raw = c.call_raw(&[b"SCAN", b"0", b"COUNT", b"1000"]);
        assert_eq!(raw, b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n");
    }
}

#[test]
fn scan_skips_and_removes_expired_keys() {
    let node = ServerProcess::storage_node(&["--hz", "1"]);
    let mut c = RawClient::connect(node.port);
    fill(&mut c, (0..100).map(|i| format!("live{i}")));
    for i in 0..100 {
        let key = format!("dead{i}");
        c.call(&["SET", &key, "v"]);
        c.call(&["PEXPIRE", &key, "1"]);
    }
    // Wait until the last TTL has passed (PTTL reads that one key, leaving the rest).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while c.call(&["PTTL", "dead99"]) != Frame::Integer(-2) {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let (keys, _) = full_scan(&mut c, &["COUNT", "1000"], |_| {});
    assert_eq!(
        keys.len(),
        100,
        "{:?}",
        keys.iter()
            .map(|k| String::from_utf8_lossy(k))
            .collect::<Vec<_>>()
    );
    assert!(keys.iter().all(|k| k.starts_with(b"live")));
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(100));
}

/// Random glob patterns over a small alphabet, matched by KEYS on both servers.
#[test]
fn random_glob_patterns_match_redis() {
    let d = std::cell::RefCell::new(Differential::start());
    {
        let mut d = d.borrow_mut();
        let subjects = [
            "", "a", "b", "ab", "ba", "aab", "abb", "a-b", "a]b", "a[b", "a\\b", "a*b", "a?b", "^",
            "]", "-", "A", "AB", "aBa", "abab", "bbbb", "a^b", "[]", "\\",
        ];
        for s in subjects {
            d.check(&["SET", s, "v"]);
        }
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 128,
        ..ProptestConfig::default()
    });
    let pattern = prop::collection::vec(
        prop::sample::select(vec!["a", "b", "A", "*", "?", "[", "]", "^", "-", "\\"]),
        0..8,
    )
    .prop_map(|parts| parts.concat());
    let result = runner.run(&pattern, |pattern| {
        let (node, redis) = d.borrow_mut().both(&["KEYS", &pattern]);
        let as_set = |f: &Frame| -> HashSet<Vec<u8>> {
            f.as_array()
                .expect("array")
                .iter()
                .map(|k| k.as_bytes().expect("bulk").to_vec())
                .collect()
        };
        prop_assert_eq!(as_set(&node), as_set(&redis), "pattern {:?}", pattern);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
