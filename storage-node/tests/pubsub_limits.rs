//! A subscriber that never reads is disconnected at `client-output-buffer-limit pubsub`
//! instead of making the node's memory grow with everything published to it.

use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

/// The node's resident memory in bytes (Linux).
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn subscribers(client: &mut RawClient, channel: &str) -> i64 {
    let reply = client.call(&["PUBSUB", "NUMSUB", channel]);
    reply
        .as_array()
        .and_then(|a| a.get(1))
        .and_then(Frame::as_integer)
        .unwrap_or(-1)
}

/// Publishes `count` messages of `size` bytes; returns the highest RSS seen meanwhile and
/// whether the subscriber was dropped.
fn flood(node: &ServerProcess, publisher: &mut RawClient, count: usize, size: usize) -> u64 {
    let payload = vec![b'x'; size];
    let mut peak = 0;
    for _ in 0..count {
        publisher.send(&[b"PUBLISH", b"firehose", &payload]);
        publisher.read_reply();
        peak = peak.max(rss_bytes(node.pid()));
    }
    peak
}

fn wait_until_dropped(publisher: &mut RawClient) {
    for _ in 0..1000 {
        if subscribers(publisher, "firehose") == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the slow subscriber was never disconnected");
}

#[test]
fn slow_subscriber_is_dropped_at_the_default_hard_limit() {
    let node = ServerProcess::storage_node(&[]);
    let mut publisher = RawClient::connect(node.port);
    let mut slow = RawClient::connect(node.port);
    slow.call(&["SUBSCRIBE", "firehose"]);
    assert_eq!(subscribers(&mut publisher, "firehose"), 1);
    let baseline = rss_bytes(node.pid());
    // 128 MB published to a subscriber that reads nothing: four times the 32 MB limit.
    let peak = flood(&node, &mut publisher, 128, 1024 * 1024);
    wait_until_dropped(&mut publisher);
    let growth = peak.saturating_sub(baseline);
    eprintln!("baseline RSS {baseline} bytes, peak {peak} bytes while flooding");
    assert!(
        growth < 96 * 1024 * 1024,
        "RSS grew by {growth} bytes while publishing 128 MB to a stuck subscriber"
    );
    // The node keeps serving, and the dropped client left no subscription behind.
    assert_eq!(
        publisher.call(&["PUBLISH", "firehose", "x"]).as_integer(),
        Some(0)
    );
    let list = publisher.call(&["CLIENT", "LIST", "TYPE", "pubsub"]);
    assert_eq!(list.as_bytes(), Some(&b""[..]));
}

#[test]
fn slow_subscriber_is_dropped_at_a_configured_limit() {
    let node = ServerProcess::storage_node(&[]);
    let mut publisher = RawClient::connect(node.port);
    publisher.call(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "pubsub 1mb 0 0",
    ]);
    let mut slow = RawClient::connect(node.port);
    let mut fast = RawClient::connect(node.port);
    slow.call(&["SUBSCRIBE", "firehose"]);
    fast.call(&["SUBSCRIBE", "firehose"]);
    // Far more than the kernel's socket buffers can hold for the stuck one.
    let payload = vec![b'y'; 64 * 1024];
    for _ in 0..512 {
        publisher.send(&[b"PUBLISH", b"firehose", &payload]);
        publisher.read_reply();
        // The reading subscriber keeps up and stays.
        let (frame, _) = fast.read_reply();
        assert_eq!(frame.as_array().map(<[Frame]>::len), Some(3));
        if subscribers(&mut publisher, "firehose") == 1 {
            break;
        }
    }
    wait_until_dropped_to(&mut publisher, 1);
    assert_eq!(
        publisher.call(&["PUBLISH", "firehose", "x"]).as_integer(),
        Some(1)
    );
}

fn wait_until_dropped_to(publisher: &mut RawClient, left: i64) {
    for _ in 0..1000 {
        if subscribers(publisher, "firehose") == left {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the slow subscriber was never disconnected");
}
