//! A backend node SIGKILLed in the middle of a client pipeline (SETs and cross-node MSETs),
//! and a node SIGSTOPped (black-holed) while clients keep working.
//!
//! Targets: after the kill, only requests for the dead node's slots fail, and they fail
//! promptly; nothing acknowledged on a live node is lost; the proxy does not crash. With a
//! node stopped, no request waits much past `timeouts.operation_ms` and the other slots
//! keep answering without errors and without waiting for that timeout.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

use crate::common::*;

/// How long a killed node's requests may take to fail; the proxy answers them as soon as
/// the connection breaks, so this only bounds a hang.
const PROMPT: Duration = Duration::from_secs(10);

/// One request of the pipeline: a SET, or every fourth one an MSET over all three nodes.
fn pipeline_request(i: usize, tags: &[String]) -> Vec<u8> {
    if i % 4 == 3 {
        let keys: Vec<String> = tags.iter().map(|t| format!("{{{t}}}:{i}")).collect();
        let value = i.to_string();
        let mut args = vec!["MSET"];
        for key in &keys {
            args.push(key);
            args.push(&value);
        }
        request(&args)
    } else {
        request(&["SET", &format!("s{i}"), &i.to_string()])
    }
}

pub fn node_killed_mid_pipeline() -> Row {
    let mut row = Row::new("node_sigkill_mid_pipeline");
    let mut cluster = Cluster::storage_nodes(3);
    let mut proxy = proxy_with_config(&cluster.seeds(), "timeouts:\n  operation_ms: 1000\n");
    let owners = SlotOwners::read(&cluster);
    let victim = 2;
    // A hash tag per node, so an MSET touches every node, the victim included.
    let tags: Vec<String> = (0..3).map(|n| owners.key_on(n, false, "t")).collect();
    let total = scaled(20_000, 1_000_000);
    let kill_at = total / 3;

    let stream = TcpStream::connect(("127.0.0.1", proxy.port)).expect("connect");
    let mut writer = stream.try_clone().expect("clone");
    let write_tags = tags.clone();
    let sender = std::thread::spawn(move || {
        let mut chunk = Vec::new();
        for i in 0..total {
            chunk.extend_from_slice(&pipeline_request(i, &write_tags));
            if chunk.len() > 64 * 1024 || i + 1 == total {
                if writer.write_all(&chunk).is_err() {
                    return;
                }
                chunk.clear();
            }
        }
    });
    let mut replies = ReplyReader::new(stream);
    let mut acked_sets = Vec::new();
    let mut acked_msets = Vec::new();
    let mut wrong_errors = Vec::new();
    let mut last_reply = Instant::now();
    let mut killed_at = None;
    let mut longest_wait = Duration::ZERO;
    for i in 0..total {
        if i == kill_at {
            cluster.nodes[victim].kill();
            killed_at = Some(Instant::now());
            last_reply = Instant::now();
        }
        let reply = replies
            .next()
            .expect("the proxy kept the client connection");
        if killed_at.is_some() {
            longest_wait = longest_wait.max(last_reply.elapsed());
        }
        last_reply = Instant::now();
        let is_mset = i % 4 == 3;
        match reply {
            Frame::Simple(_) if is_mset => acked_msets.push(i),
            Frame::Simple(_) => acked_sets.push(i),
            Frame::Error(e) => {
                row.errors += 1;
                // An MSET always has a part on the victim; a SET fails only there.
                let victims_part = is_mset || owners.node_of(&format!("s{i}")) == victim;
                if !victims_part || killed_at.is_none() {
                    wrong_errors.push((i, String::from_utf8_lossy(&e).into_owned()));
                }
            }
            other => wrong_errors.push((i, format!("{other:?}"))),
        }
    }
    sender.join().expect("sender");
    row.acked = (acked_sets.len() + acked_msets.len()) as u64;
    row.max_unavailable_s = longest_wait.as_secs_f64();

    // Nothing acknowledged on a live node is lost (the victim's data died with it). Read
    // back in pipelines of a thousand.
    let mut expected: Vec<(String, usize)> = Vec::new();
    for i in &acked_sets {
        let key = format!("s{i}");
        if owners.node_of(&key) != victim {
            expected.push((key, *i));
        }
    }
    for i in &acked_msets {
        for (node, tag) in tags.iter().enumerate() {
            if node != victim {
                expected.push((format!("{{{tag}}}:{i}"), *i));
            }
        }
    }
    let mut reader = RawClient::connect(proxy.port);
    for batch in expected.chunks(1000) {
        for (key, _) in batch {
            reader.send(&[b"GET", key.as_bytes()]);
        }
        for (_, value) in batch {
            if reader.read_reply().0 != Frame::bulk(value.to_string()) {
                row.lost += 1;
            }
        }
    }

    // With the node gone, a cross-node MSET fails and one over the live nodes works, in
    // the same pipeline.
    let live: Vec<String> = tags
        .iter()
        .enumerate()
        .filter(|(n, _)| *n != victim)
        .map(|(_, t)| format!("{{{t}}}:after"))
        .collect();
    let all = format!("{{{}}}:after", tags[victim]);
    reader.send(&[b"MSET", live[0].as_bytes(), b"1", all.as_bytes(), b"1"]);
    reader.send(&[b"MSET", live[0].as_bytes(), b"2", live[1].as_bytes(), b"2"]);
    reader.send(&[b"GET", live[1].as_bytes()]);
    let started = Instant::now();
    let across = reader.read_reply().0;
    let within_live = reader.read_reply().0;
    let read_back = reader.read_reply().0;
    assert!(
        started.elapsed() < PROMPT,
        "the MSETs took {:?}",
        started.elapsed()
    );
    assert!(across.is_error(), "MSET with a dead node's key: {across:?}");
    assert_eq!(within_live, Frame::Simple("OK".into()));
    assert_eq!(read_back, Frame::bulk("2"));

    row.crashes = crashed(&mut proxy);
    row.peak_rss_mb = peak_rss_mb(proxy.pid());
    row.print();
    assert!(
        wrong_errors.is_empty(),
        "errors outside the dead node's part: {:?}",
        &wrong_errors[..wrong_errors.len().min(5)]
    );
    assert!(
        row.errors > 0,
        "the kill made nothing fail: was it too late?"
    );
    assert_eq!(row.lost, 0);
    assert_eq!(row.crashes, 0);
    assert!(longest_wait < PROMPT, "a reply took {longest_wait:?}");
    row
}

