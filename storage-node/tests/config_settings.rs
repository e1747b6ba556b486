//! Every Redis 7.0 setting a client may send with CONFIG SET / GET: the node accepts it
//! (honoured, or as a documented no-op) and shows it in Redis's format, so CONFIG GET of
//! each name answers the same bytes on the node and on a real redis-server.

use slotproxy::resp::Frame;
use test_harness::{show, Differential};

/// Settings whose values differ between the two processes for reasons other than the node:
/// the harness starts redis-server with its own port, directory, `bind`, `save`,
/// `appendonly`, `logfile` and `daemonize` flags.
const PER_PROCESS: &[&str] = &[
    "port",
    "dir",
    "bind",
    "save",
    "appendonly",
    "logfile",
    "daemonize",
];

/// Settings another change gives the node (`enable-debug-command`, `protected-mode`).
const OWNED_ELSEWHERE: &[&str] = &["enable-debug-command", "protected-mode"];

fn redis_setting_names(d: &mut Differential) -> Vec<String> {
    let Frame::Array(items) = d.redis_client.call(&["CONFIG", "GET", "*"]) else {
        panic!("CONFIG GET * did not answer an array");
    };
    items
        .chunks(2)
        .filter_map(|pair| match &pair[0] {
            Frame::Bulk(name) => Some(String::from_utf8_lossy(name).into_owned()),
            _ => None,
        })
        .collect()
}

fn mismatches(d: &mut Differential, commands: &[Vec<String>]) -> Vec<String> {
    let mut differ = Vec::new();
    for command in commands {
        let (node, redis) = d.both_raw(command);
        if node != redis {
            differ.push(format!(
                "{command:?}: node {} redis {}",
                show(&node),
                show(&redis)
            ));
        }
    }
    differ
}

#[test]
fn config_get_of_every_redis_setting_answers_as_redis() {
    let mut d = Differential::start();
    let names = redis_setting_names(&mut d);
    assert!(names.len() > 150, "only {} settings", names.len());
    let commands: Vec<Vec<String>> = names
        .iter()
        .filter(|n| !PER_PROCESS.contains(&n.as_str()) && !OWNED_ELSEWHERE.contains(&n.as_str()))
        .map(|n| vec!["CONFIG".into(), "GET".into(), n.clone()])
        .collect();
    let differ = mismatches(&mut d, &commands);
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

#[test]
fn config_set_accepts_checks_and_shows_settings_as_redis() {
    let mut d = Differential::start();
    let settings: &[(&str, &str)] = &[
        ("list-compress-depth", "2"),
        ("list-compress-depth", "-1"),
        ("maxmemory", "100mb"),
        ("maxmemory", "lots"),
        ("maxmemory-policy", "ALLKEYS-LRU"),
        ("maxmemory-policy", "sometimes"),
        ("slave-read-only", "no"),
        ("appendfsync", "always"),
        ("activerehashing", "maybe"),
        ("active-defrag-cycle-min", "100"),
        ("tcp-keepalive", "abc"),
        ("hll-sparse-max-bytes", "1k"),
        ("stream-node-max-entries", "50"),
        ("lfu-log-factor", "5"),
        ("daemonize", "yes"),
        ("dbfilename", "other.rdb"),
        ("cluster-announce-port", "70000"),
        ("cluster-migration-barrier", "3"),
        ("cluster-migration-barrier", "-1"),
        ("cluster-allow-replica-migration", "no"),
    ];
    let mut commands = Vec::new();
    for (name, value) in settings {
        commands.push(vec![
            "CONFIG".into(),
            "SET".into(),
            name.to_string(),
            value.to_string(),
        ]);
        commands.push(vec!["CONFIG".into(), "GET".into(), name.to_string()]);
    }
    commands.push(vec![
        "CONFIG".into(),
        "GET".into(),
        "replica-read-only".into(),
    ]);
    let differ = mismatches(&mut d, &commands);
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    // A pattern lists aliases beside the names (in Redis's hash order, so compared sorted).
    for pattern in ["*slave*", "list-*", "*maxmemory*"] {
        let (node, redis) = d.both(&["CONFIG", "GET", pattern]);
        assert_eq!(sorted_pairs(node), sorted_pairs(redis), "{pattern}");
    }
}

fn sorted_pairs(reply: Frame) -> Vec<(Vec<u8>, Vec<u8>)> {
    let Frame::Array(items) = reply else {
        panic!("CONFIG GET did not answer an array: {reply:?}");
    };
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = items
        .chunks(2)
        .map(|pair| match pair {
            [Frame::Bulk(name), Frame::Bulk(value)] => (name.to_vec(), value.to_vec()),
            other => panic!("not a name and a value: {other:?}"),
        })
        .collect();
    pairs.sort();
    pairs
}

#[test]
fn encoding_settings_shape_object_encoding_as_in_redis() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["FLUSHALL"],
            &[
                "CONFIG",
                "SET",
                "list-compress-depth",
                "1",
                "list-max-listpack-size",
                "2",
            ],
            &["RPUSH", "l", "a", "b", "c", "d", "e"],
            &["OBJECT", "ENCODING", "l"],
            &["LRANGE", "l", "0", "-1"],
            &["CONFIG", "SET", "hash-max-listpack-entries", "2"],
            &["HSET", "h", "a", "1", "b", "2"],
            &["OBJECT", "ENCODING", "h"],
            &["HSET", "h", "c", "3"],
            &["OBJECT", "ENCODING", "h"],
            &["CONFIG", "SET", "set-max-intset-entries", "2"],
            &["SADD", "s", "1", "2"],
            &["OBJECT", "ENCODING", "s"],
            &["SADD", "s", "3"],
            &["OBJECT", "ENCODING", "s"],
            &[
                "CONFIG",
                "SET",
                "zset-max-listpack-entries",
                "1",
                "zset-max-listpack-value",
                "3",
            ],
            &["ZADD", "z", "1", "a"],
            &["OBJECT", "ENCODING", "z"],
            &["ZADD", "z2", "1", "long-member"],
            &["OBJECT", "ENCODING", "z2"],
            &["ZADD", "z", "2", "b"],
            &["OBJECT", "ENCODING", "z"],
            &[
                "CONFIG",
                "SET",
                "hash-max-listpack-entries",
                "512",
                "set-max-intset-entries",
                "512",
            ],
            &[
                "CONFIG",
                "SET",
                "zset-max-listpack-entries",
                "128",
                "zset-max-listpack-value",
                "64",
            ],
        ]);
    }
}

