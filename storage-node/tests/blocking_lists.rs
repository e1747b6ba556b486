//! Blocking list commands with several clients, run the same way against the storage node
//! and a real redis-server; the transcripts of raw replies must be identical.
//!
//! No sleep is used to order events: before acting on a blocked client, a test polls
//! `INFO clients` from another connection until `blocked_clients` shows it waiting.

use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::transcript::{reply, same_on_both, send};
use test_harness::{blocked_clients, show, wait_blocked, RawClient};

#[test]
fn waiters_are_served_first_come_first_served() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiters: Vec<RawClient> = (0..3).map(|_| RawClient::connect(port)).collect();
        for (i, waiter) in waiters.iter_mut().enumerate() {
            send(waiter, &["BLPOP", "q", "other", "0"]);
            wait_blocked(&mut admin, i + 1);
        }
        let mut transcript = vec![show(
            &admin.call_raw(&[b"RPUSH", b"q", b"a", b"b", b"c", b"d"]),
        )];
        for waiter in &mut waiters {
            transcript.push(reply(waiter));
        }
        wait_blocked(&mut admin, 0);
        transcript.push(show(&admin.call_raw(&[b"LRANGE", b"q", b"0", b"-1"])));
        transcript
    });
}

#[test]
fn a_pipelined_push_of_several_elements_serves_the_waiter_once() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiter = RawClient::connect(port);
        send(&mut waiter, &["BRPOP", "q", "0"]);
        wait_blocked(&mut admin, 1);
        let mut pusher = RawClient::connect(port);
        let mut batch = RawClient::encode(&[b"RPUSH", b"q", b"a", b"b"]);
        batch.extend(RawClient::encode(&[b"RPUSH", b"q", b"c"]));
        batch.extend(RawClient::encode(&[b"LLEN", b"q"]));
        pusher.send_raw(&batch);
        let mut transcript = vec![reply(&mut pusher), reply(&mut pusher), reply(&mut pusher)];
        transcript.push(reply(&mut waiter));
        transcript.push(show(&admin.call_raw(&[b"LRANGE", b"q", b"0", b"-1"])));
        transcript
    });
}

#[test]
fn timeouts_accept_decimals() {
    same_on_both(|port| {
        let mut transcript = Vec::new();
        for resp3 in [false, true] {
            let mut client = RawClient::connect(port);
            if resp3 {
                client.call(&["HELLO", "3"]);
            }
            for command in [
                &["BLPOP", "q", "0.05"][..],
                &["BLMPOP", "0.05", "1", "q", "LEFT"],
                &["BLMOVE", "q", "d", "LEFT", "LEFT", "0.05"],
                &["BRPOPLPUSH", "q", "d", "0.05"],
            ] {
                let start = Instant::now();
                send(&mut client, command);
                transcript.push(reply(&mut client));
                assert!(start.elapsed() >= Duration::from_millis(45), "{command:?}");
            }
        }
        transcript
    });
}

#[test]
fn blmove_chains_carry_an_element_along() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut first = RawClient::connect(port);
        let mut second = RawClient::connect(port);
        let mut last = RawClient::connect(port);
        send(
            &mut first,
            &["BLMOVE", "{c}a", "{c}b", "RIGHT", "LEFT", "0"],
        );
        wait_blocked(&mut admin, 1);
        send(&mut second, &["BRPOPLPUSH", "{c}b", "{c}c", "0"]);
        wait_blocked(&mut admin, 2);
        send(
            &mut last,
            &["BLMPOP", "0", "2", "{c}x", "{c}c", "LEFT", "COUNT", "5"],
        );
        wait_blocked(&mut admin, 3);
        let transcript = vec![
            show(&admin.call_raw(&[b"LPUSH", b"{c}a", b"v"])),
            reply(&mut first),
            reply(&mut second),
            reply(&mut last),
            show(&admin.call_raw(&[b"EXISTS", b"{c}a", b"{c}b", b"{c}c"])),
        ];
        wait_blocked(&mut admin, 0);
        transcript
    });
}

#[test]
fn blmove_woken_onto_a_wrong_type_destination_errors_and_leaves_the_source() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiter = RawClient::connect(port);
        admin.call(&["SET", "{w}dst", "text"]);
        send(
            &mut waiter,
            &["BLMOVE", "{w}src", "{w}dst", "LEFT", "RIGHT", "0"],
        );
        wait_blocked(&mut admin, 1);
        let transcript = vec![
            show(&admin.call_raw(&[b"RPUSH", b"{w}src", b"a", b"b"])),
            reply(&mut waiter),
            show(&admin.call_raw(&[b"LRANGE", b"{w}src", b"0", b"-1"])),
            show(&admin.call_raw(&[b"GET", b"{w}dst"])),
        ];
        wait_blocked(&mut admin, 0);
        transcript
    });
}

