//! Expiry commands (EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME
//! PERSIST) compared with a real redis-server, and active expiry.
//!
//! Relative TTLs differ by the time between the two servers' clocks reads, so exact checks
//! use far-future absolute times (EXPIREAT/PEXPIREAT + EXPIRETIME/PEXPIRETIME); TTL and
//! EXPIRE with seconds round to whole seconds, which is stable at these scales.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient, ServerProcess};

#[test]
fn expire_options_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["EXPIRE", "nope", "100"],
        &["EXPIRE", "nope", "-100"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "abc"],
        &["EXPIRE", "k", "1.5"],
        &["EXPIRE", "k", "abc", "NX", "XX"],
        &["EXPIRE", "k", "abc", "foo"],
        &["EXPIRE", "k", "10", "foo"],
        &["EXPIRE", "k", "10", "NX", "XX"],
        &["EXPIRE", "k", "10", "NX", "GT"],
        &["EXPIRE", "k", "10", "LT", "NX"],
        &["EXPIRE", "k", "10", "GT", "LT"],
        &["EXPIRE", "k", "10", "gt", "lt", "nx"],
        &["EXPIRE", "k", "10", "NX", "nx"],
        &["EXPIRE"],
        &["EXPIRE", "k"],
        &["TTL"],
        &["PERSIST"],
        // Overflow, per command.
        &["EXPIRE", "k", "9223372036854775807"],
        &["EXPIRE", "k", "9223372036854775"],
        &["EXPIRE", "k", "9223372036854774"],
        &["EXPIRE", "k", "-9223372036854776"],
        &["PEXPIRE", "k", "9223372036854775807"],
        &["EXPIREAT", "k", "9223372036854776"],
        &["PEXPIREAT", "k", "9223372036854775808"],
        &["TTL", "k"],
        // No TTL: XX and GT fail, NX and LT apply. (`EXPIRE k 10 NX nx` above set a TTL;
        // without PERSIST, GT would compare two TTLs set a millisecond apart or not.)
        &["PERSIST", "k"],
        &["EXPIRE", "k", "100", "XX"],
        &["EXPIRE", "k", "100", "GT"],
        &["EXPIRE", "k", "100", "XX", "GT"],
        &["TTL", "k"],
        &["EXPIREAT", "k", "33333333333", "LT"],
        &["EXPIRETIME", "k"],
        &["PERSIST", "k"],
        &["PERSIST", "k"],
        &["EXPIREAT", "k", "33333333333", "NX"],
        &["EXPIREAT", "k", "33333333334", "NX"],
        &["EXPIRETIME", "k"],
        &["EXPIREAT", "k", "33333333334", "GT"],
        &["EXPIREAT", "k", "33333333333", "GT"],
        &["EXPIREAT", "k", "33333333334", "XX", "GT"],
        &["EXPIRETIME", "k"],
        &["EXPIREAT", "k", "33333333335", "LT"],
        &["EXPIREAT", "k", "33333333334", "LT"],
        &["EXPIREAT", "k", "33333333330", "lt"],
        &["PEXPIRETIME", "k"],
        &["PEXPIREAT", "k", "33333333330001", "XX"],
        &["PEXPIRETIME", "k"],
        &["EXPIRETIME", "k"],
        &["PEXPIREAT", "k", "33333333330499"],
        &["EXPIRETIME", "k"],
        &["PEXPIREAT", "k", "33333333330500"],
        &["EXPIRETIME", "k"],
        // The largest times.
        &["PEXPIREAT", "k", "9223372036854775807"],
        &["PEXPIRETIME", "k"],
        &["EXPIRETIME", "k"],
        &["EXPIREAT", "k", "9223372036854775"],
        &["PEXPIRETIME", "k"],
        // A time in the past deletes the key and answers 1.
        &["EXPIRE", "k", "-9223372036854775"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIRE", "k", "-9223372036854775808"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "0"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIREAT", "k", "1"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIREAT", "k", "-5", "LT"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "-1", "GT"],
        &["EXISTS", "k"],
        // A TTL in seconds reads back rounded.
        &["SET", "r", "v"],
        &["EXPIRE", "r", "1000"],
        &["TTL", "r"],
        &["PEXPIRE", "r", "100000"],
        &["TTL", "r"],
        // SET without options clears the TTL.
        &["SET", "r", "v2"],
        &["TTL", "r"],
        &["PTTL", "r"],
    ]);
}

