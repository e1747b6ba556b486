//! Waiting for a condition, bounded: the tests' only way to synchronise with a server
//! (no sleeps of a guessed length).

use std::time::{Duration, Instant};

/// Polls `check` every 20 ms until it holds; fails with `what` once `limit` has passed.
pub fn wait_until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
