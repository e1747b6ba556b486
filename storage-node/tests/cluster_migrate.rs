//! MIGRATE between real redis-server and storage-nodes, both ways: a cluster-mode sender
//! speaks RESTORE-ASKING, a standalone one RESTORE, and the keys arrive byte for byte (the
//! DUMP payloads on both sides are identical).

use std::time::{Duration, Instant};

use test_harness::{RawClient, ServerProcess};

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

/// Values of every string encoding: integers, short and long (LZF-compressed) strings,
/// binary, empty. One hash tag keeps them in one slot, as a multi-key MIGRATE needs in
/// cluster mode.
fn values() -> Vec<(String, Vec<u8>)> {
    let mut binary: Vec<u8> = (0..=255).collect();
    binary.extend_from_slice(b"\r\n\x00");
    vec![
        ("{m}int".into(), b"12345".to_vec()),
        ("{m}negative".into(), b"-9223372036854775808".to_vec()),
        ("{m}short".into(), b"hello".to_vec()),
        ("{m}long".into(), vec![b'a'; 2000]),
        (
            "{m}text".into(),
            b"the quick brown fox jumps over the lazy dog ".repeat(30),
        ),
        ("{m}binary".into(), binary),
        ("{m}empty".into(), Vec::new()),
        ("{m}volatile".into(), b"expires".to_vec()),
    ]
}

fn fill(client: &mut RawClient) -> Vec<Vec<u8>> {
    let mut dumps = Vec::new();
    for (key, value) in values() {
        let reply = client.call_raw(&[b"SET", key.as_bytes(), &value]);
        assert_eq!(reply, b"+OK\r\n");
        dumps.push(client.call_raw(&[b"DUMP", key.as_bytes()]));
    }
    client.call(&["PEXPIRE", "{m}volatile", "600000"]);
    dumps
}

fn dumps(client: &mut RawClient) -> Vec<Vec<u8>> {
    values()
        .iter()
        .map(|(key, _)| client.call_raw(&[b"DUMP", key.as_bytes()]))
        .collect()
}

fn migrate_all(from: &mut RawClient, to_port: u16, extra: &[&str]) -> String {
    let port = to_port.to_string();
    let keys: Vec<String> = values().into_iter().map(|(k, _)| k).collect();
    let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000"];
    args.extend_from_slice(extra);
    args.push("KEYS");
    args.extend(keys.iter().map(String::as_str));
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    text(&from.call_raw(&bytes))
}

fn assert_ttl_kept(client: &mut RawClient) {
    let ttl = client
        .call(&["PTTL", "{m}volatile"])
        .as_integer()
        .expect("pttl");
    assert!(ttl > 500_000 && ttl <= 600_000, "ttl {ttl}");
}

/// A cluster-mode server alone in its cluster, serving every slot.
fn lone_cluster_node(server: &ServerProcess) -> RawClient {
    let mut client = RawClient::connect(server.port);
    client.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = client.call(&["CLUSTER", "INFO"]);
        if text(info.as_bytes().unwrap_or(b"")).contains("cluster_state:ok") {
            return client;
        }
        assert!(Instant::now() < deadline, "cluster state did not become ok");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cluster_storage_node() -> ServerProcess {
    let dir = std::env::temp_dir().join(format!(
        "storage-node-cluster-migrate-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("node dir");
    let dir = dir.display().to_string();
    ServerProcess::storage_node(&["--dir", &dir, "--cluster-enabled", "yes"])
}

#[test]
fn real_cluster_node_to_storage_node_and_back() {
    let redis = ServerProcess::redis_server(&["--cluster-enabled", "yes"]);
    let node = ServerProcess::storage_node(&[]);
    let mut redis_client = lone_cluster_node(&redis);
    let mut node_client = RawClient::connect(node.port);
    let original = fill(&mut redis_client);

    // redis-server (cluster mode) sends RESTORE-ASKING; a standalone node takes it as RESTORE.
    assert_eq!(migrate_all(&mut redis_client, node.port, &[]), "+OK\r\n");
    assert_eq!(dumps(&mut node_client), original);
    assert_ttl_kept(&mut node_client);
    assert_eq!(
        text(&redis_client.call_raw(&[b"DBSIZE"])),
        ":0\r\n",
        "MIGRATE without COPY deletes the source keys"
    );

    // Back: the standalone node sends RESTORE to the cluster node, which serves every slot.
    assert_eq!(migrate_all(&mut node_client, redis.port, &[]), "+OK\r\n");
    assert_eq!(dumps(&mut redis_client), original);
    assert_ttl_kept(&mut redis_client);
    assert_eq!(text(&node_client.call_raw(&[b"DBSIZE"])), ":0\r\n");
}

#[test]
fn cluster_storage_node_to_real_standalone_with_auth_and_back() {
    let node = cluster_storage_node();
    let redis = ServerProcess::redis_server(&["--requirepass", "secret"]);
    let mut node_client = lone_cluster_node(&node);
    let mut redis_client = RawClient::connect(redis.port);
    redis_client.call(&["AUTH", "secret"]);
    let original = fill(&mut node_client);

    // A wrong password is the target's error; nothing moves.
    let reply = migrate_all(&mut node_client, redis.port, &["AUTH", "wrong"]);
    assert!(
        reply.starts_with("-ERR Target instance replied with error: WRONGPASS"),
        "{reply}"
    );
    assert_eq!(dumps(&mut node_client), original);

    // RESTORE-ASKING (the node is in cluster mode) on a standalone redis-server, with COPY.
    assert_eq!(
        migrate_all(
            &mut node_client,
            redis.port,
            &["COPY", "AUTH2", "default", "secret"]
        ),
        "+OK\r\n"
    );
    assert_eq!(dumps(&mut redis_client), original);
    assert_eq!(
        dumps(&mut node_client),
        original,
        "COPY keeps the source keys"
    );
    assert_ttl_kept(&mut redis_client);

    // Again without REPLACE: the target refuses the existing keys.
    let reply = migrate_all(&mut node_client, redis.port, &["AUTH", "secret"]);
    assert_eq!(
        reply,
        "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n"
    );

    // And back from redis-server into the cluster-mode storage-node, replacing its keys.
    node_client.call(&["FLUSHALL"]);
    assert_eq!(
        migrate_all(&mut redis_client, node.port, &["REPLACE"]),
        "+OK\r\n"
    );
    assert_eq!(dumps(&mut node_client), original);
    assert_ttl_kept(&mut node_client);
}
