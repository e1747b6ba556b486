//! `maxmemory` and eviction: the replies compared with a real redis-server (the OOM error
//! in plain commands, MULTI/EXEC and scripts, the memory settings, INFO memory's fields),
//! then what each `maxmemory-policy` evicts once writes go past the limit.
//!
//! The limits are set relative to the node's own `used_memory` when the test starts, so
//! they hold whatever the process needs for itself. Every write loop is bounded.

use slotproxy::resp::Frame;
use test_harness::{info_field, Differential, RawClient, ServerProcess};

/// Bytes of each value written to fill the node.
const VALUE_BYTES: usize = 1024;
/// Most writes a fill loop makes before it gives up.
const MAX_WRITES: usize = 20_000;

fn used_memory(client: &mut RawClient) -> u64 {
    info_field(client, "memory", "used_memory").parse().unwrap()
}

fn evicted_keys(client: &mut RawClient) -> u64 {
    info_field(client, "stats", "evicted_keys").parse().unwrap()
}

fn ok(client: &mut RawClient, args: &[&str]) {
    let reply = client.call(args);
    assert!(
        matches!(&reply, Frame::Simple(s) if s == "OK"),
        "{args:?} answered {reply:?}"
    );
}

fn exists(client: &mut RawClient, key: &str) -> bool {
    client.call(&["EXISTS", key]) == Frame::Integer(1)
}

/// A node under `policy` whose limit leaves room for about `room` more bytes.
fn node_with_room(policy: &str, room: u64) -> (ServerProcess, RawClient) {
    let node = ServerProcess::storage_node(&["--maxmemory-policy", policy]);
    let mut client = RawClient::connect(node.port);
    let limit = used_memory(&mut client) + room;
    ok(
        &mut client,
        &["CONFIG", "SET", "maxmemory", &limit.to_string()],
    );
    (node, client)
}

/// Writes `prefix:N` keys (with `ttl` seconds to live if given) until `done` says so;
/// returns how many were written. Panics if a write is refused or the bound is hit.
fn fill(
    client: &mut RawClient,
    prefix: &str,
    ttl: Option<u64>,
    mut done: impl FnMut(&mut RawClient, usize) -> bool,
) -> usize {
    let value = "x".repeat(VALUE_BYTES);
    for n in 0..MAX_WRITES {
        if done(client, n) {
            return n;
        }
        let key = format!("{prefix}:{n}");
        match ttl {
            Some(seconds) => ok(client, &["SET", &key, &value, "EX", &seconds.to_string()]),
            None => ok(client, &["SET", &key, &value]),
        }
    }
    panic!("{MAX_WRITES} writes without reaching the goal");
}

#[test]
fn the_oom_error_and_where_it_applies_match_redis() {
    let mut d = Differential::start();
    d.check_all(&[
        &["SET", "kept", "v"],
        &["RPUSH", "list", "a"],
        // Far below what either server uses: out of memory from the next command on.
        &["CONFIG", "SET", "maxmemory", "1"],
        &["SET", "k", "v"],
        &["RPUSH", "list", "b"],
        &["GET", "kept"],
        &["LLEN", "list"],
        // Commands that free memory or only read are still served.
        &["DEL", "kept"],
        &["EXPIRE", "list", "100"],
        &["PING"],
        // Inside MULTI every command but EXEC/DISCARD is refused, and EXEC aborts.
        &["MULTI"],
        &["GET", "list"],
        &["SET", "k", "v"],
        &["EXEC"],
        &["MULTI"],
        &["PING"],
        &["DISCARD"],
        // A script out of memory at its start may not call a denyoom command.
        &["EVAL", "return redis.call('GET', 'missing')", "0"],
        &["EVAL", "return redis.pcall('SET', 'k', 'v')", "0"],
        &[
            "EVAL",
            "#!lua flags=allow-oom\nreturn redis.call('SET', 'k', 'v')",
            "0",
        ],
        &["GET", "k"],
        &["CONFIG", "SET", "maxmemory", "0"],
        &["SET", "k", "v2"],
        &["GET", "k"],
    ]);
}