#[test]
fn ttl_family_on_missing_and_persistent_keys_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["TTL", "nope"],
        &["PTTL", "nope"],
        &["EXPIRETIME", "nope"],
        &["PEXPIRETIME", "nope"],
        &["PERSIST", "nope"],
        &["SET", "k", "v"],
        &["TTL", "k"],
        &["PTTL", "k"],
        &["EXPIRETIME", "k"],
        &["PEXPIRETIME", "k"],
        &["PERSIST", "k"],
        &["TTL", "k", "extra"],
    ]);
}

#[test]
fn pttl_counts_down_within_a_tolerance() {
    let mut d = Differential::start();
    d.check(&["SET", "k", "v"]);
    d.check(&["PEXPIRE", "k", "50000"]);
    let (node, redis) = d.both(&["PTTL", "k"]);
    for ms in [node, redis] {
        let ms = ms.as_integer().expect("integer");
        assert!((45_000..=50_000).contains(&ms), "PTTL {ms}");
    }
}

/// Keys with short TTLs that nobody reads are reclaimed by the active expiry cycle.
#[test]
fn active_expiry_removes_unread_keys() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    for i in 0..500 {
        let key = format!("short:{i}");
        c.call(&["SET", &key, "v"]);
        c.call(&["PEXPIRE", &key, &(10 + i % 90).to_string()]);
    }
    for i in 0..20 {
        c.call(&["SET", &format!("long:{i}"), "v"]);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let size = c.call(&["DBSIZE"]).as_integer().expect("integer");
        if size == 20 {
            break;
        }
        assert!(Instant::now() < deadline, "DBSIZE still {size}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let info = c.call(&["EXISTS", "long:0", "long:19"]);
    assert_eq!(info, Frame::Integer(2));
}

/// A key whose TTL passed is gone for every command, even while it is still stored because
/// active expiry has not reached it. Active expiry is off on both servers and every command
/// gets its own key, so each one meets a key that is expired but not yet deleted: DBSIZE,
/// which counts stored keys, shows it is there before the command and (for the commands
/// that look keys up) gone after it. Waiting is on the clock, not on PTTL, which would
/// itself delete the key.
#[test]
fn expired_keys_are_invisible() {
    let debug = ["--enable-debug-command", "yes"];
    let mut d = Differential::start_with(&debug, &debug);
    d.check(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let probes: &[(&str, &[&str], Frame)] = &[
        ("k-exists", &["EXISTS"], Frame::Integer(0)),
        ("k-type", &["TYPE"], Frame::Simple("none".into())),
        ("k-get", &["GET"], Frame::Null),
        ("k-pttl", &["PTTL"], Frame::Integer(-2)),
        ("k-persist", &["PERSIST"], Frame::Integer(0)),
        (
            "k-expire",
            &["EXPIRE", "k-expire", "100"],
            Frame::Integer(0),
        ),
        ("k-keys", &["KEYS"], Frame::Array(vec![])),
    ];
    // Far enough ahead that setting every key up takes less time, even on a loaded machine.
    let expires_at = unix_ms() + 2000;
    let expires_at_text = expires_at.to_string();
    for (key, _, _) in probes {
        d.check(&["SET", key, "v"]);
        d.check(&["PEXPIREAT", key, &expires_at_text]);
    }
    let stored = probes.len() as i64;
    assert_eq!(
        d.check(&["DBSIZE"]),
        Frame::Integer(stored),
        "all set up in time"
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    while unix_ms() <= expires_at + 1 {
        assert!(
            Instant::now() < deadline,
            "the clock did not pass the expiry time"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        d.check(&["DBSIZE"]),
        Frame::Integer(stored),
        "expired keys are still stored while active expiry is off"
    );
    for (probed, (key, command, expected)) in probes.iter().enumerate() {
        let mut args: Vec<&str> = command.to_vec();
        if args.len() == 1 {
            args.push(key);
        }
        // Each earlier command deleted its own key (KEYS, last, only skips it), no other.
        assert_eq!(
            d.check(&["DBSIZE"]),
            Frame::Integer(stored - probed as i64),
            "{key} is still stored when {args:?} runs"
        );
        assert_eq!(&d.check(&args), expected, "{args:?} on an expired key");
    }
    d.check(&["DBSIZE"]);
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

/// One command of the expiry proptest. Relative times are long (a key must not expire while
/// a case runs) and are never compared with GT/LT against each other: two servers reading
/// the clock a millisecond apart could then legitimately disagree.
fn expire_command() -> impl Strategy<Value = Vec<String>> {
    let key = prop::sample::select(vec!["a", "b", "c"]);
    let any_flag =
        prop::sample::select(vec!["", "NX", "XX", "GT", "LT", "NX XX", "GT LT", "XX GT"]);
    let safe_flag = prop::sample::select(vec!["", "NX", "XX", "NX XX", "GT LT", "NX LT"]);
    let with_flags = |words: [&str; 3], flags: &str| {
        let mut words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        words.extend(flags.split_whitespace().map(String::from));
        words
    };
    let relative = (
        prop::sample::select(vec![
            ("EXPIRE", "-10"),
            ("EXPIRE", "0"),
            ("EXPIRE", "100"),
            ("EXPIRE", "9223372036854775807"),
            ("PEXPIRE", "-10"),
            ("PEXPIRE", "200000"),
            ("PEXPIRE", "9223372036854775807"),
        ]),
        key.clone(),
        safe_flag,
    )
        .prop_map(move |((c, t), k, f)| with_flags([c, k, t], f));
    let absolute = (
        prop::sample::select(vec![
            ("EXPIREAT", "5"),
            ("EXPIREAT", "50000000000"),
            ("EXPIREAT", "50000000001"),
            ("EXPIREAT", "9223372036854775807"),
            ("PEXPIREAT", "5"),
            ("PEXPIREAT", "50000000000999"),
            ("PEXPIREAT", "50000000001000"),
            ("PEXPIREAT", "9223372036854775807"),
        ]),
        key.clone(),
        any_flag,
    )
        .prop_map(move |((c, t), k, f)| with_flags([c, k, t], f));
    prop_oneof![
        key.clone()
            .prop_map(|k| vec!["SET".into(), k.into(), "v".into()]),
        relative,
        absolute,
        (
            prop::sample::select(vec![
                "TTL",
                "EXPIRETIME",
                "PEXPIRETIME",
                "PERSIST",
                "EXISTS"
            ]),
            key
        )
            .prop_map(|(c, k)| vec![c.to_string(), k.to_string()]),
    ]
}

/// EXPIRETIME / PEXPIRETIME of a key whose deadline may come from a relative EXPIRE or
/// PEXPIRE: the two servers read their clocks a little apart, so the deadline may differ by
/// the time between them (a millisecond, or a second boundary crossed). A missing key or no
/// expiry must still match exactly, as must every deadline set by an absolute time.
fn compare_expire_times(d: &mut Differential, words: &[&str]) {
    let (node, redis) = d.both(words);
    let slack = if words[0] == "PEXPIRETIME" { 1000 } else { 1 };
    match (node.as_integer(), redis.as_integer()) {
        (Some(a), Some(b)) if a > 0 && b > 0 => {
            assert!((a - b).abs() <= slack, "{words:?}: node {a}, redis {b}")
        }
        _ => assert_eq!(node, redis, "{words:?}"),
    }
}

#[test]
fn random_expire_sequences_match_redis() {
    let d = std::cell::RefCell::new(Differential::start());
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    let sequences = prop::collection::vec(expire_command(), 1..30);
    let result = runner.run(&sequences, |commands| {
        let mut d = d.borrow_mut();
        d.check(&["FLUSHALL"]);
        // Keys that may carry a deadline set by a relative EXPIRE or PEXPIRE (until SET or
        // PERSIST clears it).
        let mut relative = std::collections::HashSet::new();
        for c in &commands {
            let words: Vec<&str> = c.iter().map(String::as_str).collect();
            match words[0] {
                "EXPIRE" | "PEXPIRE" => {
                    relative.insert(c[1].clone());
                }
                "SET" | "PERSIST" => {
                    relative.remove(&c[1]);
                }
                _ => {}
            }
            if c[0].ends_with("EXPIRETIME") && relative.contains(&c[1]) {
                compare_expire_times(&mut d, &words);
            } else {
                d.check(&words);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
