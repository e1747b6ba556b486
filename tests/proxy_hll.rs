//! HyperLogLog through slotproxy in front of three cluster-mode storage-nodes, compared
//! with a standalone redis-server 7.0: keys of one slot behave as on one server (replies
//! and the HLL bytes), several slots get Redis Cluster's CROSSSLOT, and the node
//! administration commands are refused as the README lists.

use slotproxy::cluster::key_slot;
use test_harness::{show, start_proxy, Cluster, RawClient, ServerProcess};

fn call(client: &mut RawClient, command: &[&str]) -> String {
    let args: Vec<&[u8]> = command.iter().map(|w| w.as_bytes()).collect();
    show(&client.call_raw(&args))
}

#[test]
fn hll_commands_follow_redis_cluster_rules_through_the_proxy() {
    let cluster = Cluster::storage_nodes(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    let redis = ServerProcess::redis_server(&[]);
    let mut through_proxy = RawClient::connect(proxy.port);
    let mut reference = RawClient::connect(redis.port);

    let elements: Vec<String> = (0..3000).map(|i| format!("visitor:{i}")).collect();
    let mut same_slot: Vec<Vec<&str>> = Vec::new();
    for (key, range) in [
        ("{day}1", 0..2000),
        ("{day}2", 1000..3000),
        ("{day}3", 0..40),
    ] {
        let mut add = vec!["PFADD", key];
        add.extend(elements[range].iter().map(String::as_str));
        same_slot.push(add);
    }
    let more: &[&[&str]] = &[
        &["PFCOUNT", "{day}1"],
        &["PFCOUNT", "{day}1", "{day}2", "{day}3"],
        &["PFMERGE", "{day}all", "{day}1", "{day}2"],
        &["PFCOUNT", "{day}all"],
        &["GET", "{day}all"],
        &["GET", "{day}3"],
        &["PFMERGE", "{day}3", "{day}3"],
        &["GET", "{day}3"],
    ];
    same_slot.extend(more.iter().map(|c| c.to_vec()));
    for command in &same_slot {
        assert_eq!(
            call(&mut through_proxy, command),
            call(&mut reference, command),
            "{:?}",
            &command[..command.len().min(3)]
        );
    }

    // Keys on different slots: each works alone; together they are refused.
    let (a, b) = ("visits:a", "visits:b");
    assert_ne!(key_slot(a.as_bytes()), key_slot(b.as_bytes()));
    assert_eq!(call(&mut through_proxy, &["PFADD", a, "x"]), ":1\\r\\n");
    assert_eq!(call(&mut through_proxy, &["PFADD", b, "y"]), ":1\\r\\n");
    let crossslot = "-CROSSSLOT Keys in request don't hash to the same slot\\r\\n";
    assert_eq!(call(&mut through_proxy, &["PFCOUNT", a, b]), crossslot);
    assert_eq!(call(&mut through_proxy, &["PFMERGE", a, b]), crossslot);
    assert_eq!(call(&mut through_proxy, &["PFCOUNT", a]), ":1\\r\\n");

    // PFMERGE with its destination alone: the one key routes it, as a Redis 7.0 cluster
    // answers -MOVED for it (the key specs of the sources do not fit, and sending it to any
    // node would create the key in a slot that node does not serve).
    let mut on_each_node = 0;
    for i in 0..200 {
        let key = format!("merged:{i}");
        assert_eq!(call(&mut through_proxy, &["PFMERGE", &key]), "+OK\\r\\n");
        assert_eq!(
            call(&mut through_proxy, &["EXISTS", &key]),
            ":1\\r\\n",
            "{key}"
        );
        assert_eq!(call(&mut through_proxy, &["PFCOUNT", &key]), ":0\\r\\n");
        let owner = cluster.node_for_slot(key_slot(key.as_bytes()));
        let other = (owner + 1) % cluster.nodes.len();
        let mut direct = RawClient::connect(cluster.nodes[other].port);
        let reply = call(&mut direct, &["PFMERGE", &key]);
        assert!(
            reply.starts_with("-MOVED "),
            "{key} on a node not serving it: {reply}"
        );
        on_each_node |= 1 << owner;
    }
    assert_eq!(on_each_node, 0b111, "the keys covered every node");
    // And on a key of another type, the node's error, as from redis-server.
    for command in [&["RPUSH", "{day}list", "x"][..], &["PFMERGE", "{day}list"]] {
        assert_eq!(
            call(&mut through_proxy, command),
            call(&mut reference, command)
        );
    }

    assert_eq!(
        call(&mut through_proxy, &["PFDEBUG", "GETREG", a]),
        "-ERR slotproxy: 'pfdebug' is not supported through the proxy\\r\\n"
    );
    assert!(call(&mut through_proxy, &["PFSELFTEST"])
        .starts_with("-ERR slotproxy: 'pfselftest' describes a single node"));
}
