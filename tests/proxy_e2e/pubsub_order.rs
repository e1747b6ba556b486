//! A subscriber through the proxy sees its messages where one server would put them: a
//! message published before the subscriber's next command arrives before that command's
//! reply (the proxy's barrier over its subscription connections), and after HELLO switches
//! the protocol, messages and confirmations come in the new protocol's shape, byte for byte
//! as a standalone redis-server sends them; CLIENT REPLY OFF does not silence them.

use slotproxy::resp::Frame;
use test_harness::{show, RawClient, ServerProcess};

/// Rounds of publish-then-command: without the barrier the proxy's own PING answer or a
/// node's GET reply overtakes the message in some of them.
const ROUNDS: usize = 200;

fn message_payload(frame: &Frame) -> String {
    match frame.as_array() {
        Some([kind, _, payload]) if kind.as_bytes() == Some(b"message") => {
            String::from_utf8_lossy(payload.as_bytes().unwrap_or(b"")).into_owned()
        }
        _ => panic!("expected a message, got {frame:?}"),
    }
}

/// The subscriber sends `command` right after each PUBLISH has been answered; it must read
/// the message first, then `expected_reply`.
fn publish_then(port: u16, resp3: bool, command: &[&str], expected_reply: Frame) {
    let mut subscriber = RawClient::connect(port);
    if resp3 {
        subscriber.call(&["HELLO", "3"]);
    }
    let channel = if resp3 { "order:3" } else { "order:2" };
    subscriber.call(&["SUBSCRIBE", channel]);
    let mut publisher = RawClient::connect(port);
    for round in 0..ROUNDS {
        let payload = round.to_string();
        assert_eq!(
            publisher.call(&["PUBLISH", channel, &payload]),
            Frame::Integer(1)
        );
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        subscriber.send(&args);
        let first = subscriber.read_reply().0;
        assert_eq!(
            message_payload(&first),
            payload,
            "round {round}: {command:?} (RESP3: {resp3})"
        );
        assert_eq!(subscriber.read_reply().0, expected_reply, "round {round}");
    }
}

pub fn messages_come_before_the_next_reply(port: u16) {
    // RESP2 subscribed PING: answered by the proxy itself.
    publish_then(
        port,
        false,
        &["PING"],
        Frame::Array(vec![Frame::bulk("pong"), Frame::bulk("")]),
    );
    // RESP3: GET goes to a node over another connection than the messages.
    publish_then(port, true, &["GET", "order:nosuch"], Frame::Null);
}

