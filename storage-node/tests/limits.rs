//! Limits and authentication: maxclients, the query buffer limit, memory held by clients that
//! announce huge arguments, requirepass with AUTH / HELLO AUTH, and protocol errors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient, ServerProcess};

/// Reads until the server closes the connection (or the timeout), returning what it sent.
fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return received,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            // A reset also means the server closed the connection.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return received,
            Err(e) => panic!(
                "read: {e} (got {:?} so far)",
                String::from_utf8_lossy(&received)
            ),
        }
    }
}

#[test]
fn the_connection_past_maxclients_is_refused_like_redis() {
    let d = Differential::start_with(&["--maxclients", "3"], &["--maxclients", "3"]);
    // The harness holds one connection to each; two more fill the limit.
    let mut held = Vec::new();
    for port in [d.node.port, d.redis.port] {
        for _ in 0..2 {
            let mut c = RawClient::connect(port);
            assert_eq!(c.call(&["PING"]), Frame::Simple("PONG".into()));
            held.push(c);
        }
    }
    let mut replies = Vec::new();
    for port in [d.node.port, d.redis.port] {
        let mut refused = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        replies.push(read_until_closed(&mut refused));
    }
    assert_eq!(replies[0], b"-ERR max number of clients reached\r\n");
    assert_eq!(replies[0], replies[1]);
    // Closing one connection makes room again.
    drop(held.remove(0));
    let mut c = RawClient::connect(d.node.port);
    let mut answered = false;
    // The node notices the closed connection asynchronously: retry a bounded number of times.
    for _ in 0..200 {
        c.send(&[b"PING"]);
        match c.try_read_reply() {
            Some((Frame::Simple(s), _)) if &s[..] == b"PONG" => {
                answered = true;
                break;
            }
            _ => c = RawClient::connect(d.node.port),
        }
    }
    assert!(answered, "no room after a client left");
    let info = c.call(&["INFO", "stats"]);
    let info = String::from_utf8_lossy(info.as_bytes().expect("INFO text")).into_owned();
    assert!(info.contains("rejected_connections:"), "{info}");
    assert!(!info.contains("rejected_connections:0\r\n"), "{info}");
}

#[test]
fn a_client_past_the_query_buffer_limit_is_disconnected() {
    let flags = ["--client-query-buffer-limit", "1mb"];
    let d = Differential::start_with(&flags, &flags);
    for port in [d.node.port, d.redis.port] {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .write_all(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n")
            .expect("header");
        let chunk = vec![b'x'; 64 * 1024];
        let mut closed = false;
        // 2.5 MB at most; the server closes the connection well before that.
        for _ in 0..40 {
            if stream.write_all(&chunk).is_err() {
                closed = true;
                break;
            }
        }
        if !closed {
            assert!(read_until_closed(&mut stream).is_empty(), "port {port}");
        }
    }
    // The node is still fine for everyone else.
    let mut c = RawClient::connect(d.node.port);
    assert_eq!(c.call(&["PING"]), Frame::Simple("PONG".into()));
}

/// Resident memory of a process, from `/proc/<pid>/status`.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmRSS");
    kib * 1024
}

#[test]
fn announced_huge_bulks_cost_kilobytes_not_their_size() {
    let node = ServerProcess::storage_node(&[]);
    let mut control = RawClient::connect(node.port);
    control.call(&["PING"]);
    let before = rss_bytes(node.pid());
    let mut clients = Vec::new();
    for _ in 0..50 {
        let mut stream = TcpStream::connect(("127.0.0.1", node.port)).expect("connect");
        stream
            .write_all(b"*1\r\n$536870912\r\nabcdefgh")
            .expect("send");
        clients.push(stream);
    }
    // Wait (bounded) until the node has read all 50 announcements: each such client shows a
    // non-empty query buffer in CLIENT LIST.
    let mut waiting = 0;
    for _ in 0..2000 {
        let list = control.call(&["CLIENT", "LIST"]);
        let text = String::from_utf8_lossy(list.as_bytes().expect("list")).into_owned();
        waiting = 50 - text.lines().filter(|l| l.contains(" qbuf=8 ")).count();
        if waiting == 0 {
            break;
        }
    }
    assert_eq!(waiting, 0, "the node did not read every announcement");
    let after = rss_bytes(node.pid());
    let growth = after.saturating_sub(before);
    assert!(
        growth < 20 * 1024 * 1024,
        "50 clients announcing 512 MB each grew the node by {growth} bytes"
    );
    drop(clients);
}

