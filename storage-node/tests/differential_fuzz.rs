//! The differential command fuzzer's CI profile: a fixed seed and a fixed number of cases
//! (bounded by count, not time, so every run executes the same commands), a storage-node
//! against redis-server 7.0. Fails on any crash or hang of the node and on any reply
//! difference not listed in `tests/harness/src/difffuzz/allow-list.txt`.
//! Long runs: `cargo run -p test-harness --bin difffuzz -- --seconds 600 --seed 7`.

use test_harness::difffuzz::{self, Config, Outcome, Sides, Step, Target};

/// Seed and size of the CI profile.
const SEED: u64 = 20;
const CASES: u64 = 600;

#[test]
fn storage_node_matches_redis_under_hostile_commands() {
    let report = difffuzz::run(&Config::cases(Target::Node, SEED, CASES));
    let text = report.render();
    println!("{text}");
    assert_eq!(report.cases, CASES, "{text}");
    assert!(report.passed(), "{text}");
}

fn step(words: &[&str]) -> Step {
    Step {
        name: words[0].to_ascii_lowercase(),
        inner: None,
        args: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
    }
}

/// Redis 7.0's SORT does not clear `errno` before `strtod`, so after an argument that
/// under- or overflows a double (`1e-320`) it refuses numbers it reads fine. The fuzzer asks
/// such a SORT again on a fresh connection (accepting one clears `errno`) instead of
/// reporting the node's correct answer as a difference.
#[test]
fn redis_stale_errno_in_sort_is_no_difference() {
    let sides = Sides::start(Target::Node);
    let steps = [
        step(&["ZREMRANGEBYSCORE", "{fz}intset", "1e-320", "inf"]),
        step(&["SORT_RO", "{fz}intset"]),
        step(&["SORT", "{fz}intset", "LIMIT", "1", "5", "STORE", "{fz}new"]),
        step(&["LRANGE", "{fz}new", "0", "-1"]),
    ];
    match difffuzz::run_case(&sides, &steps) {
        Outcome::Completed(mismatches) => assert!(mismatches.is_empty(), "{mismatches:#?}"),
        other => panic!("{other:?}"),
    }
}
