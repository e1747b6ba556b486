//! AUTH and HELLO through a proxy with users configured, against a redis-server whose
//! default user has a password and which has a second ACL user.

use std::sync::atomic::{AtomicUsize, Ordering};

use slotproxy::resp::Frame;
use test_harness::{show, RawClient, ServerProcess};

/// A proxy configuration with the same users the redis-server below gets.
pub fn users_config() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "slotproxy-users-{}-{}.yaml",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(
        &path,
        "users:\n  - { name: default, password: secret }\n  - { name: alice, password: pw }\n",
    )
    .expect("write proxy config");
    path.to_string_lossy().into_owned()
}

fn redis_with_users() -> ServerProcess {
    let redis = ServerProcess::redis_server(&["--requirepass", "secret"]);
    let mut admin = RawClient::connect(redis.port);
    assert_eq!(admin.call(&["AUTH", "secret"]), Frame::Simple("OK".into()));
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "alice", "on", ">pw", "~*", "&*", "+@all"]),
        Frame::Simple("OK".into())
    );
    redis
}

/// Requests whose replies must be byte-identical, on one connection each, in order. The
/// session starts unauthenticated.
const SESSION: &[&[&str]] = &[
    &["PING"],
    &["GET", "k"],
    &["HELLO", "3"],
    &["HELLO", "2", "SETNAME", "x"],
    &["HELLO", "4"],
    &["HELLO", "three"],
    &["HELLO", "3", "AUTH", "default"],
    &["HELLO", "3", "AUTH", "default", "wrong"],
    &["HELLO", "3", "AUTH", "nobody", "secret"],
    &["AUTH", "wrong"],
    &["AUTH", "alice", "wrong"],
    &["AUTH", "a", "b", "c"],
    &["AUTH"],
    &["NOSUCH", "a", "b"],
    &["AUTH", "alice", "pw"],
    &["AUTH", "secret"],
    &["HELLO", "3", "FOO"],
    &["HELLO", "3", "SETNAME", "bad name"],
    &["CLIENT", "SETNAME", "bad name"],
    &["AUTH", "default", "secret"],
    &["CONFIG", "NOSUCH"],
    &["CONFIG"],
    &["CONFIG", "GET"],
    &["CLIENT", "NOSUCH"],
    &["NOSUCH", "a", "b"],
    &["GET"],
];

pub fn auth_session_matches_redis(port: u16) {
    let redis = redis_with_users();
    let mut via_proxy = RawClient::connect(port);
    let mut direct = RawClient::connect(redis.port);
    for command in SESSION {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        let proxied = via_proxy.call_raw(&args);
        let expected = direct.call_raw(&args);
        assert_eq!(show(&proxied), show(&expected), "{command:?}");
    }
}

/// HELLO with AUTH on a fresh connection: the proxy names itself but otherwise answers
/// like the standalone redis-server, field for field.
pub fn hello_describes_the_proxy(port: u16) {
    let redis = redis_with_users();
    let hello = ["HELLO", "3", "AUTH", "alice", "pw", "SETNAME", "me"];
    let proxied = RawClient::connect(port).call(&hello);
    let expected = RawClient::connect(redis.port).call(&hello);
    let fields = |frame: &Frame| -> Vec<(String, Frame)> {
        let Frame::Map(pairs) = frame else {
            panic!("HELLO answered {frame:?}");
        };
        pairs
            .iter()
            .map(|(k, v)| {
                let key = String::from_utf8_lossy(k.as_bytes().unwrap_or(b"")).into_owned();
                (key, v.clone())
            })
            .filter(|(k, _)| k != "id")
            .collect()
    };
    let mut expected = fields(&expected);
    for (key, value) in &mut expected {
        if key == "server" {
            *value = Frame::bulk("slotproxy");
        }
    }
    assert_eq!(fields(&proxied), expected);
}

/// A cluster node (either backend) describes itself in HELLO as redis-server does in
/// cluster mode: the redis-cluster run checks the expectation, the storage-node run the node.
pub fn cluster_node_hello_says_cluster(node_port: u16) {
    let hello = RawClient::connect(node_port).call(&["HELLO", "3"]);
    let Frame::Map(pairs) = hello else {
        panic!("HELLO answered {hello:?}");
    };
    let fields: Vec<(String, Frame)> = pairs
        .into_iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k.as_bytes().unwrap_or(b"")).into_owned(),
                v,
            )
        })
        .filter(|(k, _)| k != "id")
        .collect();
    let expected = vec![
        ("server".to_string(), Frame::bulk("redis")),
        ("version".to_string(), Frame::bulk("7.0.15")),
        ("proto".to_string(), Frame::Integer(3)),
        ("mode".to_string(), Frame::bulk("cluster")),
        ("role".to_string(), Frame::bulk("master")),
        ("modules".to_string(), Frame::Array(Vec::new())),
    ];
    assert_eq!(fields, expected);
}
