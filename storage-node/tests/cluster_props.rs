//! Random sequences of slot assignments, open migrations and key commands on a lone
//! cluster-mode storage-node and a lone cluster-mode redis-server: every reply must be the
//! same (with the node id and ports replaced by placeholders).

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use slotproxy::cluster::key_slot;
use test_harness::{Differential, RawClient};

const KEYS: &[&str] = &["a", "b", "{a}x", "c"];

fn start() -> Differential {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "storage-node-cluster-props-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("node dir");
    let dir = dir.display().to_string();
    Differential::start_with(
        &["--dir", &dir, "--cluster-enabled", "yes"],
        &["--cluster-enabled", "yes"],
    )
}

/// The slots the keys live in: the only slots the sequences touch, so the node always
/// keeps most of its slots (a node without slots counts as a minority and stays down for
/// seconds, which would make every case wait).
fn slots() -> Vec<String> {
    let mut slots: Vec<String> = KEYS
        .iter()
        .map(|k| key_slot(k.as_bytes()).to_string())
        .collect();
    slots.dedup();
    slots
}

fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn command() -> impl Strategy<Value = Vec<String>> {
    let key = || prop::sample::select(KEYS);
    let slot = || prop::sample::select(slots());
    // GETKEYSINSLOT only where a slot holds at most one key: the order within a slot is
    // each server's own.
    let single_key_slot =
        prop::sample::select(vec![key_slot(b"b").to_string(), key_slot(b"c").to_string()]);
    prop_oneof![
        (key(), "[a-z]{0,3}").prop_map(|(k, v)| words(&["SET", k, &v])),
        key().prop_map(|k| words(&["GET", k])),
        key().prop_map(|k| words(&["DEL", k])),
        (key(), key()).prop_map(|(a, b)| words(&["MGET", a, b])),
        (key(), key()).prop_map(|(a, b)| words(&["MSET", a, "1", b, "2"])),
        (key(), key()).prop_map(|(a, b)| words(&["EXISTS", a, b])),
        slot().prop_map(|s| words(&["CLUSTER", "ADDSLOTS", &s])),
        slot().prop_map(|s| words(&["CLUSTER", "DELSLOTS", &s])),
        (slot(), slot()).prop_map(|(a, b)| words(&["CLUSTER", "ADDSLOTSRANGE", &a, &b])),
        (slot(), slot()).prop_map(|(a, b)| words(&["CLUSTER", "DELSLOTSRANGE", &a, &b])),
        (
            slot(),
            prop::sample::select(&["IMPORTING", "MIGRATING", "NODE"][..])
        )
            .prop_map(|(s, action)| words(&["CLUSTER", "SETSLOT", &s, action, "<ID>"])),
        slot().prop_map(|s| words(&["CLUSTER", "SETSLOT", &s, "STABLE"])),
        slot().prop_map(|s| words(&["CLUSTER", "COUNTKEYSINSLOT", &s])),
        single_key_slot.prop_map(|s| words(&["CLUSTER", "GETKEYSINSLOT", &s, "5"])),
        Just(words(&["ASKING"])),
        Just(words(&["CLUSTER", "INFO"])),
        Just(words(&["CLUSTER", "NODES"])),
        Just(words(&["CLUSTER", "SLOTS"])),
    ]
}

fn myid(client: &mut RawClient) -> String {
    String::from_utf8_lossy(client.call(&["CLUSTER", "MYID"]).as_bytes().expect("id")).into_owned()
}

/// Sends a command with `<ID>` filled in; the reply with id and ports as placeholders.
fn run(client: &mut RawClient, id: &str, port: u16, command: &[String]) -> String {
    let filled: Vec<String> = command.iter().map(|a| a.replace("<ID>", id)).collect();
    let args: Vec<&[u8]> = filled.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&client.call_raw(&args))
        .replace(id, "<ID>")
        .replace(&(port as u32 + 10000).to_string(), "<CPORT>")
        .replace(&port.to_string(), "<PORT>")
}

fn compare(
    d: &mut Differential,
    ids: &(String, String),
    command: &[String],
) -> Result<(), TestCaseError> {
    let (node_port, redis_port) = (d.node.port, d.redis.port);
    let node = run(&mut d.node_client, &ids.0, node_port, command);
    let redis = run(&mut d.redis_client, &ids.1, redis_port, command);
    if node != redis {
        return Err(TestCaseError::fail(format!(
            "{command:?}: node {node:?} redis {redis:?}"
        )));
    }
    Ok(())
}

/// Both servers serve every slot and report `cluster_state:ok`.
fn serve_everything(d: &mut Differential) {
    d.check(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (a, b) = d.both(&["CLUSTER", "INFO"]);
        let ok = |f: &slotproxy::resp::Frame| {
            String::from_utf8_lossy(f.as_bytes().unwrap_or(b"")).contains("cluster_state:ok")
        };
        if ok(&a) && ok(&b) {
            return;
        }
        assert!(Instant::now() < deadline, "cluster state did not become ok");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn random_slot_and_key_sequences_match_redis() {
    let mut d = start();
    serve_everything(&mut d);
    let ids = (myid(&mut d.node_client), myid(&mut d.redis_client));
    let d = RefCell::new(d);
    let sequences = prop::collection::vec(command(), 1..20);
    TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    })
    .run(&sequences, |commands| {
        let mut d = d.borrow_mut();
        compare(&mut d, &ids, &words(&["FLUSHALL"]))?;
        for slot in slots() {
            compare(
                &mut d,
                &ids,
                &words(&["CLUSTER", "SETSLOT", &slot, "STABLE"]),
            )?;
            compare(&mut d, &ids, &words(&["CLUSTER", "ADDSLOTS", &slot]))?;
        }
        for command in &commands {
            compare(&mut d, &ids, command)?;
        }
        Ok(())
    })
    .unwrap_or_else(|failure| panic!("{failure}"));
}
