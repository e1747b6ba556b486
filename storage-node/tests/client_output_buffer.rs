//! `omem` in CLIENT LIST and `client_recent_max_output_buffer` in INFO clients come from
//! the output really waiting for a client: zero for a client that reads its replies, and
//! growing for a subscriber that stops reading while messages are published to it, or for a
//! client that stops reading in the middle of big replies. The recent max is a peak of the
//! last seconds: it still shows once the client has drained. Checked the same way on the
//! node and on a real redis-server. Every wait is bounded.

use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient};

fn text(frame: Frame) -> String {
    match frame {
        Frame::Bulk(t) | Frame::Verbatim { text: t, .. } => {
            String::from_utf8_lossy(&t).into_owned()
        }
        other => panic!("expected text, got {other:?}"),
    }
}

/// A numeric `name=value` field of the CLIENT LIST line of client `id`.
fn client_field(admin: &mut RawClient, id: i64, name: &str) -> u64 {
    let list = text(admin.call(&["CLIENT", "LIST", "ID", &id.to_string()]));
    list.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn recent_max_output(admin: &mut RawClient) -> u64 {
    let info = text(admin.call(&["INFO", "clients"]));
    info.lines()
        .find_map(|l| l.strip_prefix("client_recent_max_output_buffer:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("client_recent_max_output_buffer")
}

fn client_id(client: &mut RawClient) -> i64 {
    match client.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        other => panic!("CLIENT ID answered {other:?}"),
    }
}

/// Publishes to a subscriber that does not read until its output backlog shows; returns
/// (omem of a client that reads, omem seen for the stalled subscriber, recent max output).
fn backlog(port: u16) -> (u64, u64, u64) {
    let mut admin = RawClient::connect(port);
    let mut subscriber = RawClient::connect(port);
    let subscriber_id = client_id(&mut subscriber);
    subscriber.call(&["SUBSCRIBE", "ch"]);
    let admin_id = client_id(&mut admin);
    let idle_omem = client_field(&mut admin, admin_id, "omem");
    let message = "x".repeat(64 * 1024);
    let deadline = Instant::now() + Duration::from_secs(20);
    // At most 20 MB, below the default pubsub hard limit (32 MB).
    for _ in 0..32 {
        for _ in 0..10 {
            admin.call(&["PUBLISH", "ch", &message]);
        }
        let omem = client_field(&mut admin, subscriber_id, "omem");
        if omem > 0 {
            // Redis samples its recent peak periodically: poll it, bounded.
            loop {
                let recent = recent_max_output(&mut admin);
                if recent > 0 || Instant::now() > deadline {
                    return (idle_omem, omem, recent);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    (idle_omem, 0, recent_max_output(&mut admin))
}

#[test]
fn a_stalled_subscriber_shows_its_output_backlog() {
    let d = Differential::start();
    for port in [d.node.port, d.redis.port] {
        let (idle, stalled, recent) = backlog(port);
        assert_eq!(idle, 0, "port {port}");
        assert!(stalled > 0, "port {port}: omem never grew");
        assert!(
            recent > 0,
            "port {port}: client_recent_max_output_buffer stayed 0"
        );
    }
}

/// INFO's recent max output, polled until it reaches `at_least` (Redis samples it about once
/// a second); returns the last value read.
fn poll_recent_max_output(admin: &mut RawClient, at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let recent = recent_max_output(admin);
        if recent >= at_least || Instant::now() > deadline {
            return recent;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a client that stops reading in the middle of big replies shows.
struct StalledReplies {
    /// omem of the stalled client, once it was seen above a megabyte (0 if never).
    stalled_omem: u64,
    /// INFO's recent max output while the client was stalled.
    recent_while_stalled: u64,
    /// omem once the client has read every reply.
    drained_omem: u64,
    /// INFO's recent max output just after the client drained.
    recent_after_drain: u64,
}

const BIG_VALUE: usize = 4 * 1024 * 1024;
const GETS: usize = 8;

fn stalled_replies(port: u16) -> StalledReplies {
    let mut admin = RawClient::connect(port);
    let big = "v".repeat(BIG_VALUE);
    admin.call(&["SET", "big", &big]);
    let mut reader = RawClient::connect(port);
    let reader_id = client_id(&mut reader);
    // 32 MB of replies asked for in one write and not read: more than the loopback socket
    // buffers hold, so the rest waits in the server.
    let get = RawClient::encode(&[b"GET", b"big"]);
    reader.send_raw(&get.repeat(GETS));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut stalled_omem = 0;
    while Instant::now() < deadline {
        stalled_omem = client_field(&mut admin, reader_id, "omem");
        if stalled_omem > 1024 * 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let recent_while_stalled = poll_recent_max_output(&mut admin, 1024 * 1024);
    for _ in 0..GETS {
        match reader.read_reply().0 {
            Frame::Bulk(value) => assert_eq!(value.len(), BIG_VALUE, "port {port}"),
            other => panic!("port {port}: GET answered {other:?}"),
        }
    }
    // The client has read everything; its connection notices once the last write ends.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut drained_omem = client_field(&mut admin, reader_id, "omem");
    while drained_omem != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        drained_omem = client_field(&mut admin, reader_id, "omem");
    }
    let recent_after_drain = recent_max_output(&mut admin);
    StalledReplies {
        stalled_omem,
        recent_while_stalled,
        drained_omem,
        recent_after_drain,
    }
}

#[test]
fn a_client_that_stops_reading_big_replies_shows_them_in_omem_and_the_recent_peak() {
    let d = Differential::start();
    for port in [d.node.port, d.redis.port] {
        let seen = stalled_replies(port);
        assert!(
            seen.stalled_omem > 1024 * 1024,
            "port {port}: omem of the stalled client stayed at {}",
            seen.stalled_omem
        );
        assert!(
            seen.recent_while_stalled > 1024 * 1024,
            "port {port}: recent max output {} while a client was stalled",
            seen.recent_while_stalled
        );
        assert_eq!(seen.drained_omem, 0, "port {port}: omem after draining");
        assert!(
            seen.recent_after_drain >= seen.recent_while_stalled,
            "port {port}: the recent peak {} fell to {} as soon as the client drained",
            seen.recent_while_stalled,
            seen.recent_after_drain
        );
    }
}
