//! Connection commands and protocol handling, compared with a real redis-server.

use test_harness::{Differential, RawClient};

#[test]
fn connection_commands_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["PING"],
        &["PING", "hello"],
        &["PING", "a", "b"],
        &["ECHO", "x y"],
        &["ECHO"],
        &["SELECT", "1"],
        &["SELECT", "16"],
        &["SELECT", "-1"],
        &["SELECT", "abc"],
        &["SELECT", "0"],
        &["NOSUCHCOMMAND", "a", "b"],
        &["nosuch"],
        &["CLIENT", "NOSUCH"],
        &["CLIENT", "SETNAME", "a b"],
        &["CLIENT", "SETNAME", "good"],
        &["CLIENT", "GETNAME"],
        &["AUTH", "x"],
        &["AUTH", "a", "b", "c"],
        &["HELLO", "4"],
        &["HELLO", "x"],
        &["HELLO", "3", "FOO"],
        &["GET"],
    ]);
}

#[test]
fn unknown_command_lists_at_most_128_bytes_of_arguments() {
    let mut d = Differential::start();
    let long = "x".repeat(200);
    d.check(&["BOGUS", &long, "more"]);
    d.check(&["BOGUS", "a", &"y".repeat(130)]);
}

#[test]
fn inline_commands_and_protocol_errors_match_redis() {
    let d = Differential::start();
    for input in [
        &b"PING\r\n"[..],
        b"ECHO \"a\\x41b\"\r\n",
        b"\r\nPING\n",
        b"*1\r\n:5\r\n",
        b"*abc\r\n",
        b"*1\r\n$-5\r\n",
        b"ECHO \"unbalanced\r\n",
    ] {
        let (mut node, mut redis) = d.clients();
        // A sentinel after the input tells where the replies end (or the server closed).
        let sentinel = b"*2\r\n$4\r\nECHO\r\n$3\r\nEND\r\n";
        for client in [&mut node, &mut redis] {
            client.send_raw(input);
            client.send_raw(sentinel);
        }
        loop {
            let a = node.try_read_reply();
            let b = redis.try_read_reply();
            assert_eq!(
                a.as_ref().map(|r| &r.1),
                b.as_ref().map(|r| &r.1),
                "input {input:?}"
            );
            if a.is_none() || a.is_some_and(|r| r.1 == b"$3\r\nEND\r\n") {
                break;
            }
        }
    }
}

#[test]
fn quit_closes_after_replying() {
    let d = Differential::start();
    let mut c = RawClient::connect(d.node.port);
    c.send_raw(b"PING\r\nQUIT\r\nPING\r\n");
    assert_eq!(c.read_reply().1, b"+PONG\r\n");
    assert_eq!(c.read_reply().1, b"+OK\r\n");
    assert!(c.try_read_reply().is_none());
}
