//! Many connections each announcing a 512 MB bulk and sending a few bytes, before and after
//! AUTH, against the proxy and a node.
//!
//! Targets: memory stays bounded (a declared length costs nothing until its bytes come), no
//! key is lost, unauthenticated clients are cut at Redis 7.0's pre-auth limits with its
//! exact errors (compared with redis-server's).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient, ServerProcess};

use crate::common::*;

const PASSWORD: &str = "fault-pw";
/// A SET whose value announces 512 MB and brings three bytes.
const BIG_BULK: &[u8] = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$536870912\r\nabc";
const UNAUTH_BULK: &str = "-ERR Protocol error: unauthenticated bulk length\r\n";
const UNAUTH_MULTIBULK: &str = "-ERR Protocol error: unauthenticated multibulk length\r\n";

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream
}

/// Reads until the server closes; what it sent.
fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return answer,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return answer,
            Err(e) => panic!("the server kept an unauthenticated client: {e}"),
        }
    }
}

/// Opens `count` connections to `port` that announce a 512 MB bulk, half of them before
/// AUTH (each must be cut with Redis's error) and half after (each is held, waiting for
/// the bytes). Returns the held connections and the number cut correctly.
fn announce(port: u16, count: usize) -> (Vec<TcpStream>, u64) {
    let mut held = Vec::new();
    let mut cut = 0;
    for i in 0..count {
        let mut stream = connect(port);
        if i % 2 == 0 {
            let _ = stream.write_all(BIG_BULK);
            let answer = read_to_close(&mut stream);
            assert_eq!(String::from_utf8_lossy(&answer), UNAUTH_BULK);
            cut += 1;
        } else {
            let auth = request(&["AUTH", PASSWORD]);
            stream.write_all(&auth).expect("send AUTH");
            let mut ok = [0u8; 5];
            stream.read_exact(&mut ok).expect("AUTH reply");
            assert_eq!(&ok, b"+OK\r\n");
            stream.write_all(BIG_BULK).expect("announce");
            held.push(stream);
        }
    }
    (held, cut)
}

/// The pre-auth multibulk limit, and a pipelined AUTH followed by a request over the
/// limits (Redis checks each request with the state the one before left).
fn check_pre_auth_texts(port: u16) {
    let (answer, closed) = answer_to(port, b"*11\r\n", Duration::from_secs(5));
    assert_eq!(String::from_utf8_lossy(&answer), UNAUTH_MULTIBULK);
    assert!(closed);
    let mut pipeline = request(&["AUTH", PASSWORD]);
    let value = "x".repeat(20_000);
    pipeline.extend(request(&["SET", "{auth}pipelined", &value]));
    pipeline.extend(request(&["GET", "{auth}pipelined"]));
    let mut client = RawClient::connect(port);
    client.send_raw(&pipeline);
    assert_eq!(client.read_reply().0, Frame::Simple("OK".into()));
    assert_eq!(client.read_reply().0, Frame::Simple("OK".into()));
    assert_eq!(client.read_reply().0, Frame::bulk(&value));
}

fn authed(port: u16) -> RawClient {
    let mut client = RawClient::connect(port);
    assert_eq!(client.call(&["AUTH", PASSWORD]), Frame::Simple("OK".into()));
    client
}

/// Writes `keys` keys, runs `load`, and counts the keys that are not there any more.
fn keys_lost_around(port: u16, keys: usize, load: impl FnOnce()) -> u64 {
    let mut client = authed(port);
    for i in 0..keys {
        let key = format!("kept{i}");
        assert_eq!(
            client.call(&["SET", &key, &key]),
            Frame::Simple("OK".into())
        );
    }
    load();
    let mut client = authed(port);
    (0..keys)
        .filter(|i| {
            let key = format!("kept{i}");
            client.call(&["GET", &key]) != Frame::bulk(&key)
        })
        .count() as u64
}

fn big_bulks_against(name: &str, server: &mut ServerProcess, count: usize) -> Row {
    let mut row = Row::new(name);
    let port = server.port;
    check_pre_auth_texts(port);
    let rss_before = rss_kb(server.pid());
    let mut rss_with = 0;
    row.lost = keys_lost_around(port, 100, || {
        let (held, cut) = announce(port, count);
        row.errors = cut;
        row.acked = held.len() as u64;
        rss_with = rss_kb(server.pid());
    });
    row.peak_rss_mb = peak_rss_mb(server.pid());
    row.crashes = crashed(server);
    row.print();
    let per_connection_kb = rss_with.saturating_sub(rss_before) as f64 / count as f64;
    eprintln!("{name}: {per_connection_kb:.2} KB of RSS per announcing connection");
    // Each connection holds a few bytes and its state, never the announced 512 MB.
    assert!(
        per_connection_kb < 64.0,
        "{name}: {per_connection_kb:.1} KB per connection"
    );
    assert_eq!(row.lost, 0);
    assert_eq!(row.crashes, 0);
    row
}

pub fn big_bulks_proxy() -> Row {
    let cluster = Cluster::storage_nodes(3);
    let count = scaled(200, 10_000);
    let mut proxy = proxy_with_config(
        &cluster.seeds(),
        &format!(
            "users:\n  - name: default\n    password: {PASSWORD}\nlimits:\n  max_clients: 20000\n  max_request_bytes: 1073741824\n"
        ),
    );
    big_bulks_against("big_bulk_announce_proxy", &mut proxy, count)
}

pub fn big_bulks_node() -> Row {
    let count = scaled(200, 10_000);
    let mut node =
        ServerProcess::storage_node(&["--requirepass", PASSWORD, "--maxclients", "20000"]);
    big_bulks_against("big_bulk_announce_node", &mut node, count)
}

/// The same pre-auth texts from the real redis-server, so the two above compare with it.
pub fn pre_auth_texts_of_redis() {
    let redis = ServerProcess::redis_server(&["--requirepass", PASSWORD]);
    check_pre_auth_texts(redis.port);
    let (answer, closed) = answer_to(redis.port, BIG_BULK, Duration::from_secs(5));
    assert_eq!(String::from_utf8_lossy(&answer), UNAUTH_BULK);
    assert!(closed);
}