/// Redis 7.0's CONFIG GET of several patterns (each setting once) and CONFIG SET of several
/// settings in one call: all or nothing, with its error texts.
#[test]
fn several_settings_in_one_config_call_as_in_redis() {
    let mut d = Differential::start();
    let get_sorted = |d: &mut Differential, args: &[&str]| {
        let (node, redis) = d.both(args);
        assert_eq!(sorted_pairs(node), sorted_pairs(redis), "{args:?}");
    };
    get_sorted(&mut d, &["CONFIG", "GET", "hz", "maxclients"]);
    get_sorted(
        &mut d,
        &["CONFIG", "GET", "slowlog-*", "slowlog-max-len", "hz", "HZ"],
    );
    get_sorted(&mut d, &["CONFIG", "GET", "nosuch", "latency-*"]);
    d.check_all(&[
        &[
            "CONFIG",
            "SET",
            "slowlog-max-len",
            "5",
            "hz",
            "20",
            "latency-monitor-threshold",
            "3",
        ],
        &["CONFIG", "GET", "slowlog-max-len"],
        &["CONFIG", "GET", "hz"],
        &["CONFIG", "GET", "latency-monitor-threshold"],
        // One bad value and nothing changes.
        &[
            "CONFIG",
            "SET",
            "slowlog-max-len",
            "6",
            "hz",
            "40",
            "lfu-log-factor",
            "x",
        ],
        &["CONFIG", "SET", "hz", "40", "maxclients", "0"],
        &["CONFIG", "SET", "hz", "40", "nosuch", "1"],
        &["CONFIG", "SET", "hz", "40", "HZ", "50"],
        &["CONFIG", "SET", "hz", "40", "slowlog-max-len"],
        &["CONFIG", "GET", "slowlog-max-len"],
        &["CONFIG", "GET", "hz"],
        &["CONFIG", "GET", "lfu-log-factor"],
    ]);
}
