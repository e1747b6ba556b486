//! Blocking commands and pub/sub through the proxy.

use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

pub fn blocking_pop_woken_by_another_client(port: u16) {
    let mut waiter = RawClient::connect(port);
    let mut pusher = RawClient::connect(port);
    waiter.send(&[b"BLPOP", b"blk:list", b"10"]);
    // The pusher's reply proves the push happened; the waiter may have blocked before or
    // after it, and gets the element either way.
    assert_eq!(pusher.call(&["RPUSH", "blk:list", "x"]), Frame::Integer(1));
    assert_eq!(
        waiter.read_reply().0,
        Frame::Array(vec![Frame::bulk("blk:list"), Frame::bulk("x")])
    );
    // A short timeout expires with a null array.
    assert_eq!(
        waiter.call(&["BLPOP", "blk:empty", "0.05"]),
        Frame::NullArray
    );
    assert_eq!(
        waiter.call(&["BLPOP", "a", "b", "1"]),
        Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into())
    );
    // Pipelined around a blocking command, replies stay in order.
    waiter.send_raw(
        &[
            RawClient::encode(&[b"RPUSH", b"{q}l", b"1"]),
            RawClient::encode(&[b"BRPOP", b"{q}l", b"1"]),
            RawClient::encode(&[b"PING"]),
        ]
        .concat(),
    );
    assert_eq!(waiter.read_reply().0, Frame::Integer(1));
    assert_eq!(
        waiter.read_reply().0,
        Frame::Array(vec![Frame::bulk("{q}l"), Frame::bulk("1")])
    );
    assert_eq!(waiter.read_reply().0, Frame::Simple("PONG".into()));
}

fn message(frame: &Frame) -> (String, String) {
    let items = frame.as_array().expect("message frame");
    let text = |f: &Frame| String::from_utf8_lossy(f.as_bytes().unwrap_or(b"")).into_owned();
    (text(&items[items.len() - 2]), text(&items[items.len() - 1]))
}

pub fn pubsub_across_nodes(cluster: &Cluster, port: u16) {
    let mut subscriber = RawClient::connect(port);
    let confirmation = subscriber.call(&["SUBSCRIBE", "news", "sports"]);
    assert_eq!(
        confirmation,
        Frame::Array(vec![
            Frame::bulk("subscribe"),
            Frame::bulk("news"),
            Frame::Integer(1)
        ])
    );
    assert_eq!(
        subscriber.read_reply().0,
        Frame::Array(vec![
            Frame::bulk("subscribe"),
            Frame::bulk("sports"),
            Frame::Integer(2)
        ])
    );
    assert!(
        subscriber.call(&["GET", "x"]).is_error(),
        "RESP2 subscriber mode restricts commands"
    );
    // A message published on any node reaches the subscriber.
    for (i, node) in cluster.nodes.iter().enumerate() {
        let mut publisher = RawClient::connect(node.port);
        publisher.call(&["PUBLISH", "news", &format!("from-node-{i}")]);
        assert_eq!(
            subscriber.read_reply().0.as_array().map(<[Frame]>::len),
            Some(3)
        );
    }
    let mut publisher = RawClient::connect(port);
    assert!(matches!(publisher.call(&["PUBLISH", "sports", "goal"]), Frame::Integer(n) if n >= 1));
    assert_eq!(
        message(&subscriber.read_reply().0),
        ("sports".into(), "goal".into())
    );
    assert_eq!(
        subscriber
            .call(&["PSUBSCRIBE", "w*"])
            .as_array()
            .map(<[Frame]>::len),
        Some(3)
    );
    publisher.call(&["PUBLISH", "weather", "rain"]);
    let pmessage = subscriber.read_reply().0;
    assert_eq!(pmessage.as_array().map(<[Frame]>::len), Some(4));
    assert_eq!(message(&pmessage), ("weather".into(), "rain".into()));
    subscriber.call(&["UNSUBSCRIBE"]);
    subscriber.read_reply();
    subscriber.call(&["PUNSUBSCRIBE"]);
    assert_eq!(
        subscriber.call(&["PING"]),
        Frame::Simple("PONG".into()),
        "left subscriber mode"
    );
    // RESP3: messages are push frames and other commands work while subscribed.
    let mut resp3 = RawClient::connect(port);
    resp3.call(&["HELLO", "3"]);
    assert!(matches!(resp3.call(&["SUBSCRIBE", "news"]), Frame::Push(_)));
    assert_eq!(resp3.call(&["GET", "pubsub:nosuch"]), Frame::Null);
    publisher.call(&["PUBLISH", "news", "hello3"]);
    let push = resp3.read_reply().0;
    assert!(matches!(push, Frame::Push(_)), "{push:?}");
    assert_eq!(message(&push), ("news".into(), "hello3".into()));
}

pub fn sharded_pubsub(port: u16) {
    let mut subscriber = RawClient::connect(port);
    let reply = subscriber.call(&["SSUBSCRIBE", "{room}a", "{room}b"]);
    assert_eq!(
        reply,
        Frame::Array(vec![
            Frame::bulk("ssubscribe"),
            Frame::bulk("{room}a"),
            Frame::Integer(1)
        ])
    );
    subscriber.read_reply();
    assert_eq!(
        subscriber.call(&["SSUBSCRIBE", "x", "y"]),
        Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into())
    );
    let mut publisher = RawClient::connect(port);
    assert_eq!(
        publisher.call(&["SPUBLISH", "{room}b", "hi"]),
        Frame::Integer(1)
    );
    let smessage = subscriber.read_reply().0;
    assert_eq!(message(&smessage), ("{room}b".into(), "hi".into()));
}