#[test]
fn the_memory_settings_read_and_change_as_in_redis() {
    let mut d = Differential::start();
    let settings: &[(&str, &[&str])] = &[
        ("maxmemory", &["1gb", "100mb", "0", "-1", "1.5mb", "0"]),
        (
            "maxmemory-policy",
            &["allkeys-lru", "VOLATILE-TTL", "lru", "noeviction"],
        ),
        ("maxmemory-samples", &["10", "0", "5"]),
        ("maxmemory-eviction-tenacity", &["100", "101", "10"]),
        ("maxmemory-clients", &["5%", "101%", "1mb", "0"]),
        ("lfu-log-factor", &["0", "-1", "10"]),
        ("lfu-decay-time", &["5", "x", "1"]),
        ("lazyfree-lazy-eviction", &["yes", "maybe", "no"]),
    ];
    for (name, values) in settings {
        d.check(&["CONFIG", "GET", name]);
        for value in *values {
            d.check(&["CONFIG", "SET", name, value]);
            d.check(&["CONFIG", "GET", name]);
        }
    }
}

#[test]
fn info_memory_names_its_fields_as_redis_does() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    let names = |client: &mut RawClient| -> Vec<String> {
        let Frame::Bulk(text) = client.call(&["INFO", "memory"]) else {
            panic!("INFO memory is not a bulk string");
        };
        String::from_utf8_lossy(&text)
            .lines()
            .filter(|line| line.contains(':'))
            .map(|line| line.split(':').next().unwrap_or_default().to_string())
            .collect()
    };
    let (node_names, redis_names) = (names(&mut node), names(&mut redis));
    for name in &node_names {
        assert!(redis_names.contains(name), "Redis has no INFO field {name}");
    }
    for wanted in [
        "used_memory",
        "used_memory_human",
        "used_memory_rss",
        "used_memory_peak",
        "maxmemory",
        "maxmemory_human",
        "maxmemory_policy",
        "mem_fragmentation_ratio",
        "mem_not_counted_for_evict",
        "mem_clients_normal",
        "mem_clients_slaves",
    ] {
        assert!(node_names.iter().any(|n| n == wanted), "no {wanted}");
    }
    ok(&mut node, &["CONFIG", "SET", "maxmemory", "100mb"]);
    ok(
        &mut node,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    assert_eq!(info_field(&mut node, "memory", "maxmemory"), "104857600");
    assert_eq!(
        info_field(&mut node, "memory", "maxmemory_human"),
        "100.00M"
    );
    assert_eq!(
        info_field(&mut node, "memory", "maxmemory_policy"),
        "allkeys-lfu"
    );
}

#[test]
fn noeviction_refuses_writes_past_the_limit_and_evicts_nothing() {
    let (_node, mut client) = node_with_room("noeviction", 512 * 1024);
    let value = "x".repeat(VALUE_BYTES);
    let mut refused = None;
    for n in 0..MAX_WRITES {
        match client.call(&["SET", &format!("k:{n}"), &value]) {
            Frame::Simple(_) => {}
            Frame::Error(e) => {
                refused = Some(String::from_utf8_lossy(&e).into_owned());
                break;
            }
            other => panic!("SET answered {other:?}"),
        }
    }
    assert_eq!(
        refused.as_deref(),
        Some("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert_eq!(evicted_keys(&mut client), 0);
    assert!(exists(&mut client, "k:0"));
    assert_eq!(client.call(&["GET", "missing"]), Frame::Null);
}

/// Under an `allkeys-*` policy, keys made to look cold (long idle, or never used) are the
/// ones evicted when new keys push the node past its limit.
fn cold_keys_go_first(policy: &str, make_cold: &[&str]) {
    let (_node, mut client) = node_with_room(policy, 2 * 1024 * 1024);
    let value = "x".repeat(VALUE_BYTES);
    ok(&mut client, &["SET", "template", &value]);
    let Frame::Bulk(payload) = client.call(&["DUMP", "template"]) else {
        panic!("DUMP failed");
    };
    assert_eq!(client.call(&["DEL", "template"]), Frame::Integer(1));
    let cold = 800;
    for n in 0..cold {
        let key = format!("cold:{n}");
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), b"0", &payload];
        args.extend(make_cold.iter().map(|a| a.as_bytes()));
        let reply = client.call_raw(&args);
        assert_eq!(reply, b"+OK\r\n", "RESTORE {key}");
    }
    let written = fill(&mut client, "new", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) >= 400
    });
    let evicted = evicted_keys(&mut client);
    let new_lost = (0..written)
        .filter(|n| !exists(&mut client, &format!("new:{n}")))
        .count() as u64;
    assert!(
        new_lost * 10 <= evicted,
        "{policy}: {new_lost} of {evicted} evicted keys were new ones"
    );
}

