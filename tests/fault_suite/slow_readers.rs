//! Clients that pipeline requests and never read their replies: one alone (ten million
//! SETs in the full profile), then many at once, while a few well-behaved clients keep
//! working.
//!
//! Targets: the proxy's RSS stays under `limits.client_output_buffer_bytes` x clients plus
//! a constant, every slow client is disconnected, the others keep getting answers quickly.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

use crate::common::*;

const OUTPUT_LIMIT: usize = 1024 * 1024;
/// What the proxy may use beyond the output buffers (runtime, pools, topology, metrics).
const CONSTANT_MB: f64 = 64.0;
/// Latency the well-behaved clients must stay under while the flood runs (generous: the
/// machine's two cores are shared with the nodes and the flooding threads).
const BEHAVED_P99_MS: f64 = 2000.0;

/// What a slow client pipelines.
#[derive(Clone, Copy, Debug)]
enum Flood {
    /// SETs of a short value: a 5-byte reply each, so the socket buffers (some MB on
    /// loopback) take about a million before the proxy's own buffer grows. The full
    /// profile's ten million.
    Sets,
    /// GETs of a 512-byte value: the same test in a hundredth of the requests, for the
    /// short profile and for many clients at once.
    BigGets,
}

/// Small enough that the replies to one window of pipelined requests (the proxy keeps up
/// to 1024 in flight) stay under [`OUTPUT_LIMIT`]: only replies the client leaves unread
/// across many windows exceed it.
const BIG_VALUE: usize = 512;

/// Pipelines up to `requests` requests without reading a reply. True if the proxy cut
/// the connection before they were all sent.
fn flood(port: u16, id: usize, kind: Flood, requests: usize) -> bool {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let value = "v".repeat(32);
    let batch = 1000;
    let chunk: Vec<u8> = (0..batch)
        .flat_map(|j| match kind {
            Flood::Sets => request(&["SET", &format!("flood:{id}:{j}"), &value]),
            Flood::BigGets => request(&["GET", &format!("big:{}", j % 16)]),
        })
        .collect();
    let mut sent = 0;
    while sent < requests {
        match stream.write_all(&chunk) {
            Ok(()) => sent += batch,
            // A write that times out means the proxy stopped reading and did not cut us.
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
    false
}

/// Request-response SET/GET until `stop`; the latencies, and the number of bad replies.
fn behave(port: u16, id: usize, stop: Arc<AtomicBool>, at_least: usize) -> (Vec<Duration>, u64) {
    let mut client = RawClient::connect(port);
    let mut samples = Vec::new();
    let mut bad = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut i = 0;
    while (!stop.load(Ordering::Relaxed) || i < at_least) && Instant::now() < deadline {
        let key = format!("behaved:{id}:{}", i % 100);
        let started = Instant::now();
        let set = client.call(&["SET", &key, "1"]);
        let get = client.call(&["GET", &key]);
        samples.push(started.elapsed() / 2);
        if set != Frame::Simple("OK".into()) || get != Frame::bulk("1") {
            bad += 1;
        }
        i += 1;
    }
    (samples, bad)
}

pub fn slow_readers() -> Vec<Row> {
    let cluster = Cluster::storage_nodes(3);
    let mut proxy = proxy_with_config(
        &cluster.seeds(),
        &format!("limits:\n  client_output_buffer_bytes: {OUTPUT_LIMIT}\n"),
    );
    let behaved = scaled(2, 10);
    // Latency before any flood, for the report.
    let (mut baseline, _) = behave(proxy.port, 0, Arc::new(AtomicBool::new(true)), 200);
    eprintln!("slow_readers: baseline p99 {:.3} ms", p99_ms(&mut baseline));
    let mut setup = RawClient::connect(proxy.port);
    let big = "b".repeat(BIG_VALUE);
    for i in 0..16 {
        assert_eq!(
            setup.call(&["SET", &format!("big:{i}"), &big]),
            Frame::Simple("OK".into())
        );
    }
    let rss_before_mb = rss_kb(proxy.pid()) as f64 / 1024.0;
    let mut rows = Vec::new();
    let one = if full_profile() {
        Flood::Sets
    } else {
        Flood::BigGets
    };
    for (name, clients, kind, requests) in [
        ("slow_reader_one", 1, one, 10_000_000),
        (
            "slow_readers_many",
            scaled(10, 100),
            Flood::BigGets,
            1_000_000,
        ),
    ] {
        let mut row = Row::new(name);
        let stop = Arc::new(AtomicBool::new(false));
        let port = proxy.port;
        let workers: Vec<_> = (0..behaved)
            .map(|id| {
                let stop = stop.clone();
                std::thread::spawn(move || behave(port, id, stop, 100))
            })
            .collect();
        let floods: Vec<_> = (0..clients)
            .map(|id| std::thread::spawn(move || flood(port, id, kind, requests)))
            .collect();
        let cut = floods
            .into_iter()
            .map(|f| f.join().expect("flood thread"))
            .filter(|cut| *cut)
            .count();
        stop.store(true, Ordering::Relaxed);
        let mut samples = Vec::new();
        for worker in workers {
            let (s, bad) = worker.join().expect("behaved client");
            samples.extend(s);
            row.errors += bad;
        }
        row.acked = samples.len() as u64;
        row.p99_ms = p99_ms(&mut samples);
        row.max_unavailable_s = samples.last().copied().unwrap_or_default().as_secs_f64();
        row.peak_rss_mb = peak_rss_mb(proxy.pid());
        row.crashes = crashed(&mut proxy);
        row.print();
        let bound =
            rss_before_mb + (OUTPUT_LIMIT * clients) as f64 / (1024.0 * 1024.0) + CONSTANT_MB;
        assert_eq!(
            cut, clients,
            "{name}: only {cut} of {clients} slow clients were cut"
        );
        assert!(
            row.peak_rss_mb < bound,
            "{name}: peak RSS {:.1} MB over {bound:.1} MB",
            row.peak_rss_mb
        );
        assert_eq!(
            row.errors, 0,
            "{name}: well-behaved clients got bad replies"
        );
        assert!(row.p99_ms < BEHAVED_P99_MS, "{name}: p99 {} ms", row.p99_ms);
        assert_eq!(row.crashes, 0);
        rows.push(row);
    }
    rows
}
