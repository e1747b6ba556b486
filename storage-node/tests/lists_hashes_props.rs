//! Random sequences of list commands and of hash commands over a few keys, each reply
//! compared byte for byte with a real redis-server. One server pair per property; FLUSHALL
//! between cases. Hashes stay small here (listpack-encoded), so their reply order is
//! Redis's; blocking commands appear only with keys that hold elements or inside the
//! non-blocking forms.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::differential::words;
use test_harness::Differential;

const KEYS: &[&str] = &["a", "b", "s"];
const ELEMENTS: &[&str] = &["x", "y", "z", "1", "-7", "300000", "", "hello world"];
const INDEXES: &[&str] = &["0", "1", "-1", "2", "-3", "5", "-100", "x"];
const FIELDS: &[&str] = &["f", "g", "h", "1", ""];
const VALUES: &[&str] = &[
    "v",
    "0",
    "10",
    "-3",
    "1.5",
    "abc",
    "9223372036854775807",
    "",
];

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(options).prop_map(String::from)
}

fn key() -> impl Strategy<Value = String> {
    pick(KEYS)
}

fn end() -> impl Strategy<Value = String> {
    pick(&["LEFT", "RIGHT"])
}

fn list_command() -> impl Strategy<Value = Vec<String>> {
    let element = || pick(ELEMENTS);
    let index = || pick(INDEXES);
    prop_oneof![
        (
            pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]),
            key(),
            prop::collection::vec(element(), 1..4)
        )
            .prop_map(|(c, k, es)| {
                let mut command = words(&[&c, &k]);
                command.extend(es);
                command
            }),
        (pick(&["LPOP", "RPOP"]), key()).prop_map(|(c, k)| words(&[&c, &k])),
        (pick(&["LPOP", "RPOP"]), key(), index()).prop_map(|(c, k, n)| words(&[&c, &k, &n])),
        key().prop_map(|k| words(&["LLEN", &k])),
        (key(), index(), index()).prop_map(|(k, s, e)| words(&["LRANGE", &k, &s, &e])),
        (key(), index()).prop_map(|(k, i)| words(&["LINDEX", &k, &i])),
        (key(), index(), element()).prop_map(|(k, i, e)| words(&["LSET", &k, &i, &e])),
        (key(), pick(&["BEFORE", "AFTER"]), element(), element())
            .prop_map(|(k, w, p, e)| words(&["LINSERT", &k, &w, &p, &e])),
        (key(), index(), element()).prop_map(|(k, n, e)| words(&["LREM", &k, &n, &e])),
        (key(), index(), index()).prop_map(|(k, s, e)| words(&["LTRIM", &k, &s, &e])),
        (
            key(),
            element(),
            prop::collection::vec((pick(&["RANK", "COUNT", "MAXLEN"]), index()), 0..3)
        )
            .prop_map(|(k, e, options)| {
                let mut command = words(&["LPOS", &k, &e]);
                for (name, value) in options {
                    command.push(name);
                    command.push(value);
                }
                command
            }),
        (key(), key(), end(), end()).prop_map(|(a, b, f, t)| words(&["LMOVE", &a, &b, &f, &t])),
        (key(), key()).prop_map(|(a, b)| words(&["RPOPLPUSH", &a, &b])),
        (key(), key(), end(), index())
            .prop_map(|(a, b, e, n)| words(&["LMPOP", "2", &a, &b, &e, "COUNT", &n])),
        (key(), element()).prop_map(|(k, v)| words(&["SET", &k, &v])),
        key().prop_map(|k| words(&["DEL", &k])),
        key().prop_map(|k| words(&["TYPE", &k])),
        key().prop_map(|k| words(&["DUMP", &k])),
    ]
}

fn hash_command() -> impl Strategy<Value = Vec<String>> {
    let field = || pick(FIELDS);
    let value = || pick(VALUES);
    prop_oneof![
        (
            pick(&["HSET", "HMSET"]),
            key(),
            prop::collection::vec((field(), value()), 1..3)
        )
            .prop_map(|(c, k, pairs)| {
                let mut command = words(&[&c, &k]);
                for (f, v) in pairs {
                    command.push(f);
                    command.push(v);
                }
                command
            }),
        (key(), field(), value()).prop_map(|(k, f, v)| words(&["HSETNX", &k, &f, &v])),
        (pick(&["HGET", "HEXISTS", "HSTRLEN"]), key(), field())
            .prop_map(|(c, k, f)| words(&[&c, &k, &f])),
        (key(), field(), field()).prop_map(|(k, f, g)| words(&["HMGET", &k, &f, &g])),
        (key(), field(), field()).prop_map(|(k, f, g)| words(&["HDEL", &k, &f, &g])),
        (
            pick(&["HLEN", "HKEYS", "HVALS", "HGETALL", "TYPE", "DUMP"]),
            key()
        )
            .prop_map(|(c, k)| words(&[&c, &k])),
        (key(), field(), pick(INDEXES)).prop_map(|(k, f, n)| words(&["HINCRBY", &k, &f, &n])),
        (key(), field(), value()).prop_map(|(k, f, v)| words(&["HINCRBYFLOAT", &k, &f, &v])),
        (key(), pick(&["0", "6", "100"])).prop_map(|(k, n)| words(&[
            "HRANDFIELD",
            &k,
            &n,
            "WITHVALUES"
        ])),
        (key(), pick(&["*", "f*", "?"])).prop_map(|(k, p)| words(&["HSCAN", &k, "0", "MATCH", &p])),
        key().prop_map(|k| words(&["OBJECT", "ENCODING", &k])),
        (key(), value()).prop_map(|(k, v)| words(&["SET", &k, &v])),
        (key(), value()).prop_map(|(k, v)| words(&["RPUSH", &k, &v])),
        key().prop_map(|k| words(&["DEL", &k])),
    ]
}

fn run(commands: impl Strategy<Value = Vec<String>>) {
    let d = RefCell::new(Differential::start());
    let sequences = prop::collection::vec(commands, 1..32);
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    runner
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
fn random_list_command_sequences_match_redis() {
    run(list_command());
}

#[test]
fn random_hash_command_sequences_match_redis() {
    run(hash_command());
}