#[test]
fn allkeys_lru_evicts_the_longest_idle_keys_first() {
    cold_keys_go_first("allkeys-lru", &["IDLETIME", "100000"]);
}

#[test]
fn allkeys_lfu_evicts_the_least_used_keys_first() {
    cold_keys_go_first("allkeys-lfu", &["FREQ", "0"]);
}

/// Among keys of equal frequency (all written, none read), the oldest arrivals are evicted
/// first (`keyspace::access`): keys written once leave in the order they came. Ties broken
/// at random would take old and new keys alike, in proportion to their numbers; the
/// newest first, mostly new ones.
#[test]
fn lfu_ties_go_to_the_oldest_arrivals() {
    let (_node, mut client) = node_with_room("allkeys-lfu", 2 * 1024 * 1024);
    // No decay: a minute turning during the test must not change any key's frequency.
    ok(&mut client, &["CONFIG", "SET", "lfu-decay-time", "0"]);
    let old = fill(&mut client, "old", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) > 0
    });
    let evicted_before = evicted_keys(&mut client);
    let new = fill(&mut client, "new", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) >= evicted_before + 400
    });
    let evicted = evicted_keys(&mut client) - evicted_before;
    let new_lost = (0..new)
        .filter(|n| !exists(&mut client, &format!("new:{n}")))
        .count() as u64;
    // At random, new keys (about a fifth of what the node holds) would be a fifth of the
    // evicted keys; the newest first, 176 to 180 of about 400 went; the oldest first, none.
    assert!(
        new_lost * 10 <= evicted,
        "{new_lost} of {evicted} evicted keys were new ones ({old} old keys, {new} new)"
    );
}

/// Under LRU, among keys idle for the same whole seconds, a key nobody touched since it
/// arrived is evicted before one that was read again (`keyspace::access`).
#[test]
fn lru_evicts_keys_nobody_read_again_first() {
    let (_node, mut client) = node_with_room("allkeys-lru", 2 * 1024 * 1024);
    let written = fill(&mut client, "k", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) > 0
    });
    // Read every other key still held: those are the ones wanted again.
    let mut read = Vec::new();
    for n in (0..written).step_by(2) {
        let key = format!("k:{n}");
        if client.call(&["GET", &key]) != Frame::Null {
            read.push(key);
        }
    }
    let evicted_before = evicted_keys(&mut client);
    fill(&mut client, "new", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) >= evicted_before + 200
    });
    let read_lost = read.iter().filter(|key| !exists(&mut client, key)).count();
    // Ties broken without the mark take read keys in proportion (about a third of what
    // the node holds): 135 to 140 of them went, against 2 to 8 with it.
    assert!(
        read_lost * 10 <= 200,
        "{read_lost} of the {} keys read again were evicted",
        read.len()
    );
}

#[test]
fn allkeys_random_evicts_some_keys() {
    let (_node, mut client) = node_with_room("allkeys-random", 1024 * 1024);
    fill(&mut client, "k", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) >= 200
    });
    assert!(
        !exists(&mut client, "k:0") || !exists(&mut client, "k:1") || {
            // Random: the first two may both survive; then some other early key went.
            (2..200).any(|n| !exists(&mut client, &format!("k:{n}")))
        }
    );
}

/// Under a `volatile-*` policy only keys with a TTL are evicted; once none is left,
/// writes are refused.
fn only_volatile_keys_are_evicted(policy: &str) {
    let (_node, mut client) = node_with_room(policy, 2 * 1024 * 1024);
    let volatile = fill(&mut client, "vol", Some(1000), |_, n| n == 500);
    let value = "x".repeat(VALUE_BYTES);
    let mut kept = 0;
    let refused = loop {
        assert!(kept < MAX_WRITES, "{policy}: never refused");
        match client.call(&["SET", &format!("keep:{kept}"), &value]) {
            Frame::Simple(_) => kept += 1,
            Frame::Error(e) => break String::from_utf8_lossy(&e).into_owned(),
            other => panic!("SET answered {other:?}"),
        }
    };
    assert!(refused.starts_with("OOM "), "{refused}");
    assert!(evicted_keys(&mut client) > 0);
    for n in 0..kept {
        assert!(
            exists(&mut client, &format!("keep:{n}")),
            "{policy} evicted keep:{n}"
        );
    }
    let left = (0..volatile)
        .filter(|n| exists(&mut client, &format!("vol:{n}")))
        .count();
    assert_eq!(
        left, 0,
        "{policy}: volatile keys left while refusing writes"
    );
}

