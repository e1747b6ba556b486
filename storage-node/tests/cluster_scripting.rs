//! Scripts in cluster mode may only touch keys this node serves, with Redis 7.0's errors:
//! a storage-node cluster and a real Redis Cluster answer the same scripts byte for byte
//! (7.0 lets a script use undeclared keys of other local slots; both do).

use slotproxy::cluster::key_slot;
use test_harness::{Cluster, RawClient};

/// Runs each script on the node owning `{a}`, in both clusters, and compares the replies.
#[test]
fn scripts_stay_in_their_slot_like_redis_cluster() {
    let ours = Cluster::storage_nodes(3);
    let theirs = Cluster::redis(3);
    let home = key_slot(b"a");
    // A key on another node, and a key on the same node but in another slot.
    let remote_key = (0..10_000)
        .map(|i| format!("k{i}"))
        .find(|k| {
            ours.node_for_slot(key_slot(k.as_bytes())) != ours.node_for_slot(home)
                && theirs.node_for_slot(key_slot(k.as_bytes())) != theirs.node_for_slot(home)
        })
        .expect("a remote key");
    let local_other_slot = (0..10_000)
        .map(|i| format!("j{i}"))
        .find(|k| {
            let s = key_slot(k.as_bytes());
            s != home
                && ours.node_for_slot(s) == ours.node_for_slot(home)
                && theirs.node_for_slot(s) == theirs.node_for_slot(home)
        })
        .expect("a local key in another slot");
    let scripts: Vec<(String, Vec<String>)> = vec![
        (
            "return redis.call('SET', KEYS[1], 'v')".into(),
            vec!["{a}x".into()],
        ),
        (
            "return redis.call('GET', KEYS[1])".into(),
            vec!["{a}x".into()],
        ),
        (
            format!("return redis.call('GET', '{remote_key}')"),
            vec!["{a}x".into()],
        ),
        (
            format!("return redis.call('GET', '{local_other_slot}')"),
            vec!["{a}x".into()],
        ),
        (
            format!("return redis.call('GET', '{local_other_slot}')"),
            vec![],
        ),
        (
            format!(
                "#!lua flags=allow-cross-slot-keys\nreturn redis.call('GET', '{local_other_slot}')"
            ),
            vec!["{a}x".into()],
        ),
        (
            format!("return redis.pcall('GET', '{remote_key}')"),
            vec!["{a}x".into()],
        ),
    ];
    let mut ours_client = RawClient::connect(ours.nodes[ours.node_for_slot(home)].port);
    let mut theirs_client = RawClient::connect(theirs.nodes[theirs.node_for_slot(home)].port);
    for (script, keys) in &scripts {
        let numkeys = keys.len().to_string();
        let mut args: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), numkeys.as_bytes()];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        let a = ours_client.call_raw(&args);
        let b = theirs_client.call_raw(&args);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "script {script:?} keys {keys:?}"
        );
    }
}
