//! INFO's section selection (several sections at once, `default`, `all`, `everything`),
//! the server mode in INFO and HELLO, and fields that must name what is really there,
//! compared with a real redis-server 7.0 where the values are comparable.

use slotproxy::resp::Frame;
use test_harness::cluster::start_storage_node;
use test_harness::{free_port, Differential, RawClient, ServerProcess};

fn info_text(client: &mut RawClient, args: &[&str]) -> String {
    match client.call(args) {
        Frame::Bulk(text) | Frame::Verbatim { text, .. } => {
            String::from_utf8_lossy(&text).into_owned()
        }
        other => panic!("INFO answered {other:?}"),
    }
}

/// The `# Section` headers of an INFO reply, in order.
fn headers(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("# "))
        .map(str::to_string)
        .collect()
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(str::to_string)
}

#[test]
fn info_selects_the_sections_redis_selects() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for args in [
            &["INFO"][..],
            &["INFO", "server", "clients"],
            &["INFO", "CLIENTS", "server"],
            &["INFO", "keyspace", "server", "keyspace"],
            &["INFO", "commandstats", "keyspace"],
            &["INFO", "default"],
            &["INFO", "all"],
            &["INFO", "everything"],
            &["INFO", "latencystats", "errorstats"],
            &["INFO", "default", "stats"],
            &["INFO", "errorstats"],
            &["INFO", "nosuchsection"],
            &["INFO", "memory", "nosuchsection"],
        ] {
            let node = headers(&info_text(&mut d.node_client, args));
            let redis = headers(&info_text(&mut d.redis_client, args));
            assert_eq!(node, redis, "{args:?}");
        }
    }
}

#[test]
fn errorstats_count_error_replies_by_their_code() {
    let mut d = Differential::start();
    d.check_all(&[
        &["CONFIG", "RESETSTAT"],
        &["SET", "s", "v"],
        &["LPUSH", "s", "x"],
        &["LPUSH", "s", "x"],
        &["NOSUCHCOMMAND"],
        &["GET"],
        &["INCR", "s"],
    ]);
    let node = info_text(&mut d.node_client, &["INFO", "errorstats"]);
    let redis = info_text(&mut d.redis_client, &["INFO", "errorstats"]);
    assert_eq!(node, redis);
    let node = info_text(&mut d.node_client, &["INFO", "stats"]);
    let redis = info_text(&mut d.redis_client, &["INFO", "stats"]);
    assert_eq!(
        field(&node, "total_error_replies"),
        field(&redis, "total_error_replies")
    );
    d.check(&["CONFIG", "RESETSTAT"]);
    let node = info_text(&mut d.node_client, &["INFO", "errorstats"]);
    let redis = info_text(&mut d.redis_client, &["INFO", "errorstats"]);
    assert_eq!(node, redis);
}

#[test]
fn cluster_mode_shows_in_info_and_hello() {
    let node = start_storage_node(free_port());
    let redis_dir = std::env::temp_dir().join(format!("slotproxy-info-cluster-{}", node.port));
    let _ = std::fs::remove_dir_all(&redis_dir);
    let _ = std::fs::create_dir_all(&redis_dir);
    let redis =
        ServerProcess::redis_server_on(free_port(), &redis_dir, &["--cluster-enabled", "yes"]);
    let standalone = Differential::start();
    let mut seen = Vec::new();
    for port in [
        node.port,
        redis.port,
        standalone.node.port,
        standalone.redis.port,
    ] {
        let mut client = RawClient::connect(port);
        let info = info_text(&mut client, &["INFO", "server"]);
        let hello = client.call(&["HELLO", "3"]);
        let Frame::Map(pairs) = hello else {
            panic!("HELLO 3 answered {hello:?}")
        };
        let mode = pairs
            .iter()
            .find(|(k, _)| *k == Frame::bulk("mode"))
            .map(|(_, v)| format!("{v:?}"));
        seen.push((field(&info, "redis_mode"), mode));
    }
    assert_eq!(seen[0], seen[1], "cluster mode");
    assert_eq!(seen[2], seen[3], "standalone");
    assert_ne!(seen[0], seen[2]);
}

#[test]
fn mem_allocator_names_the_linked_allocator() {
    let node = ServerProcess::storage_node(&[]);
    let mut client = RawClient::connect(node.port);
    let info = info_text(&mut client, &["INFO", "memory"]);
    // The binary links jemalloc as its global allocator (storage-node/src/main.rs).
    let allocator = field(&info, "mem_allocator").expect("mem_allocator");
    assert!(allocator.starts_with("jemalloc-5."), "{allocator}");
}

/// `cmdstat_<name>:calls=..,rejected_calls=..,failed_calls=..` lines, sorted, without the
/// timings (which differ run to run).
fn command_counts(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("cmdstat_"))
        .map(|l| {
            l.split([':', ','])
                .filter(|part| !part.starts_with("usec"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn commandstats_count_calls_rejections_and_failures() {
    let mut d = Differential::start();
    d.check_all(&[
        &["CONFIG", "RESETSTAT"],
        &["SET", "a", "1"],
        &["GET", "a"],
        &["GET"],
        &["LPUSH", "a", "x"],
        &["MULTI"],
        &["SET", "b", "2"],
        &["INCR", "b"],
        &["EXEC"],
        &["CONFIG", "GET", "hz"],
        &["NOSUCHCOMMAND"],
        &["SUBSCRIBE", "ch"],
        &["GET", "a"],
        &["UNSUBSCRIBE"],
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "a"],
    ]);
    let node = info_text(&mut d.node_client, &["INFO", "commandstats"]);
    let redis = info_text(&mut d.redis_client, &["INFO", "commandstats"]);
    let node_counts = command_counts(&node);
    assert!(!node_counts.is_empty());
    assert_eq!(node_counts, command_counts(&redis));
    // Not in `default`.
    let node = headers(&info_text(&mut d.node_client, &["INFO"]));
    assert!(!node.contains(&"# Commandstats".to_string()));
}

/// `latency_percentiles_usec_<name>` with the percentile names, sorted, without values.
fn latency_keys(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("latency_percentiles_usec_"))
        .map(|l| {
            l.split([':', ','])
                .map(|part| part.split('=').next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn latencystats_follow_the_tracking_settings() {
    let mut d = Differential::start();
    d.check_all(&[
        &["CONFIG", "RESETSTAT"],
        &["SET", "a", "1"],
        &["GET", "a"],
        &["GET"],
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 99.99 100 0",
        ],
        &["CONFIG", "GET", "latency-tracking-info-percentiles"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "101"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "x"],
    ]);
    let node = info_text(&mut d.node_client, &["INFO", "latencystats"]);
    let redis = info_text(&mut d.redis_client, &["INFO", "latencystats"]);
    assert!(!latency_keys(&node).is_empty());
    assert_eq!(latency_keys(&node), latency_keys(&redis));
    d.check_all(&[
        &["CONFIG", "RESETSTAT"],
        &["CONFIG", "SET", "latency-tracking", "no"],
        &["GET", "a"],
        &["CONFIG", "GET", "latency-tracking"],
        &["CONFIG", "SET", "latency-tracking", "yes"],
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 99 99.9",
        ],
    ]);
    let node = info_text(&mut d.node_client, &["INFO", "latencystats"]);
    let redis = info_text(&mut d.redis_client, &["INFO", "latencystats"]);
    assert_eq!(latency_keys(&node), latency_keys(&redis));
}
