//! The differential command fuzzer through slotproxy: hostile commands sent to the proxy in
//! front of three cluster-mode storage-nodes, compared with a standalone redis-server 7.0.
//! Every prepared key is hash-tagged into one slot (`{fz}...`); commands the proxy answers
//! itself or refuses by design are excluded (`policy::EXCLUDED_THROUGH_PROXY`). A fixed seed
//! and case count: fails on a crash or hang of the proxy or of any node, and on a reply
//! difference missing from `tests/harness/src/difffuzz/allow-list.txt`.
//! Long runs: `cargo run -p test-harness --bin difffuzz -- --target proxy --seconds 600`.

use test_harness::difffuzz::{self, Config, Target};

/// Seed and size of the CI profile.
const SEED: u64 = 30;
const CASES: u64 = 300;

#[test]
fn proxy_matches_redis_under_hostile_commands() {
    let report = difffuzz::run(&Config::cases(Target::Proxy, SEED, CASES));
    let text = report.render();
    println!("{text}");
    assert_eq!(report.cases, CASES, "{text}");
    assert!(report.passed(), "{text}");
}
