//! MONITOR against a real redis-server 7.0: the same commands sent to both servers must
//! show the same lines to a monitoring client (times and the sender's port set aside),
//! with what Redis hides hidden and what it redacts redacted.

use test_harness::{Differential, RawClient};

/// The client's own `ip:port`, as CLIENT INFO shows it.
fn own_addr(client: &mut RawClient) -> String {
    let info = client.call(&["CLIENT", "INFO"]);
    let text = String::from_utf8_lossy(info.as_bytes().expect("CLIENT INFO is text")).into_owned();
    text.split(' ')
        .find_map(|field| field.strip_prefix("addr="))
        .expect("CLIENT INFO has addr=")
        .to_string()
}

/// Monitor lines up to and including the one for `ECHO end`, each without its time and with
/// the sender's address as `me`.
fn lines_until_end(monitor: &mut RawClient, sender: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for _ in 0..200 {
        let (_, raw) = monitor.read_reply();
        let line = String::from_utf8_lossy(&raw).into_owned();
        let (time, rest) = line.split_once(' ').expect("a time, then the rest");
        let (seconds, micros) = time
            .strip_prefix('+')
            .and_then(|t| t.split_once('.'))
            .expect("+seconds.micros");
        assert!(
            seconds.parse::<u64>().is_ok() && micros.len() == 6,
            "{line}"
        );
        let rest = rest.replace(sender, "me");
        let end = rest.to_ascii_lowercase().ends_with("\"echo\" \"end\"\r\n");
        lines.push(rest);
        if end {
            return lines;
        }
    }
    panic!("no end line among {lines:?}");
}

