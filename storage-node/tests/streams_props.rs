//! Random sequences of stream commands on two keys, checked against a real redis-server:
//! every reply, and after every command the DUMP payload of each key, so node splits,
//! tombstones, `~` and exact trims and the metadata must all be Redis's to the byte.
//!
//! Each sequence runs under its own `stream-node-max-entries` / `stream-node-max-bytes`, so
//! nodes fill within a few commands. Ids are explicit or `<ms>-*` (never `*`, whose id is
//! the clock's).

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::Differential;

const KEYS: &[&str] = &["{x}a", "{x}b"];

type Command = Vec<String>;

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_string)
}

/// An id near the others, so adds collide, trims cut inside nodes and deletes hit.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0u64..300, 0u64..4).prop_map(|(ms, seq)| format!("{ms}-{seq}")),
        1 => (0u64..300).prop_map(|ms| ms.to_string()),
        1 => Just("18446744073709551615-18446744073709551615".to_string()),
        1 => Just("0-0".to_string()),
    ]
}

/// A range bound: an id, `-`, `+`, or an exclusive id.
fn bound() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => id(),
        1 => Just("-".to_string()),
        1 => Just("+".to_string()),
        2 => id().prop_map(|id| format!("({id}")),
    ]
}

fn fields() -> impl Strategy<Value = Vec<String>> {
    let field = prop::sample::select(&["a", "b", "name", "7", "-3", ""][..]);
    let value = prop_oneof![
        3 => (0i64..100_000).prop_map(|n| n.to_string()),
        2 => (0usize..90, any::<u8>()).prop_map(|(n, c)| {
            char::from(b'a' + c % 26).to_string().repeat(n)
        }),
    ];
    prop::collection::vec((field, value), 1..4).prop_map(|pairs| {
        pairs
            .into_iter()
            .flat_map(|(f, v)| [f.to_string(), v])
            .collect()
    })
}

/// MAXLEN / MINID with `=` / `~` and sometimes LIMIT (as XADD and XTRIM take them).
fn trim() -> impl Strategy<Value = Vec<String>> {
    let strategy = prop_oneof![
        (0u64..40).prop_map(|n| vec!["MAXLEN".to_string(), n.to_string()]),
        id().prop_map(|id| vec!["MINID".to_string(), id]),
    ];
    let modifier = prop::sample::select(&["", "=", "~"][..]);
    let limit = prop::option::of(0u64..30);
    (strategy, modifier, limit).prop_map(|(strategy, modifier, limit)| {
        let mut words = vec![strategy[0].clone()];
        if !modifier.is_empty() {
            words.push(modifier.to_string());
        }
        words.push(strategy[1].clone());
        if let Some(n) = limit.filter(|_| modifier == "~") {
            words.extend(["LIMIT".to_string(), n.to_string()]);
        }
        words
    })
}

fn command() -> impl Strategy<Value = Command> {
    let words = |parts: &[&str]| -> Vec<String> { parts.iter().map(|p| p.to_string()).collect() };
    let xadd_id = prop_oneof![
        4 => id(),
        1 => (0u64..300).prop_map(|ms| format!("{ms}-*")),
    ];
    prop_oneof![
        12 => (key(), any::<bool>(), prop::option::of(trim()), xadd_id, fields()).prop_map(
            move |(k, nomk, trim, id, fields)| {
                let mut c = words(&["XADD"]);
                c.push(k);
                if nomk {
                    c.push("NOMKSTREAM".into());
                }
                c.extend(trim.unwrap_or_default());
                c.push(id);
                c.extend(fields);
                c
            }
        ),
        4 => (key(), prop::collection::vec(id(), 1..4)).prop_map(move |(k, ids)| {
            let mut c = words(&["XDEL"]);
            c.push(k);
            c.extend(ids);
            c
        }),
        3 => (key(), trim()).prop_map(move |(k, trim)| {
            let mut c = words(&["XTRIM"]);
            c.push(k);
            c.extend(trim);
            c
        }),
        4 => (key(), bound(), bound(), prop::option::of(-1i64..6), any::<bool>()).prop_map(
            move |(k, start, end, count, rev)| {
                let mut c = if rev { words(&["XREVRANGE"]) } else { words(&["XRANGE"]) };
                c.extend([k, start, end]);
                if let Some(n) = count {
                    c.extend(["COUNT".to_string(), n.to_string()]);
                }
                c
            }
        ),
        2 => key().prop_map(move |k| vec!["XLEN".to_string(), k]),
        1 => (key(), id()).prop_map(move |(k, id)| {
            vec!["XREAD".to_string(), "STREAMS".into(), k, id]
        }),
        1 => (key(), id(), prop::option::of(0u64..50)).prop_map(move |(k, id, added)| {
            let mut c = vec!["XSETID".to_string(), k, id];
            if let Some(n) = added {
                c.extend(["ENTRIESADDED".to_string(), n.to_string()]);
            }
            c
        }),
        1 => key().prop_map(move |k| vec!["XINFO".to_string(), "STREAM".into(), k]),
        1 => key().prop_map(move |k| vec!["DEL".to_string(), k]),
    ]
}

/// Sends `args` to both servers; the replies must be the same bytes.
fn compare(d: &mut Differential, args: &[String]) -> Result<(), TestCaseError> {
    d.compare(args).map_err(TestCaseError::fail)
}

#[test]
fn random_sequences_match_redis_reply_by_reply_and_dump_by_dump() {
    let d = RefCell::new(Differential::start());
    let entries = prop::sample::select(&["0", "1", "3", "10", "100"][..]);
    let bytes = prop::sample::select(&["0", "60", "200", "4096"][..]);
    let sequences = (entries, bytes, prop::collection::vec(command(), 1..60));
    TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    })
    .run(&sequences, |(entries, bytes, commands)| {
        let mut d = d.borrow_mut();
        let setting =
            |name: &str, value: &str| ["CONFIG", "SET", name, value].map(str::to_string).to_vec();
        compare(&mut d, &["FLUSHALL".to_string()])?;
        compare(&mut d, &setting("stream-node-max-entries", entries))?;
        compare(&mut d, &setting("stream-node-max-bytes", bytes))?;
        for command in &commands {
            compare(&mut d, command)?;
            for key in KEYS {
                compare(&mut d, &["DUMP".to_string(), key.to_string()])?;
            }
        }
        Ok(())
    })
    .unwrap();
}
