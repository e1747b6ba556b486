//! Malformed protocol against the proxy and a node, compared with redis-server: negative
//! and huge counts, lengths that are not numbers, NUL bytes, a stream that desyncs midway.
//!
//! Targets: each server answers what redis-server answers and closes (or keeps) the
//! connection as it does, within a second; its RSS grows by less than 1 MB.

use std::time::Duration;

use test_harness::{show, start_proxy, Cluster, ServerProcess};

use crate::common::*;

/// How long a connection may stay silent before we take it that the server keeps it open
/// (and how long a server may take to close one).
const QUIET: Duration = Duration::from_secs(1);

const INPUTS: &[&[u8]] = &[
    b"*-1\r\n",
    b"$-10\r\n",
    b"*2147483647\r\n",
    b"*1\r\n$blabla\r\n",
    b"*2\r\n$3\r\nGET\r\n$-5\r\n",
    b"\x00\x00\x00\x00\r\n",
    b"*2\r\n$4\r\nECHO\r\n$3\r\na\x00b\r\n",
    b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n:5\r\n",
    b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n+x\r\n*1\r\n$4\r\nPING\r\n",
    b"*1\r\n$4\r\nPING\r\n*1x\r\n",
];

/// Every input against every port at once (each probe waits up to [`QUIET`]).
fn probe_all(ports: &[u16]) -> Vec<Vec<(Vec<u8>, bool)>> {
    let threads: Vec<Vec<_>> = INPUTS
        .iter()
        .map(|input| {
            ports
                .iter()
                .map(|&port| std::thread::spawn(move || answer_to(port, input, QUIET)))
                .collect()
        })
        .collect();
    threads
        .into_iter()
        .map(|row| row.into_iter().map(|t| t.join().expect("probe")).collect())
        .collect()
}

pub fn malformed_protocol() -> Row {
    let mut row = Row::new("malformed_protocol");
    let cluster = Cluster::storage_nodes(3);
    let mut proxy = start_proxy(&cluster.seeds(), &[]);
    let mut node = ServerProcess::storage_node(&[]);
    let redis = ServerProcess::redis_server(&[]);
    let ports = [redis.port, proxy.port, node.port];
    let rounds = scaled(2, 10);
    let mut rss_before = [0, 0];
    let mut differences = Vec::new();
    for round in 0..rounds {
        // The first round is the baseline: it also creates what any first clients create
        // (backend connections, per-worker state).
        if round == 1 {
            rss_before = [rss_kb(proxy.pid()), rss_kb(node.pid())];
        }
        for (input, answers) in INPUTS.iter().zip(probe_all(&ports)) {
            let (expected, expected_closed) = &answers[0];
            for (server, (answer, closed)) in ["proxy", "node"].iter().zip(&answers[1..]) {
                row.acked += 1;
                if (answer, closed) != (expected, expected_closed) {
                    row.errors += 1;
                    differences.push(format!(
                        "{server} on {}: {} (closed: {closed}); redis-server: {} (closed: {expected_closed})",
                        show(input),
                        show(answer),
                        show(expected)
                    ));
                }
            }
        }
    }
    let rss_after = [rss_kb(proxy.pid()), rss_kb(node.pid())];
    let growth_kb = rss_after
        .iter()
        .zip(rss_before)
        .map(|(after, before)| after.saturating_sub(before))
        .max()
        .unwrap_or(0);
    row.max_unavailable_s = QUIET.as_secs_f64();
    row.peak_rss_mb = peak_rss_mb(proxy.pid()).max(peak_rss_mb(node.pid()));
    row.crashes = crashed(&mut proxy) + crashed(&mut node);
    row.print();
    differences.dedup();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert!(growth_kb < 1024, "RSS grew by {growth_kb} kB");
    assert_eq!(row.crashes, 0);
    row
}
