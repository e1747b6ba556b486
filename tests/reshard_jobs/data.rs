//! The data set and the client load of the resharding tests.
//!
//! Keys come in groups of four sharing a hash tag (`{g<group>}:k<i>`), so an MGET of a group
//! is a multi-key request on one slot: while that slot moves it meets ASK and TRYAGAIN.
//! Each load thread owns the groups `g % threads == thread` and remembers what it wrote, so
//! every read can be checked exactly and nothing another thread does can surprise it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use slotproxy::resp::Frame;
use test_harness::RawClient;

pub const GROUP: usize = 4;

pub fn key(i: usize) -> String {
    format!("{{g{}}}:k{i}", i / GROUP)
}

pub fn initial(i: usize) -> String {
    format!("v0:{i}")
}

/// SETs keys `0..n` to their initial values through `port`, 1000 per pipeline.
pub fn load(port: u16, n: usize) {
    let mut c = RawClient::connect(port);
    for start in (0..n).step_by(1000) {
        let end = (start + 1000).min(n);
        let mut bytes = Vec::new();
        for i in start..end {
            let (k, v) = (key(i), initial(i));
            bytes.extend(RawClient::encode(&[b"SET", k.as_bytes(), v.as_bytes()]));
        }
        c.send_raw(&bytes);
        for i in start..end {
            let (reply, _) = c.read_reply();
            assert_eq!(reply, Frame::Simple("OK".into()), "loading key {i}");
        }
    }
}

/// Reads keys `0..n` back (MGET of 500 keys at a time) and counts (lost, wrong) against
/// `expected` (the last written value, or the initial one).
pub fn verify(port: u16, n: usize, expected: &HashMap<usize, String>) -> (usize, usize) {
    let mut c = RawClient::connect(port);
    let (mut lost, mut wrong) = (0, 0);
    for start in (0..n).step_by(500) {
        let end = (start + 500).min(n);
        let keys: Vec<String> = (start..end).map(key).collect();
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        c.send(&args);
        let (reply, _) = c.read_reply();
        let items = reply
            .as_array()
            .unwrap_or_else(|| panic!("MGET: {reply:?}"))
            .to_vec();
        for (i, item) in (start..end).zip(items) {
            let want = expected.get(&i).cloned().unwrap_or_else(|| initial(i));
            match item.as_bytes() {
                None => lost += 1,
                Some(v) if v != want.as_bytes() => wrong += 1,
                Some(_) => {}
            }
        }
    }
    (lost, wrong)
}

/// What one load thread saw.
#[derive(Default)]
pub struct LoadResult {
    pub ops: u64,
    pub errors: u64,
    pub wrong: u64,
    pub first_errors: Vec<String>,
    pub written: HashMap<usize, String>,
}

/// One load thread's settings.
#[derive(Clone, Copy)]
pub struct Load {
    pub port: u16,
    /// Keys in the data set.
    pub keys: usize,
    pub thread: usize,
    pub threads: usize,
    /// Most ops per second.
    pub rate: u64,
    pub max_ops: u64,
    pub max_time: Duration,
}

/// One thread of mixed GET / SET / MGET on its own groups, pipelines of 10, at most
/// `rate` ops/s, until `stop` (or `max_ops` or `max_time`).
pub fn run_load(load: Load, stop: Arc<AtomicBool>) -> LoadResult {
    let Load {
        port,
        keys: n,
        thread,
        threads,
        rate,
        max_ops,
        max_time,
    } = load;
    let mut c = RawClient::connect(port);
    let mut rng = rand::thread_rng();
    let mut result = LoadResult::default();
    let groups = n / GROUP;
    let started = Instant::now();
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) && result.ops < max_ops && started.elapsed() < max_time {
        // Each op: (kind, keys, value written).
        let mut batch: Vec<(u8, Vec<usize>, Option<String>)> = Vec::new();
        let mut bytes = Vec::new();
        for _ in 0..10 {
            let group = {
                let g = rng.gen_range(0..groups / threads) * threads + thread;
                g.min(groups - 1)
            };
            let first = group * GROUP;
            match rng.gen_range(0..10) {
                0..=3 => {
                    let i = first + rng.gen_range(0..GROUP);
                    seq += 1;
                    let v = format!("t{thread}:{seq}");
                    bytes.extend(RawClient::encode(&[
                        b"SET",
                        key(i).as_bytes(),
                        v.as_bytes(),
                    ]));
                    batch.push((b's', vec![i], Some(v)));
                }
                4..=7 => {
                    let i = first + rng.gen_range(0..GROUP);
                    bytes.extend(RawClient::encode(&[b"GET", key(i).as_bytes()]));
                    batch.push((b'g', vec![i], None));
                }
                _ => {
                    let keys: Vec<String> = (first..first + GROUP).map(key).collect();
                    let mut args: Vec<&[u8]> = vec![b"MGET"];
                    args.extend(keys.iter().map(|k| k.as_bytes()));
                    bytes.extend(RawClient::encode(&args));
                    batch.push((b'm', (first..first + GROUP).collect(), None));
                }
            }
        }
        c.send_raw(&bytes);
        for (kind, keys, value) in batch {
            let (reply, _) = c.read_reply();
            result.ops += 1;
            if let Frame::Error(e) = &reply {
                result.errors += 1;
                if result.first_errors.len() < 5 {
                    result
                        .first_errors
                        .push(String::from_utf8_lossy(e).into_owned());
                }
                continue;
            }
            let expect = |i: &usize| {
                result
                    .written
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| initial(*i))
            };
            match kind {
                b's' => {
                    if reply == Frame::Simple("OK".into()) {
                        result.written.insert(keys[0], value.unwrap_or_default());
                    } else {
                        result.wrong += 1;
                    }
                }
                b'g' => {
                    if reply.as_bytes() != Some(expect(&keys[0]).as_bytes()) {
                        result.wrong += 1;
                    }
                }
                _ => {
                    let items = reply.as_array().unwrap_or(&[]);
                    let ok = items.len() == keys.len()
                        && keys
                            .iter()
                            .zip(items)
                            .all(|(i, item)| item.as_bytes() == Some(expect(i).as_bytes()));
                    if !ok {
                        result.wrong += 1;
                    }
                }
            }
        }
        // Bounded load: stay under `rate` ops/s.
        let allowed = started.elapsed().as_secs_f64() * rate as f64;
        if result.ops as f64 > allowed {
            let ahead = (result.ops as f64 - allowed) / rate as f64;
            std::thread::sleep(Duration::from_secs_f64(ahead.min(0.1)));
        }
    }
    result
}
