//! When blocked clients are served: a key is only signalled "ready" while a command,
//! transaction or script runs, and served after it, if it then still holds a value of the
//! type the waiter wants. Run the same way against the storage node and a real
//! redis-server; the transcripts of raw replies must be identical.
//!
//! No sleep orders events: a test polls `INFO clients` until the waiter shows as blocked.

use test_harness::transcript::{call, reply, same_on_both, send};
use test_harness::{wait_blocked, RawClient};

/// A blocking command, how to fill its key inside MULTI, and how to serve it afterwards.
struct Case {
    block: &'static [&'static str],
    fill: &'static [&'static str],
    serve: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        block: &["BLPOP", "k", "0"],
        fill: &["LPUSH", "k", "x"],
        serve: &["LPUSH", "k", "y"],
    },
    Case {
        block: &["BLMPOP", "0", "1", "k", "LEFT"],
        fill: &["LPUSH", "k", "x"],
        serve: &["LPUSH", "k", "y"],
    },
    Case {
        block: &["BRPOPLPUSH", "k", "dst", "0"],
        fill: &["LPUSH", "k", "x"],
        serve: &["LPUSH", "k", "y"],
    },
    Case {
        block: &["BZPOPMIN", "k", "0"],
        fill: &["ZADD", "k", "1", "x"],
        serve: &["ZADD", "k", "2", "y"],
    },
    Case {
        block: &["BZMPOP", "0", "1", "k", "MAX"],
        fill: &["ZADD", "k", "1", "x"],
        serve: &["ZADD", "k", "2", "y"],
    },
];

#[test]
fn a_key_filled_then_replaced_by_a_string_inside_multi_wakes_nobody() {
    for resp3 in [false, true] {
        for case in CASES {
            same_on_both(|port| {
                let mut admin = RawClient::connect(port);
                let mut waiter = RawClient::connect(port);
                if resp3 {
                    call(&mut waiter, &["HELLO", "3"]);
                }
                send(&mut waiter, case.block);
                wait_blocked(&mut admin, 1);
                let mut transcript = vec![call(&mut admin, &["MULTI"])];
                for command in [case.fill, &["DEL", "k"], &["SET", "k", "foo"]] {
                    transcript.push(call(&mut admin, command));
                }
                transcript.push(call(&mut admin, &["EXEC"]));
                // Still blocked: only what comes next may serve it.
                wait_blocked(&mut admin, 1);
                transcript.push(call(&mut admin, &["DEL", "k"]));
                transcript.push(call(&mut admin, case.serve));
                transcript.push(reply(&mut waiter));
                wait_blocked(&mut admin, 0);
                transcript
            });
        }
    }
}

#[test]
fn a_key_filled_then_deleted_inside_multi_wakes_nobody() {
    for case in CASES {
        same_on_both(|port| {
            let mut admin = RawClient::connect(port);
            let mut waiter = RawClient::connect(port);
            send(&mut waiter, case.block);
            wait_blocked(&mut admin, 1);
            let mut transcript = vec![call(&mut admin, &["MULTI"])];
            transcript.push(call(&mut admin, case.fill));
            transcript.push(call(&mut admin, &["DEL", "k"]));
            transcript.push(call(&mut admin, &["EXEC"]));
            wait_blocked(&mut admin, 1);
            transcript.push(call(&mut admin, case.serve));
            transcript.push(reply(&mut waiter));
            transcript
        });
    }
}

#[test]
fn swapdb_wakes_clients_blocked_on_keys_that_now_exist() {
    for case in CASES {
        same_on_both(|port| {
            let mut admin = RawClient::connect(port);
            let mut waiter = RawClient::connect(port);
            let mut transcript = vec![
                call(&mut admin, &["SELECT", "1"]),
                call(&mut admin, case.fill),
                call(&mut admin, &["SELECT", "9"]),
                call(&mut waiter, &["SELECT", "9"]),
            ];
            send(&mut waiter, case.block);
            wait_blocked(&mut admin, 1);
            transcript.push(call(&mut admin, &["SWAPDB", "1", "9"]));
            transcript.push(reply(&mut waiter));
            wait_blocked(&mut admin, 0);
            transcript.push(call(&mut admin, &["DBSIZE"]));
            transcript
        });
    }
}

#[test]
fn swapdb_bringing_a_wrong_type_leaves_the_waiter_blocked() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiter = RawClient::connect(port);
        let mut transcript = vec![
            call(&mut admin, &["SELECT", "1"]),
            call(&mut admin, &["SET", "k", "string"]),
            call(&mut admin, &["SELECT", "9"]),
            call(&mut waiter, &["SELECT", "9"]),
        ];
        send(&mut waiter, &["BLPOP", "k", "0"]);
        wait_blocked(&mut admin, 1);
        transcript.push(call(&mut admin, &["SWAPDB", "1", "9"]));
        wait_blocked(&mut admin, 1);
        transcript.push(call(&mut admin, &["DEL", "k"]));
        transcript.push(call(&mut admin, &["RPUSH", "k", "a"]));
        transcript.push(reply(&mut waiter));
        transcript
    });
}

#[test]
fn a_client_blocked_in_brpoplpush_does_not_disturb_watch() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiter = RawClient::connect(port);
        let mut watcher = RawClient::connect(port);
        send(&mut waiter, &["BRPOPLPUSH", "src", "dst", "0"]);
        wait_blocked(&mut admin, 1);
        let mut transcript = vec![
            call(&mut watcher, &["WATCH", "dst"]),
            call(&mut watcher, &["MULTI"]),
            call(&mut watcher, &["LPUSH", "dst", "foo"]),
            // The source is signalled, but empty again when the transaction ends.
            call(&mut admin, &["MULTI"]),
            call(&mut admin, &["LPUSH", "src", "gone"]),
            call(&mut admin, &["DEL", "src"]),
            call(&mut admin, &["EXEC"]),
            call(&mut watcher, &["EXEC"]),
        ];
        // Once served, the move does touch a watched key.
        transcript.push(call(&mut watcher, &["WATCH", "dst"]));
        transcript.push(call(&mut watcher, &["MULTI"]));
        transcript.push(call(&mut watcher, &["LLEN", "dst"]));
        transcript.push(call(&mut admin, &["LPUSH", "src", "v"]));
        transcript.push(reply(&mut waiter));
        transcript.push(call(&mut watcher, &["EXEC"]));
        transcript.push(call(&mut admin, &["LRANGE", "dst", "0", "-1"]));
        transcript
    });
}
