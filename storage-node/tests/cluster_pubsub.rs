//! In cluster mode a PUBLISH on any node reaches subscribers on every node (over the
//! cluster bus), and SPUBLISH stays with the channel's slot owner, as in Redis Cluster.

use slotproxy::cluster::key_slot;
use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

fn message(frame: &Frame) -> Vec<String> {
    frame
        .as_array()
        .unwrap_or(&[])
        .iter()
        .map(|f| String::from_utf8_lossy(f.as_bytes().unwrap_or(b"")).into_owned())
        .collect()
}

#[test]
fn publish_reaches_subscribers_on_every_node() {
    let cluster = Cluster::storage_nodes(3);
    let mut subscribers: Vec<RawClient> = cluster
        .nodes
        .iter()
        .map(|n| {
            let mut c = RawClient::connect(n.port);
            c.call(&["SUBSCRIBE", "news"]);
            c
        })
        .collect();
    for (i, node) in cluster.nodes.iter().enumerate() {
        let text = format!("from-{i}");
        let mut publisher = RawClient::connect(node.port);
        // The reply counts local receivers only, as in Redis Cluster.
        assert_eq!(
            publisher.call(&["PUBLISH", "news", &text]),
            Frame::Integer(1)
        );
        for subscriber in subscribers.iter_mut() {
            let got = message(&subscriber.read_reply().0);
            assert_eq!(
                got,
                vec!["message".to_string(), "news".into(), text.clone()]
            );
        }
    }
    // Sharded: SPUBLISH goes to the slot's owner and reaches its SSUBSCRIBErs.
    let owner = cluster.node_for_slot(key_slot(b"{room}"));
    let mut shard_sub = RawClient::connect(cluster.nodes[owner].port);
    shard_sub.call(&["SSUBSCRIBE", "{room}a"]);
    let mut publisher = RawClient::connect(cluster.nodes[owner].port);
    assert_eq!(
        publisher.call(&["SPUBLISH", "{room}a", "hi"]),
        Frame::Integer(1)
    );
    assert_eq!(
        message(&shard_sub.read_reply().0),
        vec!["smessage", "{room}a", "hi"]
    );
    let other = (owner + 1) % cluster.nodes.len();
    let moved = RawClient::connect(cluster.nodes[other].port).call(&["SPUBLISH", "{room}a", "x"]);
    assert!(
        matches!(&moved, Frame::Error(e) if e.starts_with(b"MOVED")),
        "{moved:?}"
    );
}
