//! MEMORY against a real redis-server 7.0: the figures are this process's own (they differ),
//! so STATS is compared by shape (the same fields in the same order, each of the same RESP
//! type, in RESP2 and RESP3); MALLOC-STATS is jemalloc's report on both; PURGE, HELP and the
//! errors are compared byte for byte.

use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient};

/// Each field of a MEMORY STATS reply with the kind of its value (nested maps flattened).
fn shape(frame: &Frame) -> Vec<String> {
    let pairs: Vec<&Frame> = match frame {
        Frame::Array(items) => items.iter().collect(),
        Frame::Map(pairs) => pairs.iter().flat_map(|(k, v)| [k, v]).collect(),
        other => panic!("MEMORY STATS answered {other:?}"),
    };
    let mut fields = Vec::new();
    for pair in pairs.chunks(2) {
        let name = String::from_utf8_lossy(pair[0].as_bytes().expect("a field name")).into_owned();
        match pair[1] {
            Frame::Array(_) | Frame::Map(_) => {
                fields.push(format!("{name} {{"));
                fields.extend(shape(pair[1]));
                fields.push("}".into());
            }
            value => fields.push(format!("{name} {}", kind(value))),
        }
    }
    fields
}

fn kind(frame: &Frame) -> &'static str {
    match frame {
        Frame::Integer(_) => "integer",
        Frame::Double(_) => "double",
        // RESP2 doubles are bulk strings holding a number with a point.
        Frame::Bulk(b) if std::str::from_utf8(b).is_ok_and(|t| t.parse::<f64>().is_ok()) => {
            "double"
        }
        _ => "other",
    }
}

fn integer_field(frame: &Frame, name: &str) -> i64 {
    let fields = frame.as_array().expect("RESP2 array");
    let at = fields
        .iter()
        .position(|f| f.as_bytes() == Some(name.as_bytes()))
        .unwrap_or_else(|| panic!("no {name}"));
    match fields[at + 1] {
        Frame::Integer(n) => n,
        ref other => panic!("{name} is {other:?}"),
    }
}

#[test]
fn stats_have_redis_fields_in_redis_order() {
    let mut d = Differential::start();
    d.check_all(&[
        &["SET", "a", "1"],
        &["SELECT", "3"],
        &["SET", "b", "1"],
        &["SELECT", "0"],
    ]);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        let (node, redis) = d.both(&["MEMORY", "STATS"]);
        assert_eq!(
            shape(&node),
            shape(&redis),
            "RESP{}",
            if resp3 { 3 } else { 2 }
        );
    }
    d.set_resp3(false);
    // The node's figures are its own and hang together.
    let (node, _) = d.both(&["MEMORY", "STATS"]);
    let allocated = integer_field(&node, "total.allocated");
    assert!(allocated > 0, "jemalloc reports what it holds");
    assert!(integer_field(&node, "peak.allocated") >= allocated);
    assert!(integer_field(&node, "allocator.resident") >= integer_field(&node, "allocator.active"));
    assert_eq!(integer_field(&node, "keys.count"), 2);
}

#[test]
fn allocated_bytes_follow_the_data() {
    let d = Differential::start();
    let mut node = RawClient::connect(d.node.port);
    let before = integer_field(&node.call(&["MEMORY", "STATS"]), "total.allocated");
    let value = "x".repeat(4 * 1024 * 1024);
    node.call(&["SET", "big", &value]);
    let after = integer_field(&node.call(&["MEMORY", "STATS"]), "total.allocated");
    assert!(after >= before + 4 * 1024 * 1024, "{before} -> {after}");
    node.call(&["DEL", "big"]);
    let freed = integer_field(&node.call(&["MEMORY", "STATS"]), "total.allocated");
    // Most of it goes back (other allocations come and go meanwhile).
    assert!(freed + 3 * 1024 * 1024 <= after, "{after} -> {freed}");
}

#[test]
fn malloc_stats_is_jemallocs_report() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        let (node, redis) = d.both(&["MEMORY", "MALLOC-STATS"]);
        for report in [&node, &redis] {
            let text = match report {
                Frame::Verbatim { text, .. } | Frame::Bulk(text) => {
                    String::from_utf8_lossy(text).into_owned()
                }
                other => panic!("MALLOC-STATS answered {other:?}"),
            };
            assert!(
                text.starts_with("___ Begin jemalloc statistics ___\n"),
                "{text:.200}"
            );
            assert!(text.contains("Allocated: "), "{text:.200}");
            assert!(text.trim_end().ends_with("--- End jemalloc statistics ---"));
        }
        assert_eq!(
            std::mem::discriminant(&node),
            std::mem::discriminant(&redis),
            "the same RESP type"
        );
    }
}

#[test]
fn purge_help_and_errors_match() {
    let mut d = Differential::start();
    d.check_all(&[
        &["MEMORY", "PURGE"],
        &["MEMORY", "HELP"],
        &["MEMORY", "STATS", "extra"],
        &["MEMORY", "PURGE", "extra"],
        &["MEMORY", "MALLOC-STATS", "extra"],
        &["MEMORY", "NOSUCH"],
        &["MEMORY", "USAGE", "missing"],
        &["MEMORY", "USAGE", "missing", "SAMPLES", "-1"],
    ]);
    d.set_resp3(true);
    d.check(&["MEMORY", "PURGE"]);
    let (node, redis) = d.both(&["MEMORY", "STATS"]);
    assert_eq!(shape(&node).len(), shape(&redis).len());
}
