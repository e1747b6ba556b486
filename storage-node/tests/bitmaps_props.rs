//! Random sequences of bitmap and BITFIELD commands on a few keys, checked reply by reply
//! against a real redis-server.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::Differential;

const KEYS: [&str; 3] = ["a", "b", "{a}c"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(&KEYS[..]).prop_map(String::from)
}

/// Range bounds around the sizes the sequences produce (strings of up to ~40 bytes).
fn index() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-50i64..50).prop_map(|i| i.to_string()),
        1 => (-400i64..400).prop_map(|i| i.to_string()),
        1 => prop::sample::select(&["9223372036854775807", "-9223372036854775808", "x"][..])
            .prop_map(String::from),
    ]
}

fn unit() -> impl Strategy<Value = Option<String>> {
    prop::option::of(
        prop::sample::select(&["BYTE", "BIT", "bit", "bits"][..]).prop_map(String::from),
    )
}

fn bit_offset() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => (0u32..320).prop_map(|i| i.to_string()),
        1 => prop::sample::select(&["-1", "4294967296", "1.0", "#1"][..]).prop_map(String::from),
    ]
}

fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-300i64..300).prop_map(|v| v.to_string()),
        2 => any::<i64>().prop_map(|v| v.to_string()),
        1 => prop::sample::select(&["9223372036854775807", "-9223372036854775808", "1x", "0"][..])
            .prop_map(String::from),
    ]
}

fn field_type() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => (any::<bool>(), 1u32..=64).prop_map(|(signed, bits)| {
            if signed { format!("i{bits}") } else { format!("u{}", bits.min(63)) }
        }),
        1 => prop::sample::select(&["u64", "i65", "i0", "x8"][..]).prop_map(String::from),
    ]
}

fn field_offset() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (0u32..300).prop_map(|i| i.to_string()),
        6 => (0u32..6).prop_map(|i| format!("#{i}")),
        1 => prop::sample::select(&["-1", "#-1", "x"][..]).prop_map(String::from),
    ]
}

/// One BITFIELD subcommand with its arguments.
fn field_op() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        3 => (field_type(), field_offset()).prop_map(|(t, o)| vec!["GET".into(), t, o]),
        2 => (field_type(), field_offset(), field_value())
            .prop_map(|(t, o, v)| vec!["SET".into(), t, o, v]),
        3 => (field_type(), field_offset(), field_value())
            .prop_map(|(t, o, v)| vec!["INCRBY".into(), t, o, v]),
        2 => prop::sample::select(&["WRAP", "SAT", "FAIL", "fail", "sat", "wrap", "bogus"][..])
            .prop_map(|m| vec!["OVERFLOW".into(), m.into()]),
    ]
}

fn command() -> impl Strategy<Value = Vec<String>> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    prop_oneof![
        6 => (key(), bit_offset(), prop_oneof![9 => 0u8..2, 1 => 2u8..3])
            .prop_map(move |(k, o, b)| words(&["SETBIT", &k, &o, &b.to_string()])),
        3 => (key(), bit_offset()).prop_map(move |(k, o)| words(&["GETBIT", &k, &o])),
        4 => (key(), prop::option::of((index(), index(), unit()))).prop_map(move |(k, range)| {
            let mut c = words(&["BITCOUNT", &k]);
            if let Some((s, e, u)) = range {
                c.extend([s, e]);
                c.extend(u);
            }
            c
        }),
        5 => (key(), 0u8..2, prop::option::of((index(), prop::option::of((index(), unit())))))
            .prop_map(move |(k, bit, range)| {
                let mut c = words(&["BITPOS", &k, &bit.to_string()]);
                if let Some((s, rest)) = range {
                    c.push(s);
                    if let Some((e, u)) = rest {
                        c.push(e);
                        c.extend(u);
                    }
                }
                c
            }),
        3 => (
            prop::sample::select(&["AND", "OR", "XOR", "NOT", "or"][..]),
            key(),
            prop::collection::vec(key(), 1..4),
        )
            .prop_map(move |(op, dest, sources)| {
                let mut c = words(&["BITOP", op, &dest]);
                c.extend(sources);
                c
            }),
        5 => (key(), any::<bool>(), prop::collection::vec(field_op(), 0..4)).prop_map(
            move |(k, read_only, ops)| {
                let name = if read_only { "BITFIELD_RO" } else { "BITFIELD" };
                let mut c = words(&[name, &k]);
                c.extend(ops.into_iter().flatten());
                c
            }
        ),
        2 => (key(), prop_oneof![
            "[a-z]{0,12}",
            (-100000i64..100000).prop_map(|n| n.to_string()),
        ])
            .prop_map(move |(k, v)| words(&["SET", &k, &v])),
        2 => (key(), prop::collection::vec(any::<u8>(), 0..24)).prop_map(|(k, v)| {
            // Binary values travel hex-encoded and are decoded when sent.
            let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
            vec!["SET".into(), k, format!("hex:{hex}")]
        }),
        2 => key().prop_map(move |k| words(&["GET", &k])),
    ]
}

/// An argument's bytes: `hex:` arguments carry arbitrary bytes.
fn decode(arg: &str) -> Vec<u8> {
    match arg.strip_prefix("hex:") {
        Some(hex) => (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
            .collect(),
        None => arg.as_bytes().to_vec(),
    }
}

#[test]
fn random_bitmap_sequences_match_redis() {
    let differential = RefCell::new(Differential::start());
    let config = Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(command(), 1..40), |commands| {
        let mut d = differential.borrow_mut();
        d.check(&["FLUSHALL"]);
        for command in &commands {
            let args: Vec<Vec<u8>> = command.iter().map(|a| decode(a)).collect();
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            d.node_client.send(&args);
            d.redis_client.send(&args);
            let (_, node) = d.node_client.read_reply();
            let (_, redis) = d.redis_client.read_reply();
            if node != redis {
                return Err(TestCaseError::fail(format!(
                    "{command:?}: node {:?}, redis {:?}",
                    String::from_utf8_lossy(&node),
                    String::from_utf8_lossy(&redis)
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