/// One subscriber's exchange with a server, the raw replies kept for comparison. The HELLO
/// replies name the server, so only their first byte (the protocol's shape) is kept.
fn hello_switch_transcript(port: u16) -> Vec<String> {
    let mut subscriber = RawClient::connect(port);
    let mut publisher = RawClient::connect(port);
    let mut transcript = Vec::new();
    let call = |client: &mut RawClient, args: &[&str]| {
        let raw = client.call_raw(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
        if args[0] == "HELLO" && !raw.starts_with(b"-") {
            format!("{args:?} -> {}", raw[0] as char)
        } else {
            format!("{args:?} -> {}", show(&raw))
        }
    };
    let publish = |publisher: &mut RawClient, subscriber: &mut RawClient, messages| {
        let mut lines = vec![call(publisher, &["PUBLISH", "hs:c", "hi"])];
        for _ in 0..messages {
            lines.push(format!("message {}", show(&subscriber.read_raw_reply())));
        }
        lines
    };
    // RESP3 subscriber switches to RESP2: messages become arrays, and RESP2's subscribed
    // context applies (GET and HELLO refused, PING answered as an array).
    transcript.push(call(&mut subscriber, &["HELLO", "3"]));
    transcript.push(call(&mut subscriber, &["SUBSCRIBE", "hs:c"]));
    subscriber.send(&[b"PSUBSCRIBE", b"hs:*"]);
    transcript.push(format!("psubscribe {}", show(&subscriber.read_raw_reply())));
    transcript.extend(publish(&mut publisher, &mut subscriber, 2));
    transcript.push(call(&mut subscriber, &["HELLO", "2"]));
    transcript.extend(publish(&mut publisher, &mut subscriber, 2));
    transcript.push(call(&mut subscriber, &["PING"]));
    transcript.push(call(&mut subscriber, &["GET", "hs:k"]));
    transcript.push(call(&mut subscriber, &["HELLO", "3"]));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE", "hs:c"]));
    transcript.push(call(&mut subscriber, &["PUNSUBSCRIBE", "hs:*"]));
    // Not subscribed any more: HELLO 3 is allowed, and the next subscription's
    // confirmations and messages are push frames.
    transcript.push(call(&mut subscriber, &["HELLO", "3"]));
    transcript.push(call(&mut subscriber, &["SUBSCRIBE", "hs:c"]));
    transcript.extend(publish(&mut publisher, &mut subscriber, 1));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE", "hs:c"]));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE", "hs:c"]));
    // The other way: subscribed first in RESP2, then RESP3 once it has left.
    let mut subscriber = RawClient::connect(port);
    transcript.push(call(&mut subscriber, &["SUBSCRIBE", "hs:c"]));
    transcript.extend(publish(&mut publisher, &mut subscriber, 1));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE"]));
    transcript.push(call(&mut subscriber, &["HELLO", "3"]));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE"]));
    transcript.push(call(&mut subscriber, &["SUBSCRIBE", "hs:c"]));
    transcript.extend(publish(&mut publisher, &mut subscriber, 1));
    transcript.push(call(&mut subscriber, &["GET", "hs:k"]));
    transcript.push(call(&mut subscriber, &["HELLO", "2"]));
    transcript.extend(publish(&mut publisher, &mut subscriber, 1));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE"]));
    transcript.push(call(&mut subscriber, &["UNSUBSCRIBE"]));
    transcript
}

pub fn hello_switch_is_followed_like_redis(port: u16) {
    let redis = ServerProcess::redis_server(&[]);
    let expected = hello_switch_transcript(redis.port);
    let got = hello_switch_transcript(port);
    assert_eq!(got, expected);
}

/// A subscriber with CLIENT REPLY OFF: its confirmations and messages are pushes and still
/// come (Redis 7.0), its other replies do not.
fn reply_off_transcript(port: u16, proto: &str) -> Vec<String> {
    let mut subscriber = RawClient::connect(port);
    let mut publisher = RawClient::connect(port);
    let send = |client: &mut RawClient, args: &[&str]| {
        client.send(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
    };
    let read = |client: &mut RawClient| show(&client.read_raw_reply());
    subscriber.call(&["HELLO", proto]);
    let mut transcript = Vec::new();
    send(&mut subscriber, &["CLIENT", "REPLY", "OFF"]);
    send(&mut subscriber, &["SUBSCRIBE", "ro:c"]);
    transcript.push(read(&mut subscriber));
    transcript.push(show(&publisher.call_raw(&[b"PUBLISH", b"ro:c", b"one"])));
    transcript.push(read(&mut subscriber));
    // Silenced: PING's answer; the next thing read is the second message.
    send(&mut subscriber, &["PING"]);
    transcript.push(show(&publisher.call_raw(&[b"PUBLISH", b"ro:c", b"two"])));
    transcript.push(read(&mut subscriber));
    send(&mut subscriber, &["UNSUBSCRIBE"]);
    transcript.push(read(&mut subscriber));
    send(&mut subscriber, &["CLIENT", "REPLY", "ON"]);
    transcript.push(read(&mut subscriber));
    transcript.push(show(&subscriber.call_raw(&[b"ECHO", b"end"])));
    transcript
}

pub fn reply_off_keeps_pushes_like_redis(port: u16) {
    let redis = ServerProcess::redis_server(&[]);
    for proto in ["2", "3"] {
        let expected = reply_off_transcript(redis.port, proto);
        assert_eq!(reply_off_transcript(port, proto), expected, "RESP{proto}");
    }
}