#[test]
fn client_unblock_ends_waits_with_a_timeout_or_an_error() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut transcript = Vec::new();
        for (command, how) in [
            (&["BLPOP", "q", "0"][..], "TIMEOUT"),
            (&["BLMOVE", "q", "d", "LEFT", "LEFT", "0"], "TIMEOUT"),
            (&["BRPOP", "q", "0"], "ERROR"),
            (&["BLMPOP", "0", "1", "q", "LEFT"], "timeout"),
        ] {
            let mut waiter = RawClient::connect(port);
            let Frame::Integer(id) = waiter.call(&["CLIENT", "ID"]) else {
                panic!("CLIENT ID")
            };
            let id = id.to_string();
            send(&mut waiter, command);
            wait_blocked(&mut admin, 1);
            transcript.push(show(&admin.call_raw(&[
                b"CLIENT",
                b"UNBLOCK",
                id.as_bytes(),
                how.as_bytes(),
            ])));
            transcript.push(reply(&mut waiter));
            wait_blocked(&mut admin, 0);
            transcript.push(show(&admin.call_raw(&[
                b"CLIENT",
                b"UNBLOCK",
                id.as_bytes(),
            ])));
        }
        transcript.push(show(
            &admin.call_raw(&[b"CLIENT", b"UNBLOCK", b"1", b"maybe"]),
        ));
        transcript.push(show(&admin.call_raw(&[b"CLIENT", b"UNBLOCK", b"x"])));
        transcript.push(show(
            &admin.call_raw(&[b"CLIENT", b"UNBLOCK", b"1", b"2", b"3"]),
        ));
        transcript
    });
}

#[test]
fn a_disconnected_waiter_leaves_no_trace() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        {
            let mut waiter = RawClient::connect(port);
            send(&mut waiter, &["BLPOP", "q", "0"]);
            wait_blocked(&mut admin, 1);
        }
        wait_blocked(&mut admin, 0);
        let mut waiter = RawClient::connect(port);
        send(&mut waiter, &["BLPOP", "q", "0"]);
        wait_blocked(&mut admin, 1);
        vec![
            show(&admin.call_raw(&[b"RPUSH", b"q", b"a", b"b"])),
            reply(&mut waiter),
            show(&admin.call_raw(&[b"LRANGE", b"q", b"0", b"-1"])),
        ]
    });
}

#[test]
fn pipelined_commands_after_a_blocked_one_wait_their_turn() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiter = RawClient::connect(port);
        let mut batch = RawClient::encode(&[b"BLPOP", b"q", b"0"]);
        batch.extend(RawClient::encode(&[b"LLEN", b"q"]));
        batch.extend(RawClient::encode(&[b"PING"]));
        waiter.send_raw(&batch);
        wait_blocked(&mut admin, 1);
        vec![
            show(&admin.call_raw(&[b"RPUSH", b"q", b"a", b"b"])),
            reply(&mut waiter),
            reply(&mut waiter),
            reply(&mut waiter),
        ]
    });
}

#[test]
fn a_wrong_type_or_a_string_on_the_key_does_not_wake_the_waiter() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut waiter = RawClient::connect(port);
        send(&mut waiter, &["BLPOP", "q", "0"]);
        wait_blocked(&mut admin, 1);
        let mut transcript = vec![
            show(&admin.call_raw(&[b"SET", b"q", b"x"])),
            show(&admin.call_raw(&[b"DEL", b"q"])),
        ];
        assert_eq!(blocked_clients(&mut admin), 1);
        transcript.push(show(&admin.call_raw(&[b"LPUSH", b"q", b"v"])));
        transcript.push(reply(&mut waiter));
        transcript
    });
}

#[test]
fn a_list_renamed_copied_or_moved_onto_the_key_wakes_the_waiter() {
    same_on_both(|port| {
        let mut admin = RawClient::connect(port);
        let mut transcript = Vec::new();
        for (setup, command) in [
            (
                &["RPUSH", "{k}src", "r"][..],
                &["RENAME", "{k}src", "{k}q"][..],
            ),
            (&["RPUSH", "{k}src", "c"], &["COPY", "{k}src", "{k}q"]),
        ] {
            let mut waiter = RawClient::connect(port);
            send(&mut waiter, &["BLPOP", "{k}q", "0"]);
            wait_blocked(&mut admin, 1);
            send(&mut admin, setup);
            transcript.push(reply(&mut admin));
            send(&mut admin, command);
            transcript.push(reply(&mut admin));
            transcript.push(reply(&mut waiter));
            wait_blocked(&mut admin, 0);
            admin.call(&["DEL", "{k}src"]);
        }
        // MOVE into another database, where the waiter selected it.
        let mut waiter = RawClient::connect(port);
        waiter.call(&["SELECT", "1"]);
        send(&mut waiter, &["BRPOP", "m", "0"]);
        wait_blocked(&mut admin, 1);
        transcript.push(show(&admin.call_raw(&[b"RPUSH", b"m", b"moved"])));
        transcript.push(show(&admin.call_raw(&[b"MOVE", b"m", b"1"])));
        transcript.push(reply(&mut waiter));
        transcript
    });
}
