//! The IDLE and FREQ hints of RDB files, against a real redis-server 7.0: under an LFU
//! `maxmemory-policy` every key's counter, under an LRU one its idle time, is written by
//! SAVE and BGSAVE and read back at start, by either server from either server's file, so
//! a restart does not make every key look new to eviction. Under other policies neither is
//! written, as in Redis.
//!
//! `lfu-log-factor 0` makes every access count and `lfu-decay-time 0` stops decay, so the
//! counters are exact on both servers; idle times are set with RESTORE ... IDLETIME.

mod persistence_fixture;

use std::path::Path;
use std::time::{Duration, Instant};

use persistence_fixture::*;
use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

const LFU: &[&str] = &[
    "--maxmemory-policy",
    "allkeys-lfu",
    "--lfu-log-factor",
    "0",
    "--lfu-decay-time",
    "0",
];
const LRU: &[&str] = &["--maxmemory-policy", "allkeys-lru"];
const NO_EVICTION: &[&str] = &["--maxmemory-policy", "noeviction"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Server {
    Node,
    Redis,
}

fn start(server: Server, dir: &Path, extra: &[&str]) -> ServerProcess {
    match server {
        Server::Node => node_in(dir, extra),
        Server::Redis => redis_in(dir, extra),
    }
}

fn integer(client: &mut RawClient, args: &[&str]) -> i64 {
    match client.call(args) {
        Frame::Integer(n) => n,
        other => panic!("{args:?} answered {other:?}"),
    }
}

/// Writes the file in `dir` with SAVE, or with BGSAVE and waits for it.
fn save(client: &mut RawClient, background: bool) {
    if !background {
        ok(client, &["SAVE"]);
        return;
    }
    let before = integer(client, &["LASTSAVE"]);
    ok(client, &["BGSAVE"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(client, "rdb_bgsave_in_progress") != "0"
        || integer(client, &["LASTSAVE"]) < before
    {
        assert!(Instant::now() < deadline, "BGSAVE did not finish");
        std::thread::yield_now();
    }
    assert_eq!(info_field(client, "rdb_last_bgsave_status"), "ok");
}

/// `hot` read 20 times, `cold` never; `aged` restored 5000 seconds idle.
fn populate_hints(client: &mut RawClient) {
    ok(client, &["SET", "hot", "v"]);
    for _ in 0..20 {
        ok(client, &["GET", "hot"]);
    }
    ok(client, &["SET", "cold", "v"]);
    let Frame::Bulk(payload) = client.call(&["DUMP", "cold"]) else {
        panic!("DUMP failed")
    };
    let payload = payload.to_vec();
    let reply = client.call_raw(&[b"RESTORE", b"aged", b"0", &payload, b"IDLETIME", b"5000"]);
    assert_eq!(reply, b"+OK\r\n");
}

/// OBJECT FREQ (under LFU) or IDLETIME (otherwise) of the keys; OBJECT touches nothing.
fn hints_of(client: &mut RawClient, policy: &[&str]) -> [i64; 3] {
    let what = if policy == LFU { "FREQ" } else { "IDLETIME" };
    ["hot", "cold", "aged"].map(|key| integer(client, &["OBJECT", what, key]))
}

/// Saves under `policy` on `writer`, starts `reader` on the file under the same policy;
/// returns [`hints_of`] the writer before it saved and of the reader after it loaded.
fn through_a_file(
    writer: Server,
    background: bool,
    reader: Server,
    policy: &[&str],
) -> ([i64; 3], [i64; 3]) {
    // The tests run at once: each policy has its own directories.
    let name = format!("hints-{}-{writer:?}-{background}", policy[1]);
    let from = scratch_dir(&name);
    let to = scratch_dir(&format!("{name}-{reader:?}"));
    let written = {
        let server = start(writer, &from, policy);
        let mut client = RawClient::connect(server.port);
        populate_hints(&mut client);
        let written = hints_of(&mut client, policy);
        save(&mut client, background);
        written
    };
    std::fs::copy(from.join("dump.rdb"), to.join("dump.rdb")).unwrap();
    let server = start(reader, &to, policy);
    let mut client = RawClient::connect(server.port);
    assert_eq!(integer(&mut client, &["DBSIZE"]), 3);
    (written, hints_of(&mut client, policy))
}

/// Every writer (node SAVE, node BGSAVE, redis-server SAVE) to every reader.
const ROUTES: &[(Server, bool, Server)] = &[
    (Server::Node, false, Server::Node),
    (Server::Node, true, Server::Node),
    (Server::Node, false, Server::Redis),
    (Server::Redis, false, Server::Node),
    (Server::Redis, false, Server::Redis),
];

#[test]
fn lfu_counters_survive_a_restart_both_ways() {
    for &(writer, background, reader) in ROUTES {
        let (written, read) = through_a_file(writer, background, reader, LFU);
        // 5 to start with, one more per access (DUMP read `cold` once; the RESTORE'd key
        // starts at 5).
        assert_eq!(written, [25, 6, 5], "{writer:?}");
        assert_eq!(
            read, written,
            "{writer:?} (background {background}) to {reader:?}"
        );
    }
}

/// The idle time of the key RESTORE'd 5000 seconds idle; the run takes seconds at most, so
/// the time may have ticked meanwhile.
fn assert_restored_idle(idle: i64, context: &str) {
    assert!((5000..5060).contains(&idle), "{context}: {idle}");
}

#[test]
fn lru_idle_times_survive_a_restart_both_ways() {
    for &(writer, background, reader) in ROUTES {
        let (written, [hot, cold, aged]) = through_a_file(writer, background, reader, LRU);
        assert_restored_idle(written[2], &format!("{writer:?}"));
        let context = format!("{writer:?} (background {background}) to {reader:?}");
        assert!(hot < 60 && cold < 60, "{context}: {hot} {cold}");
        assert_restored_idle(aged, &context);
    }
}

#[test]
fn without_an_lru_or_lfu_policy_no_hint_is_written() {
    for &(writer, background, reader) in ROUTES {
        // Redis loads IDLE hints under any policy but LFU, so a file with one would show
        // the 5000 seconds here.
        let (written, [_, _, aged]) = through_a_file(writer, background, reader, NO_EVICTION);
        // The writer itself did hold the idle time: only the file lost it.
        assert_restored_idle(written[2], &format!("{writer:?}"));
        assert!(
            aged < 60,
            "{writer:?} (background {background}) to {reader:?}: {aged}"
        );
    }
}
