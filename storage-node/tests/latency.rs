//! LATENCY against a real redis-server 7.0. `DEBUG SLEEP` makes a `command` event of about
//! 50 ms on both servers; its times and milliseconds vary, so replies are compared with the
//! numbers set aside (after checking them), and exactly where Redis is deterministic
//! (errors, empty replies, the reports' words and layout).

use slotproxy::resp::Frame;
use test_harness::Differential;

/// Digits replaced, for texts whose figures vary (times, milliseconds).
fn without_digits(frame: &Frame) -> String {
    let text = match frame {
        Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected text, got {other:?}"),
    };
    text.chars()
        .map(|c| if c.is_ascii_digit() { 'N' } else { c })
        .collect()
}

/// LATENCY LATEST or HISTORY with the figures checked and then zeroed.
fn latest_shape(frame: &Frame) -> Frame {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let rows = frame.as_array().expect("an array");
    Frame::Array(
        rows.iter()
            .map(|row| {
                let fields = row.as_array().expect("a row");
                Frame::Array(
                    fields
                        .iter()
                        .map(|field| match field.as_integer() {
                            Some(n) if n > 1_000_000_000 => {
                                assert!((now - 600..=now + 600).contains(&n), "time {n}");
                                Frame::Integer(0)
                            }
                            Some(n) => {
                                // DEBUG SLEEP 0.05: at least 50 ms, and not absurdly more.
                                assert!((50..60_000).contains(&n), "latency {n} in {row:?}");
                                Frame::Integer(0)
                            }
                            None => field.clone(),
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

#[test]
fn a_slow_command_is_sampled_and_reported_as_redis_does() {
    let debug = ["--enable-debug-command", "yes"];
    let mut d = Differential::start_with(&debug, &debug);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["LATENCY", "RESET"],
            &["CONFIG", "SET", "latency-monitor-threshold", "0"],
            // Off and never used: Redis's refusal to analyse.
            &["LATENCY", "DOCTOR"],
            &["CONFIG", "SET", "latency-monitor-threshold", "10"],
            &["CONFIG", "GET", "latency-monitor-threshold"],
            &["LATENCY", "DOCTOR"],
            &["LATENCY", "LATEST"],
            &["LATENCY", "HISTORY", "command"],
            &["LATENCY", "GRAPH", "command"],
            // Fast commands stay under the threshold.
            &["PING"],
            &["LATENCY", "LATEST"],
            &["DEBUG", "SLEEP", "0.05"],
        ]);
        let (node, redis) = d.both(&["LATENCY", "LATEST"]);
        assert_eq!(latest_shape(&node), latest_shape(&redis));
        assert_eq!(
            node.as_array().map(<[Frame]>::len),
            Some(1),
            "{node:?} {redis:?} resp3 {resp3}"
        );
        let (node, redis) = d.both(&["LATENCY", "HISTORY", "command"]);
        assert_eq!(latest_shape(&node), latest_shape(&redis));
        for report in [&["LATENCY", "GRAPH", "command"][..], &["LATENCY", "DOCTOR"]] {
            let (node, redis) = d.both(report);
            assert_eq!(without_digits(&node), without_digits(&redis), "{report:?}");
        }
        d.check_all(&[
            &["LATENCY", "HISTORY", "fast-command"],
            &["LATENCY", "GRAPH", "fast-command"],
            &["LATENCY", "RESET", "fast-command", "nothing"],
            &["LATENCY", "RESET", "command", "command"],
            &["LATENCY", "LATEST"],
            &["LATENCY", "DEBUG", "SLEEP", "0.05"],
            &["DEBUG", "SLEEP", "0.02"],
            &["LATENCY", "RESET"],
            &["LATENCY", "RESET"],
            &["CONFIG", "SET", "latency-monitor-threshold", "0"],
            &["DEBUG", "SLEEP", "0.02"],
            &["LATENCY", "LATEST"],
        ]);
    }
}

#[test]
fn latency_syntax_errors_and_help_match_redis() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["LATENCY"],
            &["LATENCY", "HELP"],
            &["LATENCY", "HELP", "x"],
            &["LATENCY", "LATEST", "x"],
            &["LATENCY", "DOCTOR", "x"],
            &["LATENCY", "HISTORY"],
            &["LATENCY", "HISTORY", "a", "b"],
            &["LATENCY", "GRAPH"],
            &["LATENCY", "nope"],
            &["CONFIG", "SET", "latency-monitor-threshold", "-1"],
            &["CONFIG", "SET", "latency-monitor-threshold", "x"],
        ]);
    }
}

