//! A script that never ends must not stall the node: past `busy-reply-threshold` other
//! clients get `-BUSY`, SCRIPT KILL ends a script that has not written, and a script that
//! wrote is UNKILLABLE (SHUTDOWN NOSAVE is the way out). Each scenario runs against the
//! node and a real redis-server, and the replies are compared. Every wait is bounded.

use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// Sends PING until the server answers BUSY (PONG while the looping script has not started
/// yet). Panics if it never does.
fn wait_for_busy(client: &mut RawClient) {
    for _ in 0..500 {
        match client.call(&["PING"]) {
            Frame::Error(e) if e == BUSY.as_bytes() => return,
            Frame::Simple(s) if s == "PONG".as_bytes() => continue,
            other => panic!("unexpected reply while waiting for BUSY: {other:?}"),
        }
    }
    panic!("the server never answered BUSY");
}

/// A looping script is killed: the replies every client sees along the way.
fn kill_scenario(port: u16) -> Vec<Vec<u8>> {
    let mut looping = RawClient::connect(port);
    let mut other = RawClient::connect(port);
    let mut seen = vec![];
    seen.push(other.call_raw(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"200"]));
    seen.push(other.call_raw(&[b"SET", b"before", b"1"]));
    looping.send(&[b"EVAL", b"local i = 0 while true do i = i + 1 end", b"0"]);
    wait_for_busy(&mut other);
    seen.push(other.call_raw(&[b"GET", b"before"]));
    seen.push(other.call_raw(&[b"FUNCTION", b"KILL"]));
    seen.push(other.call_raw(&[b"SCRIPT", b"KILL"]));
    seen.push(looping.read_reply().1);
    seen.push(other.call_raw(&[b"SCRIPT", b"KILL"]));
    seen.push(other.call_raw(&[b"GET", b"before"]));
    seen.push(looping.call_raw(&[b"PING"]));
    seen
}

#[test]
fn script_kill_ends_a_looping_script_as_in_redis() {
    let node = ServerProcess::storage_node(&[]);
    let redis = ServerProcess::redis_server(&[]);
    let from_node = kill_scenario(node.port);
    let from_redis = kill_scenario(redis.port);
    let show = |replies: &[Vec<u8>]| -> Vec<String> {
        replies
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect()
    };
    assert_eq!(show(&from_node), show(&from_redis));
}

/// A script that wrote and then loops cannot be killed; SHUTDOWN NOSAVE ends the server.
fn unkillable_scenario(port: u16) -> Vec<Vec<u8>> {
    let mut looping = RawClient::connect(port);
    let mut other = RawClient::connect(port);
    let mut seen = vec![];
    seen.push(other.call_raw(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"200"]));
    looping.send(&[
        b"EVAL",
        b"redis.call('set', KEYS[1], 'x') while true do end",
        b"1",
        b"written",
    ]);
    wait_for_busy(&mut other);
    seen.push(other.call_raw(&[b"SCRIPT", b"KILL"]));
    seen.push(other.call_raw(&[b"GET", b"written"]));
    other.send(&[b"SHUTDOWN", b"NOSAVE"]);
    // The server exits without answering; the looping client's connection closes too.
    assert!(other.try_read_reply().is_none());
    assert!(looping.try_read_reply().is_none());
    seen
}

#[test]
fn a_script_that_wrote_is_unkillable_as_in_redis() {
    let node = ServerProcess::storage_node(&[]);
    let redis = ServerProcess::redis_server(&[]);
    let from_node = unkillable_scenario(node.port);
    let from_redis = unkillable_scenario(redis.port);
    assert_eq!(from_node, from_redis);
}

#[test]
fn a_script_under_the_threshold_just_makes_others_wait() {
    let node = ServerProcess::storage_node(&[]);
    let mut a = RawClient::connect(node.port);
    let mut b = RawClient::connect(node.port);
    // About 100 ms of work, well under the default 5 s threshold.
    a.send(&[
        b"EVAL",
        b"local n = 0 for i = 1, 3000000 do n = n + i end return 'done'",
        b"0",
    ]);
    assert_eq!(b.call(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(a.read_reply().0, Frame::Bulk("done".into()));
}
