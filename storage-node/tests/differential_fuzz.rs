//! The differential command fuzzer's CI profile: a fixed seed and a fixed number of cases
//! (bounded by count, not time, so every run executes the same commands), a storage-node
//! against redis-server 7.0. Fails on any crash or hang of the node and on any reply
//! difference not listed in `tests/harness/src/difffuzz/allow-list.txt`.
//! Long runs: `cargo run -p test-harness --bin difffuzz -- --seconds 600 --seed 7`.

use test_harness::difffuzz::{self, Config, Target};

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