/// `calls` and the histogram's points, with the points checked: microsecond marks rising,
/// counts rising, the last one counting every call.
fn histogram_shape(frame: &Frame) -> Vec<(Vec<u8>, i64, usize)> {
    let pairs = match frame {
        Frame::Map(pairs) => pairs.clone(),
        Frame::Array(flat) => flat
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect(),
        other => panic!("LATENCY HISTOGRAM answered {other:?}"),
    };
    pairs
        .iter()
        .map(|(name, body)| {
            let fields: Vec<Frame> = match body {
                Frame::Map(p) => p.iter().flat_map(|(k, v)| [k.clone(), v.clone()]).collect(),
                Frame::Array(flat) => flat.clone(),
                other => panic!("{other:?}"),
            };
            assert_eq!(fields[0], Frame::bulk("calls"));
            assert_eq!(fields[2], Frame::bulk("histogram_usec"));
            let calls = fields[1].as_integer().expect("calls");
            let points: Vec<i64> = match &fields[3] {
                Frame::Map(p) => p.iter().flat_map(|(k, v)| [k.clone(), v.clone()]).collect(),
                Frame::Array(flat) => flat.clone(),
                other => panic!("{other:?}"),
            }
            .iter()
            .map(|f| f.as_integer().expect("integer"))
            .collect();
            let marks: Vec<i64> = points.iter().step_by(2).copied().collect();
            let counts: Vec<i64> = points.iter().skip(1).step_by(2).copied().collect();
            assert!(marks.windows(2).all(|w| w[0] < w[1]), "{points:?}");
            // Redis's marks: the top of the histogram bucket holding 1024 ns * 2^k, in us.
            let valid: Vec<i64> = (0..20)
                .map(|k| ((1024i64 << k) + (1i64 << (3 + k)) - 1) / 1000)
                .collect();
            assert!(marks.iter().all(|m| valid.contains(m)), "{points:?}");
            assert!(counts.windows(2).all(|w| w[0] < w[1]), "{points:?}");
            assert_eq!(counts.last().copied(), Some(calls), "{points:?}");
            (
                name.as_bytes().expect("name").to_vec(),
                calls,
                usize::from(!marks.is_empty()),
            )
        })
        .collect()
}

#[test]
fn latency_histogram_has_redis_shape_per_command_and_subcommand() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["CONFIG", "RESETSTAT"],
            &["SET", "a", "1"],
            &["SET", "b", "2"],
            &["SET", "c", "3"],
            &["GET", "a"],
            &["LATENCY", "HISTOGRAM", "nosuchcommand"],
            &["LATENCY", "HISTOGRAM", "lpush"],
            &["LATENCY", "HISTOGRAM", "config|nosuch"],
        ]);
        for names in [
            &["set"][..],
            &["SET", "get"],
            &["get", "get"],
            &["config"],
            &["config|resetstat"],
        ] {
            let mut args = vec!["LATENCY", "HISTOGRAM"];
            args.extend(names);
            let (node, redis) = d.both(&args);
            assert_eq!(histogram_shape(&node), histogram_shape(&redis), "{args:?}");
        }
        // With tracking off, nothing new is recorded.
        d.check_all(&[
            &["CONFIG", "SET", "latency-tracking", "no"],
            &["CONFIG", "RESETSTAT"],
            &["SET", "a", "1"],
            &["LATENCY", "HISTOGRAM", "set"],
            &["CONFIG", "SET", "latency-tracking", "yes"],
        ]);
    }
}

/// The active expiry of many keys at once is an `expire-cycle` event on both servers.
#[test]
fn a_long_expiry_cycle_is_an_event() {
    let mut d = Differential::start();
    d.check_all(&[
        &["CONFIG", "SET", "latency-monitor-threshold", "1"],
        &[
            "EVAL",
            "for i = 1, 200000 do redis.call('SET', 'k' .. i, 'v', 'PX', 1) end return 1",
            "0",
        ],
    ]);
    for (name, client) in [("node", &mut d.node_client), ("redis", &mut d.redis_client)] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let history = client.call(&["LATENCY", "HISTORY", "expire-cycle"]);
            if history
                .as_array()
                .is_some_and(|samples| !samples.is_empty())
            {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: no expire-cycle event"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let (node, redis) = d.both(&["LATENCY", "DOCTOR"]);
    let node = without_digits(&node);
    assert!(node.contains("expire-cycle"), "{node}");
    // Both advise the same for the events they share.
    let redis = without_digits(&redis);
    assert!(redis.contains("expire-cycle"), "{redis}");
}
