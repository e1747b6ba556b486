//! Keyspace notifications through the proxy: every master's events reach a subscriber
//! once, also after a master joins the cluster.
//!
//! Events from different masters travel on different connections, so their order is not
//! defined; to know that everything has arrived, a "fence" key is then written on every
//! master: each master's events arrive in order, so once every fence's event is in, every
//! earlier event (and any duplicate of one) is in too.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use slotproxy::cluster::key_slot;
use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

const DEADLINE: Duration = Duration::from_secs(60);

fn ok(frame: Frame) {
    assert_eq!(frame, Frame::Simple("OK".into()));
}

fn text(frame: &Frame) -> String {
    match frame.as_array() {
        Some(items) => items.iter().map(text).collect::<Vec<_>>().join(" "),
        None => match frame {
            Frame::Integer(n) => n.to_string(),
            other => String::from_utf8_lossy(other.as_bytes().unwrap_or(b"?")).into_owned(),
        },
    }
}

/// The two events a SET of `key` causes for this test's subscriptions.
fn set_events(key: &str) -> [String; 2] {
    [
        format!("pmessage __keyspace@0__:* __keyspace@0__:{key} set"),
        format!("message __keyevent@0__:set {key}"),
    ]
}

fn node_id(port: u16) -> String {
    text(&RawClient::connect(port).call(&["CLUSTER", "MYID"]))
}

/// Writes a fence key on every master (one per `tags` entry, a hash tag the master owns)
/// and reads events until each fence's event is in. Returns every event read, counted.
fn read_through_fences(
    subscriber: &mut RawClient,
    writer: &mut RawClient,
    tags: &[String],
    round: usize,
) -> BTreeMap<String, usize> {
    let fences: Vec<String> = tags
        .iter()
        .map(|t| format!("{{{t}}}fence-{round}"))
        .collect();
    for fence in &fences {
        ok(writer.call(&["SET", fence, "f"]));
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let done = |seen: &BTreeMap<String, usize>| {
        fences.iter().all(|f| seen.contains_key(&set_events(f)[1]))
    };
    for _ in 0..100_000 {
        if done(&seen) {
            return seen;
        }
        *seen.entry(text(&subscriber.read_reply().0)).or_default() += 1;
    }
    panic!("fences never arrived; seen {seen:?}");
}

fn expected(keys: &[String], tags: &[String], round: usize) -> BTreeMap<String, usize> {
    let fences = tags.iter().map(|t| format!("{{{t}}}fence-{round}"));
    keys.iter()
        .cloned()
        .chain(fences)
        .flat_map(|k| set_events(&k))
        .map(|e| (e, 1))
        .collect()
}

pub fn events_from_every_master_arrive_once(cluster: &mut Cluster, port: u16) {
    for node in &cluster.nodes {
        ok(RawClient::connect(node.port).call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]));
    }
    let mut subscriber = RawClient::connect(port);
    let confirm = subscriber.call(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    assert_eq!(text(&confirm), "psubscribe __keyspace@0__:* 1");
    let confirm = subscriber.call(&["SUBSCRIBE", "__keyevent@0__:set"]);
    assert_eq!(text(&confirm), "subscribe __keyevent@0__:set 2");
    let mut writer = RawClient::connect(port);

    let keys: Vec<String> = (0..30).map(|i| format!("ks-{i}")).collect();
    let owners: Vec<usize> = keys
        .iter()
        .map(|k| cluster.node_for_slot(key_slot(k.as_bytes())))
        .collect();
    // A hash tag each master owns, for its fence keys.
    let mut tags: Vec<String> = (0..cluster.nodes.len())
        .map(|n| {
            let i = owners
                .iter()
                .position(|&o| o == n)
                .unwrap_or_else(|| panic!("no test key on master {n}"));
            keys[i].clone()
        })
        .collect();
    for key in &keys {
        ok(writer.call(&["SET", key, "v"]));
    }
    assert_eq!(
        read_through_fences(&mut subscriber, &mut writer, &tags, 0),
        expected(&keys, &tags, 0)
    );

    // A fourth master joins and takes over one (empty) slot.
    let extra = cluster.spare_node();
    let mut joined = RawClient::connect(extra.port);
    ok(joined.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]));
    let seed = cluster.nodes[0].port.to_string();
    ok(joined.call(&["CLUSTER", "MEET", "127.0.0.1", &seed]));
    cluster.nodes.push(extra);
    // Met means every node lists every other by its real id, no handshake left.
    let ids: Vec<String> = cluster.nodes.iter().map(|n| node_id(n.port)).collect();
    let deadline = Instant::now() + DEADLINE;
    while !cluster.nodes.iter().all(|n| {
        let nodes = text(&RawClient::connect(n.port).call(&["CLUSTER", "NODES"]));
        ids.iter().all(|id| nodes.contains(id.as_str())) && !nodes.contains("handshake")
    }) {
        assert!(Instant::now() < deadline, "the new master was not met");
        std::thread::sleep(Duration::from_millis(100));
    }
    let moved = "ks-moved".to_string();
    let slot = key_slot(moved.as_bytes()).to_string();
    let source = cluster.node_for_slot(key_slot(moved.as_bytes()));
    let source_port = cluster.nodes[source].port;
    let target_port = cluster.nodes[3].port;
    let (source_id, target_id) = (node_id(source_port), node_id(target_port));
    ok(RawClient::connect(target_port).call(&[
        "CLUSTER",
        "SETSLOT",
        &slot,
        "IMPORTING",
        &source_id,
    ]));
    ok(RawClient::connect(source_port).call(&[
        "CLUSTER",
        "SETSLOT",
        &slot,
        "MIGRATING",
        &target_id,
    ]));
    for port in [target_port, source_port] {
        ok(RawClient::connect(port).call(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]));
    }
    for node in &cluster.nodes {
        RawClient::connect(node.port).call(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
    }
    cluster.wait_until_consistent();
    // The proxy learns the new master from the redirect; the subscriber's session then
    // subscribes there too, which the new master shows as one pattern subscription.
    assert_eq!(writer.call(&["GET", &moved]), Frame::Null);
    let deadline = Instant::now() + DEADLINE;
    while joined.call(&["PUBSUB", "NUMPAT"]) != Frame::Integer(1) {
        assert!(
            Instant::now() < deadline,
            "no subscription reached the new master"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    ok(writer.call(&["SET", &moved, "v"]));
    tags.push(moved.clone());
    assert_eq!(
        read_through_fences(&mut subscriber, &mut writer, &tags, 1),
        expected(&[moved], &tags, 1)
    );

    // The new master goes away: the subscriber keeps every other master's events, once.
    if let Some(mut gone) = cluster.nodes.pop() {
        gone.kill();
    }
    tags.pop();
    let keys: Vec<String> = keys.iter().map(|k| format!("{{{k}}}after")).collect();
    for key in &keys {
        ok(writer.call(&["SET", key, "v"]));
    }
    assert_eq!(
        read_through_fences(&mut subscriber, &mut writer, &tags, 2),
        expected(&keys, &tags, 2)
    );
}
