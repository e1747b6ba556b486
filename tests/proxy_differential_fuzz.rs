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

/// Found by the fuzzer: MSET with a key and no value over two slots made the proxy's split
/// cut a pair past the end of the arguments (the worker panicked, the connection closed).
/// Now the first key's node answers it, as a cluster node does: CROSSSLOT across slots,
/// Redis's arity error within one.
#[test]
fn mset_without_a_value_gets_a_node_answer() {
    use test_harness::{start_proxy, Cluster, RawClient, ServerProcess};
    let cluster = Cluster::storage_nodes(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    let redis = ServerProcess::redis_server(&[]);
    let mut through_proxy = RawClient::connect(proxy.port);
    let mut reference = RawClient::connect(redis.port);
    let across: &[&[u8]] = &[b"MSET", b"{fz}big", b"[a", b"$"];
    assert_eq!(
        through_proxy.call_raw(across),
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
    for command in [&["MSET", "{fz}a", "1", "{fz}b"][..], &["PING"]] {
        let args: Vec<&[u8]> = command.iter().map(|w| w.as_bytes()).collect();
        assert_eq!(
            test_harness::show(&through_proxy.call_raw(&args)),
            test_harness::show(&reference.call_raw(&args)),
            "{command:?}"
        );
    }
}

/// What the proxy refuses by design and the reference does can change the reference's
/// state: SCRIPT DEBUG YES turns the reference connection's EVALSHA into `Please use EVAL`.
/// The refusal is the one difference reported; the case compares liveness only after it.
#[test]
fn a_refusal_ends_the_comparison() {
    use test_harness::difffuzz::{Outcome, Sides, Step};
    let step = |words: &[&str]| Step {
        name: words[0].to_ascii_lowercase(),
        inner: None,
        args: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
    };
    let sides = Sides::start(Target::Proxy);
    let mut debug = step(&["SCRIPT", "DEBUG", "YES"]);
    debug.name = "script|debug".into();
    let steps = [
        debug,
        step(&["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"]),
    ];
    match difffuzz::run_case(&sides, &steps) {
        Outcome::Completed(mismatches) => {
            let commands: Vec<&str> = mismatches.iter().map(|m| m.command.as_str()).collect();
            assert_eq!(commands, ["script|debug"], "{mismatches:#?}");
        }
        other => panic!("{other:?}"),
    }
}
