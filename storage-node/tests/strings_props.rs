//! Random sequences of string commands over a few keys and values, each reply compared with
//! a real redis-server. One server pair per property; FLUSHALL between cases.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::differential::words;
use test_harness::Differential;

const KEYS: &[&str] = &["a", "b", "{a}c"];

const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "42",
    "007",
    "abc",
    "hello world",
    "1.5",
    "-0.25",
    "1e3",
    "9223372036854775807",
    "-9223372036854775808",
    " 1",
    "inf",
];

const INTEGERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-3",
    "100",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "x",
];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(String::from)
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(VALUES).prop_map(String::from),
        1 => "[a-c0-9]{0,6}",
    ]
}

fn integer() -> impl Strategy<Value = String> {
    prop::sample::select(INTEGERS).prop_map(String::from)
}

/// A float argument: decimal, exponent, hex, or something invalid.
fn float() -> impl Strategy<Value = String> {
    prop_oneof![
        "[+-]?[0-9]{1,6}(\\.[0-9]{0,8})?",
        "[+-]?0\\.[0-9]{1,20}",
        "[+-]?[1-9][0-9]{0,3}e[+-]?[0-9]{1,3}",
        "0x[0-9a-f]{1,8}(\\.[0-9a-f]{1,4})?(p[+-]?[0-9]{1,2})?",
        any::<f64>().prop_map(|f| f.to_string()),
        prop::sample::select(&["abc", "", "inf", "-inf", "1e5000", " 1"][..])
            .prop_map(String::from),
    ]
}

/// SET's options, in any order (conflicts included, so syntax errors are exercised).
/// Relative expire times are long, so nothing expires while a case runs.
fn set_options() -> impl Strategy<Value = Vec<String>> {
    let option = prop_oneof![
        Just(vec!["NX".to_string()]),
        Just(vec!["XX".to_string()]),
        Just(vec!["GET".to_string()]),
        Just(vec!["KEEPTTL".to_string()]),
        Just(vec!["EX".to_string(), "100".to_string()]),
        Just(vec!["PX".to_string(), "100000".to_string()]),
        Just(vec!["PXAT".to_string(), "1".to_string()]),
        Just(vec!["EXAT".to_string(), "99999999999".to_string()]),
        Just(vec!["EX".to_string(), "0".to_string()]),
    ];
    prop::collection::vec(option, 0..3).prop_map(|parts| parts.concat())
}

fn getex_options() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        Just(vec![]),
        Just(vec!["PERSIST".to_string()]),
        Just(vec!["EX".to_string(), "100".to_string()]),
        Just(vec!["PXAT".to_string(), "1".to_string()]),
        Just(vec!["EX".to_string(), "-1".to_string()]),
        Just(vec!["GET".to_string()]),
    ]
}

fn command() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        key().prop_map(|k| words(&["GET", &k])),
        (key(), value(), set_options()).prop_map(|(k, v, options)| {
            let mut command = words(&["SET", &k, &v]);
            command.extend(options);
            command
        }),
        (key(), value()).prop_map(|(k, v)| words(&["SETNX", &k, &v])),
        (key(), value()).prop_map(|(k, v)| words(&["GETSET", &k, &v])),
        key().prop_map(|k| words(&["GETDEL", &k])),
        (key(), getex_options()).prop_map(|(k, options)| {
            let mut command = words(&["GETEX", &k]);
            command.extend(options);
            command
        }),
        (key(), key(), key()).prop_map(|(a, b, c)| words(&["MGET", &a, &b, &c])),
        (key(), value(), key(), value()).prop_map(|(a, x, b, y)| words(&["MSET", &a, &x, &b, &y])),
        (key(), value(), key(), value())
            .prop_map(|(a, x, b, y)| words(&["MSETNX", &a, &x, &b, &y])),
        key().prop_map(|k| words(&["INCR", &k])),
        key().prop_map(|k| words(&["DECR", &k])),
        (key(), integer()).prop_map(|(k, n)| words(&["INCRBY", &k, &n])),
        (key(), integer()).prop_map(|(k, n)| words(&["DECRBY", &k, &n])),
        (key(), float()).prop_map(|(k, f)| words(&["INCRBYFLOAT", &k, &f])),
        (key(), value()).prop_map(|(k, v)| words(&["APPEND", &k, &v])),
        key().prop_map(|k| words(&["STRLEN", &k])),
        (key(), integer(), integer()).prop_map(|(k, s, e)| words(&["GETRANGE", &k, &s, &e])),
        (key(), -8i64..8, -8i64..8).prop_map(|(k, s, e)| words(&[
            "SUBSTR",
            &k,
            &s.to_string(),
            &e.to_string()
        ])),
        (key(), -1i64..12, value()).prop_map(|(k, o, v)| words(&[
            "SETRANGE",
            &k,
            &o.to_string(),
            &v
        ])),
        (key(), key()).prop_map(|(a, b)| words(&["LCS", &a, &b])),
        (key(), key(), 0i64..3).prop_map(|(a, b, m)| {
            words(&[
                "LCS",
                &a,
                &b,
                "IDX",
                "MINMATCHLEN",
                &m.to_string(),
                "WITHMATCHLEN",
            ])
        }),
        (key(), key()).prop_map(|(a, b)| words(&["LCS", &a, &b, "LEN"])),
    ]
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn random_string_command_sequences_match_redis() {
    let d = RefCell::new(Differential::start());
    let sequences = prop::collection::vec(command(), 1..24);
    runner(128)
        .run(&(sequences, any::<bool>()), |(commands, resp3)| {
            let mut d = d.borrow_mut();
            d.set_resp3(resp3);
            d.compare(&words(&["FLUSHALL"]))
                .map_err(TestCaseError::fail)?;
            for command in &commands {
                d.compare(command).map_err(TestCaseError::fail)?;
            }
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}

#[test]
fn random_incrbyfloat_chains_match_redis() {
    let d = RefCell::new(Differential::start());
    let chains = (float(), prop::collection::vec(float(), 1..10));
    runner(128)
        .run(&chains, |(start, increments)| {
            let mut d = d.borrow_mut();
            d.compare(&words(&["SET", "f", &start]))
                .map_err(TestCaseError::fail)?;
            for increment in &increments {
                d.compare(&words(&["INCRBYFLOAT", "f", increment]))
                    .map_err(TestCaseError::fail)?;
            }
            d.compare(&words(&["GET", "f"]))
                .map_err(TestCaseError::fail)
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}