/// The operation timeout the stopped-node scenario configures.
const OPERATION_MS: u64 = 500;

pub fn node_stopped() -> Row {
    let mut row = Row::new("node_sigstop");
    let cluster = Cluster::storage_nodes(3);
    let mut proxy = proxy_with_config(
        &cluster.seeds(),
        &format!("timeouts:\n  operation_ms: {OPERATION_MS}\n"),
    );
    let owners = SlotOwners::read(&cluster);
    let victim = 1;
    let stuck_key = owners.key_on(victim, false, "stuck");
    let live_keys: Vec<String> = (0..64)
        .map(|i| format!("live{i}"))
        .filter(|k| owners.node_of(k) != victim)
        .collect();
    let mut setup = RawClient::connect(proxy.port);
    for key in live_keys.iter().chain([&stuck_key]) {
        assert_eq!(setup.call(&["SET", key, "v"]), Frame::Simple("OK".into()));
    }
    let stuck_requests = scaled(3, 20);
    let victim_pid = cluster.nodes[victim].pid();
    signal(victim_pid, "STOP");
    // The stopped node's client: every request must come back with the timeout error.
    let port = proxy.port;
    let stuck = std::thread::spawn(move || {
        let mut client = RawClient::connect(port);
        (0..stuck_requests)
            .map(|_| {
                let started = Instant::now();
                let reply = client.call(&["GET", &stuck_key]);
                (reply, started.elapsed())
            })
            .collect::<Vec<_>>()
    });
    // Meanwhile the other slots: measured until the stuck client is done.
    let mut live = RawClient::connect(proxy.port);
    let mut samples = Vec::new();
    let mut i = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stuck.is_finished() && Instant::now() < deadline {
        let key = &live_keys[i % live_keys.len()];
        let started = Instant::now();
        let reply = live.call(&["GET", key]);
        samples.push(started.elapsed());
        if reply == Frame::bulk("v") {
            row.acked += 1;
        } else {
            row.errors += 1;
        }
        i += 1;
    }
    let stuck_replies = stuck.join().expect("stuck client");
    signal(victim_pid, "CONT");
    let slowest_live = samples.iter().max().copied().unwrap_or_default();
    row.p99_ms = p99_ms(&mut samples);
    let longest_stuck = stuck_replies
        .iter()
        .map(|(_, waited)| *waited)
        .max()
        .unwrap_or_default();
    row.max_unavailable_s = longest_stuck.as_secs_f64();
    let timeouts = stuck_replies
        .iter()
        .filter(|(reply, _)| error_contains(reply, "did not answer within"))
        .count();
    row.errors += (stuck_replies.len() - timeouts) as u64;

    // Once the node runs again, its slots answer again (bounded wait).
    let mut again = RawClient::connect(proxy.port);
    let recovery = Instant::now() + Duration::from_secs(30);
    let stuck_key = owners.key_on(victim, false, "stuck");
    while again.call(&["GET", &stuck_key]) != Frame::bulk("v") {
        assert!(
            Instant::now() < recovery,
            "the node's slots never came back"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    row.crashes = crashed(&mut proxy);
    row.peak_rss_mb = peak_rss_mb(proxy.pid());
    row.print();
    assert_eq!(timeouts, stuck_requests, "{stuck_replies:?}");
    // The proxy checks the timeout every operation_ms / 4; five times it is generous.
    assert!(
        longest_stuck < Duration::from_millis(OPERATION_MS * 5),
        "a request on the stopped node waited {longest_stuck:?}"
    );
    assert_eq!(row.errors, 0, "requests to live slots failed");
    assert!(row.acked > 0);
    assert!(
        row.p99_ms < OPERATION_MS as f64,
        "live slots waited as long as the timeout (p99 {} ms, slowest {slowest_live:?})",
        row.p99_ms
    );
    assert_eq!(row.crashes, 0);
    row
}