#[test]
fn requirepass_auth_flows_match_redis() {
    let flags = ["--requirepass", "secret"];
    let mut d = Differential::start_with(&flags, &flags);
    d.check_all(&[
        &["PING"],
        &["GET", "k"],
        &["CLIENT", "ID"],
        &["AUTH"],
        &["AUTH", "wrong"],
        &["AUTH", "default", "wrong"],
        &["AUTH", "nobody", "secret"],
        &["AUTH", "a", "b", "c"],
        &["HELLO"],
        &["HELLO", "3"],
        &["HELLO", "3", "AUTH", "default", "wrong"],
        &["HELLO", "3", "AUTH", "default"],
        &["HELLO", "4", "AUTH", "default", "secret"],
        &["AUTH", "secret"],
        &["PING"],
        &["AUTH", "default", "secret"],
        &["AUTH", "wrong"],
        // A failed AUTH does not undo an earlier success.
        &["PING"],
        &["RESET"],
        &["PING"],
        &["AUTH", "default", "secret"],
        &["SET", "k", "v"],
        &["GET", "k"],
    ]);
    // HELLO with AUTH authenticates and switches protocol; only the client id differs.
    let (mut node, mut redis) = d.clients();
    let hello = ["HELLO", "3", "AUTH", "default", "secret", "SETNAME", "n"];
    let strip_id = |frame: Frame| match frame {
        Frame::Map(pairs) => Frame::Map(
            pairs
                .into_iter()
                .filter(|(k, _)| k.as_bytes() != Some(&b"id"[..]))
                .collect(),
        ),
        other => panic!("HELLO answered {other:?}"),
    };
    assert_eq!(strip_id(node.call(&hello)), strip_id(redis.call(&hello)));
    for c in [&mut node, &mut redis] {
        assert_eq!(c.call(&["CLIENT", "GETNAME"]), Frame::bulk("n"));
    }
    // An unauthenticated client may not send big requests.
    for port in [d.node.port, d.redis.port] {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.write_all(b"*20\r\n").expect("send");
        assert_eq!(
            read_until_closed(&mut stream),
            b"-ERR Protocol error: unauthenticated multibulk length\r\n"
        );
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.write_all(b"*1\r\n$100000\r\n").expect("send");
        assert_eq!(
            read_until_closed(&mut stream),
            b"-ERR Protocol error: unauthenticated bulk length\r\n"
        );
    }
}

#[test]
fn config_set_requirepass_applies_to_new_connections() {
    let mut d = Differential::start();
    d.check(&["CONFIG", "SET", "requirepass", "pw2"]);
    // The connection that set it stays authenticated, as in Redis.
    d.check(&["PING"]);
    let (mut node, mut redis) = d.clients();
    for command in [&["PING"][..], &["AUTH", "pw2"], &["PING"]] {
        assert_eq!(node.call(command), redis.call(command), "{command:?}");
    }
    d.check(&["CONFIG", "SET", "requirepass", ""]);
    let (mut node, mut redis) = d.clients();
    assert_eq!(node.call(&["PING"]), redis.call(&["PING"]));
}

#[test]
fn protocol_errors_close_the_connection_after_the_reply() {
    let d = Differential::start();
    for input in [
        &b"*1\r\n$abc\r\n"[..],
        b"*2\r\n$4\r\nPING\r\n:1\r\n",
        b"*-\r\n",
        b"PING\r\n*1\r\n$-1\r\n",
        b"ECHO 'a'b\r\n",
    ] {
        let mut replies = Vec::new();
        for port in [d.node.port, d.redis.port] {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            stream.write_all(input).expect("send");
            replies.push(read_until_closed(&mut stream));
        }
        assert_eq!(
            String::from_utf8_lossy(&replies[0]),
            String::from_utf8_lossy(&replies[1]),
            "input {input:?}"
        );
        assert!(replies[0].starts_with(b"-ERR Protocol error") || replies[0].starts_with(b"+PONG"));
    }
}