#[test]
fn volatile_lru_evicts_only_keys_with_a_ttl() {
    only_volatile_keys_are_evicted("volatile-lru");
}

#[test]
fn volatile_lfu_evicts_only_keys_with_a_ttl() {
    only_volatile_keys_are_evicted("volatile-lfu");
}

#[test]
fn volatile_random_evicts_only_keys_with_a_ttl() {
    only_volatile_keys_are_evicted("volatile-random");
}

#[test]
fn volatile_ttl_evicts_the_keys_closest_to_expiry_first() {
    let (_node, mut client) = node_with_room("volatile-ttl", 2 * 1024 * 1024);
    let value = "x".repeat(VALUE_BYTES);
    let volatile = 800;
    for n in 0..volatile {
        let ttl = (10_000 + n).to_string();
        ok(
            &mut client,
            &["SET", &format!("vol:{n}"), &value, "EX", &ttl],
        );
    }
    fill(&mut client, "keep", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) >= 200
    });
    let gone: Vec<usize> = (0..volatile)
        .filter(|n| !exists(&mut client, &format!("vol:{n}")))
        .collect();
    let late = gone.iter().filter(|&&n| n >= volatile / 2).count();
    assert!(
        late * 10 <= gone.len(),
        "{late} of {} evicted keys had the longer TTLs",
        gone.len()
    );
    assert!(exists(&mut client, &format!("vol:{}", volatile - 1)));
}

#[test]
fn evicted_keys_are_announced_and_logged_as_deletions() {
    let node = ServerProcess::storage_node(&[
        "--maxmemory-policy",
        "allkeys-lru",
        "--lazyfree-lazy-eviction",
        "yes",
        "--appendonly",
        "yes",
        "--notify-keyspace-events",
        "Ee",
    ]);
    let mut client = RawClient::connect(node.port);
    let mut subscriber = RawClient::connect(node.port);
    subscriber.call(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    let limit = used_memory(&mut client) + 1024 * 1024;
    ok(
        &mut client,
        &["CONFIG", "SET", "maxmemory", &limit.to_string()],
    );
    fill(&mut client, "k", None, |c, n| {
        n % 50 == 0 && evicted_keys(c) > 0
    });
    let (message, _) = subscriber.read_reply();
    let Frame::Array(parts) = message else {
        panic!("not a message: {message:?}");
    };
    assert_eq!(parts[0], Frame::Bulk(b"message".to_vec().into()));
    let Frame::Bulk(key) = &parts[2] else {
        panic!("no key in {parts:?}");
    };
    let key = String::from_utf8_lossy(key).into_owned();
    assert!(!exists(&mut client, &key));
    // The AOF has the eviction as UNLINK (lazyfree-lazy-eviction yes).
    let dir = match client.call(&["CONFIG", "GET", "dir"]) {
        Frame::Array(items) => match &items[1] {
            Frame::Bulk(d) => String::from_utf8_lossy(d).into_owned(),
            other => panic!("dir {other:?}"),
        },
        other => panic!("CONFIG GET dir answered {other:?}"),
    };
    let unlink = format!("*2\r\n$6\r\nUNLINK\r\n${}\r\n{key}\r\n", key.len());
    test_harness::wait_until(
        std::time::Duration::from_secs(10),
        "the eviction in the AOF",
        || {
            std::fs::read_dir(std::path::Path::new(&dir).join("appendonlydir"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|f| {
                    std::fs::read(f.path())
                        .is_ok_and(|b| String::from_utf8_lossy(&b).contains(&unlink))
                })
        },
    );
}

#[test]
fn object_freq_grows_with_access_under_lfu() {
    let node = ServerProcess::storage_node(&[
        "--maxmemory-policy",
        "allkeys-lfu",
        "--lfu-log-factor",
        "1",
    ]);
    let mut client = RawClient::connect(node.port);
    ok(&mut client, &["SET", "hot", "v"]);
    ok(&mut client, &["SET", "cold", "v"]);
    for _ in 0..1000 {
        client.call(&["GET", "hot"]);
    }
    let freq = |c: &mut RawClient, key: &str| match c.call(&["OBJECT", "FREQ", key]) {
        Frame::Integer(n) => n,
        other => panic!("OBJECT FREQ answered {other:?}"),
    };
    let (hot, cold) = (freq(&mut client, "hot"), freq(&mut client, "cold"));
    assert!(hot > cold + 10, "hot {hot}, cold {cold}");
}
