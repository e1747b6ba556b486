//! SLOWLOG against a real redis-server 7.0. With `slowlog-log-slower-than 0` every command
//! is logged, so the entries (ids, arguments as cut and redacted, client names) must be the
//! same on both servers; only the time, the duration and the client's port differ, and those
//! are checked for shape and then set aside.

use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient};

/// The client's own `ip:port`, as CLIENT INFO shows it.
fn own_addr(client: &mut RawClient) -> Vec<u8> {
    let info = client.call(&["CLIENT", "INFO"]);
    let text = String::from_utf8_lossy(
        info.as_bytes()
            .unwrap_or_else(|| panic!("CLIENT INFO: {info:?}")),
    );
    let addr = text
        .split(' ')
        .find_map(|field| field.strip_prefix("addr="))
        .expect("CLIENT INFO has addr=");
    addr.as_bytes().to_vec()
}

/// An entry list with the unix time, the duration and the caller's own address replaced by
/// placeholders, after checking that they look right.
fn comparable(entries: &Frame, me: &[u8]) -> Frame {
    // An error is compared as it is.
    let Some(entries) = entries.as_array() else {
        return entries.clone();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    Frame::Array(
        entries
            .iter()
            .map(|entry| {
                let fields = entry.as_array().expect("an entry is an array");
                assert_eq!(fields.len(), 6, "entry {entry:?}");
                let time = fields[1].as_integer().expect("unix time");
                assert!((now - 600..=now + 600).contains(&time), "time {time}");
                assert!(fields[2].as_integer().expect("duration") >= 0);
                let addr = fields[4].as_bytes().expect("address");
                let addr = if addr == me { &b"me"[..] } else { addr };
                Frame::Array(vec![
                    fields[0].clone(),
                    Frame::Integer(0),
                    Frame::Integer(0),
                    fields[3].clone(),
                    Frame::bulk(addr),
                    fields[5].clone(),
                ])
            })
            .collect(),
    )
}

/// Runs SLOWLOG GET `count` on both servers and compares the entries.
fn compare_entries(d: &mut Differential, count: &str) -> Frame {
    let (node_me, redis_me) = (own_addr(&mut d.node_client), own_addr(&mut d.redis_client));
    let (node, redis) = d.both(&["SLOWLOG", "GET", count]);
    let node = comparable(&node, &node_me);
    assert_eq!(node, comparable(&redis, &redis_me));
    node
}

#[test]
fn every_command_is_logged_with_its_arguments_cut_and_secrets_redacted() {
    let mut d = Differential::start();
    let many: Vec<String> = (0..40).map(|i| format!("key{i}")).collect();
    let long = "x".repeat(300);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["CONFIG", "SET", "slowlog-max-len", "128"],
            &["CLIENT", "SETNAME", "slow-client"],
            &["SLOWLOG", "RESET"],
            &["SET", "k", "v"],
            &["GET", "k"],
            &["AUTH", "secret"],
            &["AUTH", "user", "secret"],
        ]);
        // The default user has no password, so any password passes; the client id differs.
        d.both(&[
            "HELLO",
            if resp3 { "3" } else { "2" },
            "AUTH",
            "default",
            "x",
        ]);
        d.check_all(&[
            &[
                "CONFIG",
                "SET",
                "masterauth",
                "hidden",
                "slowlog-max-len",
                "128",
            ],
            // EXEC is not logged; what it runs is, one entry each.
            &["MULTI"],
            &["INCR", "counter"],
            &["EXEC"],
            // What a script runs is logged as run by the script's client.
            &[
                "EVAL",
                "return redis.call('SET', KEYS[1], ARGV[1])",
                "1",
                "k",
                "w",
            ],
            &["SET", "long", &long],
            &["CLIENT", "SETNAME", "renamed"],
        ]);
        let mut del = vec!["DEL"];
        del.extend(many.iter().map(String::as_str));
        d.check(&del);
        let mut del = vec!["DEL"];
        del.extend(many[..31].iter().map(String::as_str));
        d.check(&del);
        let entries = compare_entries(&mut d, "-1");
        // RESET is the oldest entry; the DEL of 40 keys is cut to 32 arguments.
        assert_eq!(entries.as_array().map(<[Frame]>::len), Some(16));
        d.check(&["SLOWLOG", "LEN"]);
        compare_entries(&mut d, "3");
        compare_entries(&mut d, "0");
        compare_entries(&mut d, "1000");
        compare_entries(&mut d, "");
    }
}

#[test]
fn the_log_keeps_the_newest_entries_and_ids_survive_a_reset() {
    let mut d = Differential::start();
    d.check_all(&[
        &[
            "CONFIG",
            "SET",
            "slowlog-log-slower-than",
            "0",
            "slowlog-max-len",
            "3",
        ],
        &["SLOWLOG", "RESET"],
        &["PING"],
        &["ECHO", "a"],
        &["ECHO", "b"],
        &["ECHO", "c"],
        &["SLOWLOG", "LEN"],
        // Shrinking the limit trims on the next entry only, as in Redis.
        &["CONFIG", "SET", "slowlog-max-len", "1"],
        &["SLOWLOG", "LEN"],
        &["SLOWLOG", "LEN"],
        &["CONFIG", "GET", "slowlog-max-len"],
        &["CONFIG", "GET", "slowlog-log-slower-than"],
    ]);
    compare_entries(&mut d, "10");
    d.check_all(&[
        &["SLOWLOG", "RESET"],
        &["CONFIG", "SET", "slowlog-max-len", "10"],
        &["ECHO", "after"],
    ]);
    compare_entries(&mut d, "10");
    // Off, or a threshold no command reaches: nothing more is logged.
    d.check_all(&[
        &["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
        &["SLOWLOG", "RESET"],
        &["ECHO", "x"],
        &["SLOWLOG", "LEN"],
        &["CONFIG", "SET", "slowlog-log-slower-than", "1000000000"],
        &["ECHO", "y"],
        &["SLOWLOG", "LEN"],
        &["SLOWLOG", "GET"],
        &["CONFIG", "SET", "slowlog-log-slower-than", "-2"],
        &["CONFIG", "SET", "slowlog-max-len", "-1"],
        &["CONFIG", "GET", "slowlog-max-len"],
        &["CONFIG", "GET", "slowlog-log-slower-than"],
    ]);
}

#[test]
fn slowlog_syntax_errors_and_help_match_redis() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["SLOWLOG"],
            &["SLOWLOG", "HELP"],
            &["SLOWLOG", "help", "x"],
            &["SLOWLOG", "GET", "-2"],
            &["SLOWLOG", "GET", "x"],
            &["SLOWLOG", "GET", "99999999999999999999"],
            &["SLOWLOG", "GET", "1", "2"],
            &["SLOWLOG", "LEN", "1"],
            &["SLOWLOG", "RESET", "x"],
            &["SLOWLOG", "nope"],
        ]);
    }
}