#[test]
fn monitors_see_the_commands_redis_shows_them() {
    let mut d = Differential::start();
    let (mut node_monitor, mut redis_monitor) = d.clients();
    assert_eq!(node_monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    assert_eq!(redis_monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    let node_me = own_addr(&mut d.node_client);
    let redis_me = own_addr(&mut d.redis_client);
    d.check_all(&[
        &["SET", "k", "v"],
        &["AUTH", "secret"],
        &["HELLO", "2", "AUTH", "nobody", "secret"],
    ]);
    // The client id in the reply differs.
    d.both(&["HELLO", "2"]);
    d.check_all(&[
        // Admin commands are not shown.
        &["CONFIG", "GET", "hz"],
        &["SLOWLOG", "LEN"],
        &["CLIENT", "NO-EVICT", "off"],
        &["CLIENT", "SETNAME", "sender"],
        &["PING"],
        // What EXEC runs shows before EXEC; MONITOR itself is refused inside it.
        &["MULTI"],
        &["INCR", "counter"],
        &["MONITOR"],
        &["EXEC"],
        // A script shows, then what it runs, as `lua`.
        &["EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "k"],
        &["SELECT", "1"],
        &["SET", "in-db-1", "1"],
        &["BLPOP", "nolist", "0.01"],
        // Refused before running: not shown.
        &["NOSUCHCOMMAND"],
        &["GET"],
        &["PUBLISH", "channel", "message"],
        &["SELECT", "0"],
    ]);
    d.check_bytes(&[b"SET", b"odd", b"a\"b\\c\n\r\t\x07\x08\x01\xff \xe9"]);
    d.check(&["ECHO", "end"]);
    let node_lines = lines_until_end(&mut node_monitor, &node_me);
    let redis_lines = lines_until_end(&mut redis_monitor, &redis_me);
    assert_eq!(node_lines, redis_lines);
    assert!(node_lines.iter().any(|l| l.contains("[0 lua] \"SET\"")));

    // A second MONITOR answers nothing: the next reply is CLIENT LIST's (admin, not shown).
    for monitor in [&mut node_monitor, &mut redis_monitor] {
        monitor.send(&[b"MONITOR"]);
        let list = monitor.call(&["CLIENT", "LIST"]);
        let list =
            String::from_utf8_lossy(list.as_bytes().expect("CLIENT LIST is text")).into_owned();
        assert_eq!(list.matches("flags=O").count(), 1, "{list}");
        // RESET leaves monitor mode: a command sent after it is not shown.
        assert_eq!(monitor.call_raw(&[b"RESET"]), b"+RESET\r\n".to_vec());
    }
    d.check(&["SET", "after-reset", "1"]);
    assert_eq!(node_monitor.call_raw(&[b"PING"]), b"+PONG\r\n".to_vec());
    assert_eq!(redis_monitor.call_raw(&[b"PING"]), b"+PONG\r\n".to_vec());
}

#[test]
fn a_monitor_that_disconnects_is_forgotten() {
    let d = Differential::start();
    let (mut admin, _) = d.clients();
    let (mut monitor, _) = d.clients();
    assert_eq!(monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    let monitors = |admin: &mut RawClient| {
        let list = admin.call(&["CLIENT", "LIST"]);
        String::from_utf8_lossy(list.as_bytes().expect("text"))
            .matches("flags=O")
            .count()
    };
    assert_eq!(monitors(&mut admin), 1);
    drop(monitor);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while monitors(&mut admin) != 0 {
        assert!(std::time::Instant::now() < deadline, "the monitor stayed");
        std::thread::yield_now();
    }
    // Commands still run with nobody to show them to.
    assert_eq!(admin.call_raw(&[b"SET", b"k", b"v"]), b"+OK\r\n".to_vec());
}

/// A line with the other clients' ports (the waiter's, the admin's) set aside.
fn other_ports(line: &str) -> String {
    match line.split_once("127.0.0.1:") {
        Some((before, after)) => {
            let rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{before}127.0.0.1:port{rest}")
        }
        None => line.to_string(),
    }
}

/// A blocked command shows when it arrives, not again when a push serves it; the slow log
/// logs it once, when served.
#[test]
fn a_served_blocked_command_shows_once() {
    let mut d = Differential::start();
    let (mut node_monitor, mut redis_monitor) = d.clients();
    let (mut node_waiter, mut redis_waiter) = d.clients();
    assert_eq!(node_monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    assert_eq!(redis_monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    d.check_all(&[
        &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
        &["SLOWLOG", "RESET"],
    ]);
    node_waiter.send(&[b"BLPOP", b"queue", b"0"]);
    redis_waiter.send(&[b"BLPOP", b"queue", b"0"]);
    let (mut node_admin, mut redis_admin) = d.clients();
    test_harness::wait_blocked(&mut node_admin, 1);
    test_harness::wait_blocked(&mut redis_admin, 1);
    d.check(&["LPUSH", "queue", "job"]);
    assert_eq!(node_waiter.read_reply().1, redis_waiter.read_reply().1);
    d.check(&["ECHO", "end"]);
    let node_me = own_addr(&mut d.node_client);
    let redis_me = own_addr(&mut d.redis_client);
    let node_lines = lines_until_end(&mut node_monitor, &node_me);
    let redis_lines = lines_until_end(&mut redis_monitor, &redis_me);
    // wait_blocked polls INFO as often as it needs to: those lines are left out.
    let comparable = |lines: Vec<String>| -> Vec<String> {
        lines
            .iter()
            .filter(|l| !l.contains("\"INFO\""))
            .map(|l| other_ports(l))
            .collect()
    };
    let (node_lines, redis_lines) = (comparable(node_lines), comparable(redis_lines));
    assert_eq!(node_lines, redis_lines);
    assert_eq!(
        node_lines
            .iter()
            .filter(|l| l.contains("\"BLPOP\""))
            .count(),
        1,
        "{node_lines:?}"
    );
    let (node, redis) = d.both(&["SLOWLOG", "GET", "-1"]);
    let commands = |log: &slotproxy::resp::Frame| -> Vec<slotproxy::resp::Frame> {
        log.as_array()
            .expect("entries")
            .iter()
            .map(|e| e.as_array().expect("entry")[3].clone())
            .filter(|args| args.as_array().and_then(|a| a[0].as_bytes()) != Some(b"INFO"))
            .collect()
    };
    assert_eq!(commands(&node), commands(&redis));
}

/// A RESP3 monitor gets the same simple-string lines; a RESP3 sender's commands show alike.
#[test]
fn monitor_lines_are_the_same_in_resp3() {
    let mut d = Differential::start();
    let (mut node_monitor, mut redis_monitor) = d.clients();
    node_monitor.call(&["HELLO", "3"]);
    redis_monitor.call(&["HELLO", "3"]);
    assert_eq!(node_monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    assert_eq!(redis_monitor.call_raw(&[b"MONITOR"]), b"+OK\r\n".to_vec());
    d.set_resp3(true);
    let node_me = own_addr(&mut d.node_client);
    let redis_me = own_addr(&mut d.redis_client);
    d.check_all(&[
        &["HSET", "h", "f", "1"],
        &["HGETALL", "h"],
        &["ECHO", "end"],
    ]);
    let node_lines = lines_until_end(&mut node_monitor, &node_me);
    let redis_lines = lines_until_end(&mut redis_monitor, &redis_me);
    assert_eq!(node_lines, redis_lines);
}
