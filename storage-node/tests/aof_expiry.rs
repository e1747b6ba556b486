//! Keys whose time is up, in the AOF: `DEL`, or `UNLINK` with `lazyfree-lazy-expire yes`,
//! byte for byte as redis-server 7.0 writes them (Redis's `propagateDeletion`, and EXPIRE
//! or GETEX given a time in the past).

mod persistence_fixture;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use persistence_fixture::*;
use slotproxy::resp::Frame;
use test_harness::RawClient;

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// With `lazyfree-lazy-expire` yes, then no (set with CONFIG SET): EXPIRE with a negative
/// time, GETEX with a past EXAT, and a key read after its PXAT passed are logged by the
/// node exactly as by redis-server.
#[test]
fn expired_keys_are_logged_as_unlink_under_lazyfree_lazy_expire_as_in_redis() {
    let args = ["--appendonly", "yes", "--appendfsync", "always"];
    let node_dir = scratch_dir("expiry-log-node");
    let redis_dir = scratch_dir("expiry-log-redis");
    let node = node_in(&node_dir, &args);
    let redis = redis_in(&redis_dir, &args);
    let mut clients = [
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    ];
    for lazy in ["yes", "no"] {
        // One instant for both servers, so that `SET ... PXAT` is logged alike.
        let soon = (unix_ms() + 500).to_string();
        for c in &mut clients {
            ok(c, &["CONFIG", "SET", "lazyfree-lazy-expire", lazy]);
            ok(c, &["SET", &format!("past-{lazy}"), "v"]);
            ok(c, &["EXPIRE", &format!("past-{lazy}"), "-5"]);
            ok(c, &["SET", &format!("getex-{lazy}"), "v"]);
            ok(c, &["GETEX", &format!("getex-{lazy}"), "EXAT", "1"]);
            ok(c, &["SET", &format!("timed-{lazy}"), "v", "PXAT", &soon]);
        }
        // Reading the key after its time removes it (or the active expiry did).
        let deadline = Instant::now() + Duration::from_secs(30);
        for c in &mut clients {
            while c.call(&["EXISTS", &format!("timed-{lazy}")]) != Frame::Integer(0) {
                assert!(Instant::now() < deadline, "timed-{lazy} never expired");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let redis_log = std::fs::read(incr_file(&redis_dir)).unwrap();
    let text = |log: &[u8]| String::from_utf8_lossy(log).replace("\r\n", " ");
    assert!(text(&redis_log).contains("UNLINK $8 past-yes"));
    assert!(text(&redis_log).contains("DEL $7 past-no"));
    assert_same_log(&node_dir, &redis_dir);
}
