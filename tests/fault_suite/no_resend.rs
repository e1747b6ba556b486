//! A read timeout on non-idempotent commands (INCR, RPUSH, EVAL): the node is SIGSTOPped
//! while a client keeps sending them, so some time out at the proxy, then it runs again.
//!
//! Target: the proxy never sends a request twice. Every request runs at most once: a
//! counter's final value lies between the acknowledged requests and the acknowledged plus
//! timed-out ones, and the acknowledged INCR values are all different.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

use crate::common::*;

const OPERATION_MS: u64 = 300;
const SCRIPT: &str = "return redis.call('INCR', KEYS[1])";

#[derive(Default, Debug)]
struct Tally {
    acked: u64,
    timed_out: u64,
    other_errors: u64,
}

pub fn no_resend_after_timeout() -> Row {
    let mut row = Row::new("non_idempotent_timeout");
    let cluster = Cluster::storage_nodes(3);
    let mut proxy = proxy_with_config(
        &cluster.seeds(),
        &format!("timeouts:\n  operation_ms: {OPERATION_MS}\n"),
    );
    let mut client = RawClient::connect(proxy.port);
    assert_eq!(
        client.call(&["SET", "{once}:probe", "1"]),
        Frame::Simple("OK".into())
    );
    // The node that holds the key (the others answer MOVED), asked directly.
    let node = cluster
        .nodes
        .iter()
        .position(|n| {
            RawClient::connect(n.port).call(&["EXISTS", "{once}:probe"]) == Frame::Integer(1)
        })
        .expect("a node holds the key");
    let pid = cluster.nodes[node].pid();
    let rounds = scaled(30, 300);
    let stop_at = rounds / 3;
    let stopped_rounds = scaled(2, 10);
    // The node stays stopped for at least `stopped_rounds` and until every kind has timed
    // out once (at most this many rounds): a fixed count of rounds sometimes saw no timeout
    // at all in a loaded full run.
    let max_stopped_rounds = stopped_rounds + 20;
    let mut stopped_since = None;
    let mut tallies: [Tally; 3] = Default::default();
    let mut incr_values = HashSet::new();
    let mut duplicate_incr_values = 0;
    let mut samples = Vec::new();
    for round in 0..rounds {
        if round == stop_at {
            signal(pid, "STOP");
            wait_until_stopped(pid);
            stopped_since = Some(round);
        }
        if let Some(since) = stopped_since {
            let every_kind_timed_out = tallies.iter().all(|t| t.timed_out > 0);
            let stopped_for = round - since;
            if stopped_for >= max_stopped_rounds
                || (stopped_for >= stopped_rounds && every_kind_timed_out)
            {
                signal(pid, "CONT");
                stopped_since = None;
            }
        }
        let started = Instant::now();
        client.send(&[b"INCR", b"{once}:incr"]);
        client.send(&[b"RPUSH", b"{once}:list", b"x"]);
        client.send(&[b"EVAL", SCRIPT.as_bytes(), b"1", b"{once}:eval"]);
        for (kind, tally) in tallies.iter_mut().enumerate() {
            match client.read_reply().0 {
                Frame::Integer(n) => {
                    tally.acked += 1;
                    // Each INCR that ran once returns a value no other INCR returned.
                    if kind == 0 && !incr_values.insert(n) {
                        duplicate_incr_values += 1;
                    }
                }
                reply if error_contains(&reply, "did not answer within") => tally.timed_out += 1,
                _ => tally.other_errors += 1,
            }
        }
        samples.push(started.elapsed());
    }
    if stopped_since.is_some() {
        signal(pid, "CONT");
    }
    // The node ran everything it received once it was continued; reading through the same
    // proxy (and so the same ordered backend connection) sees the final values.
    let deadline = Instant::now() + Duration::from_secs(30);
    let finals = loop {
        let incr = client.call(&["GET", "{once}:incr"]);
        let list = client.call(&["LLEN", "{once}:list"]);
        let eval = client.call(&["GET", "{once}:eval"]);
        let number = |f: &Frame| match f {
            Frame::Bulk(b) => String::from_utf8_lossy(b).parse::<u64>().ok(),
            Frame::Integer(n) => u64::try_from(*n).ok(),
            _ => None,
        };
        if let (Some(a), Some(b), Some(c)) = (number(&incr), number(&list), number(&eval)) {
            break [a, b, c];
        }
        assert!(Instant::now() < deadline, "final values unreadable");
        std::thread::sleep(Duration::from_millis(50));
    };
    for (tally, executed) in tallies.iter().zip(finals) {
        row.acked += tally.acked;
        row.errors += tally.timed_out + tally.other_errors;
        row.duplicated += executed.saturating_sub(tally.acked + tally.timed_out);
        row.lost += tally.acked.saturating_sub(executed);
    }
    row.duplicated += duplicate_incr_values;
    row.p99_ms = p99_ms(&mut samples);
    row.max_unavailable_s = samples
        .iter()
        .max()
        .copied()
        .unwrap_or_default()
        .as_secs_f64();
    row.crashes = crashed(&mut proxy);
    row.peak_rss_mb = peak_rss_mb(proxy.pid());
    row.print();
    assert!(
        tallies
            .iter()
            .all(|t| t.timed_out > 0 && t.other_errors == 0),
        "{tallies:?}"
    );
    assert_eq!(row.duplicated, 0, "{tallies:?} executed {finals:?}");
    assert_eq!(row.lost, 0, "{tallies:?} executed {finals:?}");
    assert_eq!(row.crashes, 0);
    row
}

/// Polls /proc until the kernel reports `pid` stopped (state `T`), bounded.
fn wait_until_stopped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command name's closing parenthesis.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        if state == Some("T") {
            return;
        }
        assert!(Instant::now() < deadline, "node {pid} not stopped: {stat}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
