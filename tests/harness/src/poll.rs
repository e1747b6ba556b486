//! Waiting for a condition, bounded: the tests' only way to synchronise with a server
//! (no sleeps of a guessed length).

use std::time::{Duration, Instant};

/// Polls `check` every 20 ms until it holds; fails with `what` once `limit` has passed.
pub fn wait_until(limit: Duration, what: &str, check: impl FnMut() -> bool) {
    assert!(poll_until(limit, check), "timed out waiting for {what}");
}

/// Polls `check` every 20 ms until it holds (true) or `limit` has passed (false), for a
/// caller whose failure message needs what it sees at the end (a server's log).
pub fn poll_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !check() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}
