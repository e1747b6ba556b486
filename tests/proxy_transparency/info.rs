//! INFO through the proxy: Redis 7.0's section selection and order, the proxy's own
//! sections, and the keyspace summed over the masters.

use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

/// The sections the proxy writes (the others describe the nodes; see `src/proxy/info.rs`).
const PROXY_SECTIONS: &[&str] = &[
    "Server",
    "Clients",
    "Stats",
    "Modules",
    "Commandstats",
    "Cluster",
    "Keyspace",
];

fn text(frame: Frame) -> String {
    String::from_utf8_lossy(frame.as_bytes().unwrap_or(b"")).into_owned()
}

fn headers(info: &str) -> Vec<String> {
    info.lines()
        .filter_map(|line| line.strip_prefix("# "))
        .map(str::to_string)
        .collect()
}

pub fn sections_follow_redis(port: u16) {
    let redis = ServerProcess::redis_server(&[]);
    let mut direct = RawClient::connect(redis.port);
    let mut via_proxy = RawClient::connect(port);
    for request in [
        &[][..],
        &["default"],
        &["all"],
        &["everything"],
        &["keyspace", "server"],
        &["CLIENTS", "server", "nosuch"],
        &["nosuch"],
        &["default", "commandstats"],
        &["commandstats", "modules"],
    ] {
        let mut command = vec!["INFO"];
        command.extend_from_slice(request);
        let expected: Vec<String> = headers(&text(direct.call(&command)))
            .into_iter()
            .filter(|h| PROXY_SECTIONS.contains(&h.as_str()))
            .collect();
        let got = headers(&text(via_proxy.call(&command)));
        assert_eq!(got, expected, "INFO {request:?}");
    }
    // The proxy's own description and counters, and the nodes' keys summed.
    let calls = |client: &mut RawClient, command: &str| -> i64 {
        let info = text(client.call(&["INFO", "commandstats"]));
        let prefix = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().expect("a count"))
    };
    let sets_before = calls(&mut via_proxy, "set");
    for i in 0..30 {
        via_proxy.call(&["SET", &format!("info-key-{i}"), "v"]);
    }
    assert_eq!(calls(&mut via_proxy, "set"), sets_before + 30);
    let keys = via_proxy.call(&["DBSIZE"]).as_integer().expect("DBSIZE");
    assert!(keys >= 30, "{keys}");
    let info = text(via_proxy.call(&["INFO", "server", "keyspace"]));
    for expected in [
        "server_name:slotproxy\r\n".to_string(),
        "redis_version:7.0.15\r\n".to_string(),
        "redis_mode:standalone\r\n".to_string(),
        format!("db0:keys={keys},"),
    ] {
        assert!(info.contains(&expected), "{expected:?} not in {info}");
    }
}
