//! Replicas behind the proxy, on a real Redis 7.0 Cluster (3 masters, one replica each):
//! `read_from` routing (global and per user, reloaded live on SIGHUP), and the admin API's
//! shard view and "add a replica" call.
//!
//! Where a read ran is checked on the nodes themselves: `INFO commandstats` of the key's
//! master and of its replica, zeroed first with `CONFIG RESETSTAT`.

use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::cluster::{start_proxy_with_config, write_proxy_config};
use test_harness::http::{get, request};
use test_harness::{wait_until, Cluster, RawClient};

const TOKEN: &str = "replica-token";
const USERS: &str = "users:\n  - { name: reader, password: r, read_from: replica }\n  - { name: app, password: a }\n";

/// `calls` of `cmdstat_get` on the node at `port` (0 when it ran none).
fn gets_on(port: u16) -> u64 {
    let reply = RawClient::connect(port).call(&["INFO", "commandstats"]);
    let text = String::from_utf8_lossy(reply.as_bytes().unwrap_or(b"")).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("cmdstat_get:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn client_as(proxy: u16, user: &str, password: &str) -> RawClient {
    let mut client = RawClient::connect(proxy);
    assert_eq!(
        client.call(&["AUTH", user, password]),
        Frame::Simple("OK".into())
    );
    client
}

#[test]
fn reads_follow_read_from_and_shards_are_managed() {
    let cluster = Cluster::redis_with_replicas(3);
    let admin_extra = format!("  token: {TOKEN}\n");
    let (proxy, path) = start_proxy_with_config(&cluster.seeds(), &admin_extra, USERS);
    let admin = proxy.admin_port().expect("admin port announced");
    let master = cluster.node_for_slot(slotproxy::cluster::key_slot(b"rf:key"));
    let replica = cluster.replica_of(master).expect("a replica");
    let (master_port, replica_port) = (cluster.nodes[master].port, cluster.nodes[replica].port);

    let mut app = client_as(proxy.port, "app", "a");
    assert_eq!(
        app.call(&["SET", "rf:key", "v1"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(app.call(&["WAIT", "1", "5000"]), Frame::Integer(1));
    for node in &cluster.nodes {
        RawClient::connect(node.port).call(&["CONFIG", "RESETSTAT"]);
    }
    // The proxy learns the replicas with its first refreshes (Redis shows a replica as
    // `loading` until the others hear its offset): the reader's GET then reaches it.
    let mut reader = client_as(proxy.port, "reader", "r");
    wait_until(Duration::from_secs(15), "a read on the replica", || {
        let reply = reader.call(&["GET", "rf:key"]);
        assert!(
            reply == Frame::Bulk("v1".into()) || reply.is_error(),
            "{reply:?}"
        );
        gets_on(replica_port) > 0
    });
    let on_master = gets_on(master_port);
    // The global setting is `master`: the other user's reads stay on the master.
    assert_eq!(app.call(&["GET", "rf:key"]), Frame::Bulk("v1".into()));
    assert_eq!(gets_on(master_port), on_master + 1);
    // Writes never go to a replica, whoever sends them.
    assert_eq!(
        reader.call(&["SET", "rf:key", "v2"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(app.call(&["GET", "rf:key"]), Frame::Bulk("v2".into()));

    // Live: `read_from: prefer-replica` for everyone, reloaded on SIGHUP.
    write_proxy_config(
        &path,
        proxy.port,
        &cluster.seeds(),
        &admin_extra,
        &format!("{USERS}read_from: prefer-replica\n"),
    );
    proxy.signal("HUP");
    let before = gets_on(replica_port);
    wait_until(
        Duration::from_secs(10),
        "the app's reads on the replica",
        || {
            app.call(&["GET", "rf:key"]);
            gets_on(replica_port) > before
        },
    );

    // The shard view: three masters, each with its replica, links up.
    let shards = get(admin, "/v1/shards");
    assert_eq!(shards.status, 200, "{shards:?}");
    let view: serde_json::Value = serde_json::from_str(&shards.body).expect("JSON");
    let list = view["shards"].as_array().expect("shards");
    assert_eq!(list.len(), 3, "{view}");
    for shard in list {
        let replicas = shard["replicas"].as_array().expect("replicas");
        assert_eq!(replicas.len(), 1, "{shard}");
        assert_eq!(replicas[0]["link"], "up", "{shard}");
        assert!(replicas[0]["lag_bytes"].is_u64(), "{shard}");
    }

    // Adding a replica: refused without the token, then met and attached.
    let spare = cluster.spare_node();
    let add = format!("/v1/shards/127.0.0.1:{master_port}/replicas");
    let body = format!(r#"{{"addr": "127.0.0.1:{}"}}"#, spare.port);
    assert_eq!(request(admin, "POST", &add, None, &body).status, 401);
    let unknown = request(
        admin,
        "POST",
        "/v1/shards/nosuchnode/replicas",
        Some(TOKEN),
        &body,
    );
    assert_eq!(unknown.status, 404, "{unknown:?}");
    let added = request(admin, "POST", &add, Some(TOKEN), &body);
    assert_eq!(added.status, 200, "{added:?}");
    wait_until(Duration::from_secs(30), "the new replica synced", || {
        let view: serde_json::Value =
            serde_json::from_str(&get(admin, "/v1/shards").body).unwrap_or_default();
        view["shards"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|shard| {
                shard["master"]["addr"] == format!("127.0.0.1:{master_port}").as_str()
                    && shard["replicas"].as_array().is_some_and(|r| {
                        r.len() == 2
                            && r.iter().all(|replica| replica["link"] == "up")
                            && r.iter().any(|replica| {
                                replica["addr"] == format!("127.0.0.1:{}", spare.port).as_str()
                            })
                    })
            })
    });
    assert_eq!(
        RawClient::connect(spare.port).call(&["GET", "rf:key"]),
        Frame::Error(
            format!(
                "MOVED {} 127.0.0.1:{master_port}",
                slotproxy::cluster::key_slot(b"rf:key")
            )
            .into()
        ),
        "a replica without READONLY redirects to its master"
    );
}
