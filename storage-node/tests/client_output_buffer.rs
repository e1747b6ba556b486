//! `omem` in CLIENT LIST and `client_recent_max_output_buffer` in INFO clients come from
//! the output really waiting for a client: zero for a client that reads its replies, and
//! growing for a subscriber that stops reading while messages are published to it. Checked
//! the same way on the node and on a real redis-server. Every wait is bounded.

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
