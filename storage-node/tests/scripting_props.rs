//! Random scripts built from a small alphabet of statements (redis.call / redis.pcall on a
//! few keys, Lua values of every kind, library round trips) and random return values, each
//! reply compared with a real redis-server. One server pair; FLUSHALL between cases.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::Differential;

const STATEMENTS: &[&str] = &[
    "redis.call('set', KEYS[1], ARGV[1])",
    "redis.call('incr', KEYS[2])",
    "redis.pcall('incr', KEYS[1])",
    "redis.call('del', KEYS[1])",
    "redis.call('append', KEYS[2], ARGV[1])",
    "redis.setresp(3)",
    "redis.setresp(2)",
    "local ok = pcall(redis.call, 'incr', KEYS[1])",
];

const RESULTS: &[&str] = &[
    "redis.call('get', KEYS[1])",
    "redis.call('get', KEYS[2])",
    "redis.pcall('incr', KEYS[1])",
    "redis.call('mget', KEYS[1], KEYS[2], 'nokey')",
    "redis.call('exists', KEYS[1], KEYS[2])",
    "{1, 2.7, 'x', false, true, nil, 3}",
    "{ok = 'fine'}",
    "{err = 'ERR custom'}",
    "{double = 1.25}",
    "{map = {a = 1}}",
    "{set = {m = true}}",
    "cjson.encode({a = {1, 2}, b = 'x'})",
    "cjson.decode('[1, 2.5, \"s\", null]')",
    "{cmsgpack.unpack(cmsgpack.pack({1, 'a'}, -5, 2.5))}",
    "{struct.unpack('>i4h', struct.pack('>i4h', ARGV[1] == '' and 0 or #ARGV[1], -7))}",
    "{bit.band(255, #ARGV[1]), bit.tohex(#ARGV[1])}",
    "redis.sha1hex(ARGV[1])",
    "tonumber(ARGV[1])",
    "ARGV[1] + 0",
];

const VALUES: &[&str] = &["", "0", "1", "-3", "2.5", "abc", "10000000000", "x y"];

fn script() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(STATEMENTS), 0..5),
        prop::sample::select(RESULTS),
    )
        .prop_map(|(statements, result)| format!("{} return {result}", statements.join(" ")))
}

fn compare(d: &mut Differential, command: &[&str]) -> Result<(), TestCaseError> {
    let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
    d.node_client.send(&args);
    d.redis_client.send(&args);
    let node = d.node_client.read_reply().1;
    let redis = d.redis_client.read_reply().1;
    if node != redis {
        return Err(TestCaseError::fail(format!(
            "{command:?}: node {:?} redis {:?}",
            String::from_utf8_lossy(&node),
            String::from_utf8_lossy(&redis)
        )));
    }
    Ok(())
}

#[test]
fn random_scripts_match_redis() {
    let d = RefCell::new(Differential::start());
    let case = (
        prop::collection::vec((script(), prop::sample::select(VALUES)), 1..6),
        any::<bool>(),
    );
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case, |(scripts, resp3)| {
            let mut d = d.borrow_mut();
            d.set_resp3(resp3);
            compare(&mut d, &["FLUSHALL"])?;
            for (script, value) in &scripts {
                compare(&mut d, &["EVAL", script, "2", "k1", "k2", value])?;
            }
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}
