//! A subscriber that turned replies off (CLIENT REPLY OFF / SKIP) still receives its pushes:
//! subscription confirmations, messages, and keyspace notifications about its own writes,
//! as Redis 7.0 sends them (pushes bypass the reply switch). Ordinary replies stay silent.
//! The same script runs against the storage node and a real redis-server.

use test_harness::transcript::{call, reply, same_on_both, send};
use test_harness::RawClient;

#[test]
fn a_subscriber_with_replies_off_still_gets_confirmations_and_messages() {
    for proto in ["2", "3"] {
        same_on_both(|port| {
            let mut subscriber = RawClient::connect(port);
            let mut publisher = RawClient::connect(port);
            call(&mut subscriber, &["HELLO", proto]);
            send(&mut subscriber, &["CLIENT", "REPLY", "OFF"]);
            send(&mut subscriber, &["SUBSCRIBE", "ch"]);
            let mut transcript = vec![reply(&mut subscriber)];
            transcript.push(call(&mut publisher, &["PUBLISH", "ch", "hello"]));
            transcript.push(reply(&mut subscriber));
            send(&mut subscriber, &["PSUBSCRIBE", "c*"]);
            transcript.push(reply(&mut subscriber));
            transcript.push(call(&mut publisher, &["PUBLISH", "ch", "again"]));
            transcript.push(reply(&mut subscriber));
            transcript.push(reply(&mut subscriber));
            send(&mut subscriber, &["PUNSUBSCRIBE"]);
            send(&mut subscriber, &["UNSUBSCRIBE"]);
            transcript.push(reply(&mut subscriber));
            transcript.push(reply(&mut subscriber));
            // Not a push: stays silent, so the next thing read is REPLY ON's +OK.
            send(&mut subscriber, &["PING"]);
            send(&mut subscriber, &["CLIENT", "REPLY", "ON"]);
            transcript.push(reply(&mut subscriber));
            transcript.push(call(&mut subscriber, &["ECHO", "done"]));
            transcript
        });
    }
}

#[test]
fn replies_off_keeps_notifications_about_the_clients_own_writes_in_resp3() {
    same_on_both(|port| {
        let mut client = RawClient::connect(port);
        call(&mut client, &["HELLO", "3"]);
        let mut transcript = vec![
            call(
                &mut client,
                &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
            ),
            call(&mut client, &["SUBSCRIBE", "__keyspace@0__:k"]),
        ];
        send(&mut client, &["CLIENT", "REPLY", "SKIP"]);
        // Skipped: the +OK; kept: the `set` notification.
        send(&mut client, &["SET", "k", "v"]);
        transcript.push(reply(&mut client));
        send(&mut client, &["CLIENT", "REPLY", "OFF"]);
        send(&mut client, &["PUBLISH", "__keyspace@0__:k", "mine"]);
        send(&mut client, &["DEL", "k"]);
        transcript.push(reply(&mut client));
        transcript.push(reply(&mut client));
        send(&mut client, &["CLIENT", "REPLY", "ON"]);
        transcript.push(reply(&mut client));
        transcript.push(call(
            &mut client,
            &["CONFIG", "SET", "notify-keyspace-events", ""],
        ));
        transcript
    });
}
