//! WAIT through slotproxy, against a real Redis Cluster (redis-server 7.0, which has real
//! WAIT) of 3 masters with one replica each: the count a client gets must describe its own
//! writes, never other clients' or a connection that carried none of them.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slotproxy::cluster::key_slot;
use slotproxy::resp::Frame;
use test_harness::{run_logged, show, signal, start_proxy, Cluster, RawClient};

/// The cluster as the test sees it: which master serves each slot, and each master's
/// replica.
struct Layout {
    /// (first slot, last slot, master port).
    ranges: Vec<(u16, u16, u16)>,
    /// Master port -> its replica's port.
    replica: HashMap<u16, u16>,
    /// Port -> index in `cluster.nodes`.
    index: HashMap<u16, usize>,
}

impl Layout {
    fn of(cluster: &Cluster) -> Layout {
        let mut c = RawClient::connect(cluster.nodes[0].port);
        let slots = c.call(&["CLUSTER", "SLOTS"]);
        let mut ranges = Vec::new();
        for range in slots.as_array().expect("CLUSTER SLOTS array") {
            let items = range.as_array().expect("range");
            let port = items[2].as_array().expect("master")[1]
                .as_integer()
                .expect("port") as u16;
            ranges.push((
                items[0].as_integer().expect("start") as u16,
                items[1].as_integer().expect("end") as u16,
                port,
            ));
        }
        let index: HashMap<u16, usize> = cluster
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.port, i))
            .collect();
        let mut replica = HashMap::new();
        for &(_, _, master) in &ranges {
            let r = cluster.replica_of(index[&master]).expect("a replica");
            replica.insert(master, cluster.nodes[r].port);
        }
        Layout {
            ranges,
            replica,
            index,
        }
    }

    fn master_of(&self, key: &str) -> u16 {
        let slot = key_slot(key.as_bytes());
        self.ranges
            .iter()
            .find(|(start, end, _)| (*start..=*end).contains(&slot))
            .map(|r| r.2)
            .expect("slot served")
    }

    fn masters(&self) -> Vec<u16> {
        let mut masters: Vec<u16> = self.ranges.iter().map(|r| r.2).collect();
        masters.sort();
        masters.dedup();
        masters
    }

    /// `count` keys with `prefix` served by the master on `port`.
    fn keys_on(&self, port: u16, prefix: &str, count: usize) -> Vec<String> {
        (0..)
            .map(|i| format!("{prefix}:{i}"))
            .filter(|k| self.master_of(k) == port)
            .take(count)
            .collect()
    }
}

/// A process stopped with SIGSTOP (by PID) until the guard drops, also when the test fails.
struct Stopped(u32);

impl Stopped {
    fn new(pid: u32) -> Stopped {
        signal(pid, "STOP");
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0, "CONT");
    }
}

fn integer(frame: &Frame) -> i64 {
    frame
        .as_integer()
        .unwrap_or_else(|| panic!("an integer reply, got {frame:?}"))
}

fn set_all(c: &mut RawClient, keys: &[String]) {
    // Pipelined, as a client writing many keys would.
    let mut batch = Vec::new();
    for key in keys {
        batch.extend(RawClient::encode(&[b"SET", key.as_bytes(), key.as_bytes()]));
    }
    c.send_raw(&batch);
    for key in keys {
        let (frame, raw) = c.read_reply();
        assert!(
            matches!(frame, Frame::Simple(ref s) if s == "OK"),
            "SET {key}: {}",
            show(&raw)
        );
    }
}

/// Other clients writing on the same proxy until `stop` (bounded in count and time).
fn background_writers(
    proxy: u16,
    keys: Vec<String>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut c = RawClient::connect(proxy);
        let deadline = Instant::now() + Duration::from_secs(120);
        for round in 0..100_000u64 {
            if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
                break;
            }
            for key in &keys {
                let value = round.to_string();
                c.call_raw(&[b"SET", key.as_bytes(), value.as_bytes()]);
            }
        }
    })
}

/// Every key is on the replica of its master, read there directly (READONLY), with no
/// wait: WAIT said the replica acknowledged it.
fn assert_on_replicas(layout: &Layout, keys: &[String]) {
    let mut clients: HashMap<u16, RawClient> = HashMap::new();
    for key in keys {
        let replica = layout.replica[&layout.master_of(key)];
        let c = clients.entry(replica).or_insert_with(|| {
            let mut c = RawClient::connect(replica);
            c.call(&["READONLY"]);
            c
        });
        c.send(&[b"GET", key.as_bytes()]);
        let (frame, raw) = c.read_reply();
        assert!(
            matches!(frame, Frame::Bulk(ref v) if v[..] == *key.as_bytes()),
            "{key} is not on replica {replica} after WAIT counted it: {}",
            show(&raw)
        );
    }
}

/// A client writes keys on every master with others writing meanwhile; `WAIT 1 5000`
/// answers 1 and every key is on its master's replica.
fn wait_counts_replicas_that_have_every_write(layout: &Layout, proxy: u16) {
    let stop = Arc::new(AtomicBool::new(false));
    let others: Vec<_> = (0..2)
        .map(|n| {
            let keys: Vec<String> = (0..20).map(|i| format!("other{n}:{i}")).collect();
            background_writers(proxy, keys, stop.clone())
        })
        .collect();
    let mut c = RawClient::connect(proxy);
    let keys: Vec<String> = (0..300).map(|i| format!("durable:{i}")).collect();
    set_all(&mut c, &keys);
    // A cross-slot MSET (split over the masters) is a write too.
    let mset_keys: Vec<String> = (0..30).map(|i| format!("mset:{i}")).collect();
    let mut mset: Vec<&[u8]> = vec![b"MSET"];
    for key in &mset_keys {
        mset.push(key.as_bytes());
        mset.push(key.as_bytes());
    }
    assert_eq!(c.call_raw(&mset), b"+OK\r\n");
    assert_eq!(integer(&c.call(&["WAIT", "1", "5000"])), 1);
    assert_on_replicas(layout, &keys);
    assert_on_replicas(layout, &mset_keys);
    stop.store(true, Ordering::Relaxed);
    for t in others {
        t.join().expect("background writer");
    }
}

/// One master's replica is stopped: a client that wrote there gets 0 (not 1), also when it
/// wrote to healthy masters too, while a client that wrote only to the other masters gets 1.
/// Once the replica runs again, the first client's next WAIT counts it.
fn a_stopped_replica_is_not_counted(cluster: &Cluster, layout: &Layout, proxy: u16) {
    let masters = layout.masters();
    let (stalled, healthy) = (masters[0], &masters[1..]);
    let replica = layout.replica[&stalled];
    let stopped = Stopped::new(cluster.nodes[layout.index[&replica]].pid());

    let mut writer = RawClient::connect(proxy);
    set_all(&mut writer, &layout.keys_on(stalled, "stalled", 20));
    let mut other = RawClient::connect(proxy);
    let mut other_keys = Vec::new();
    for &port in healthy {
        other_keys.extend(layout.keys_on(port, "healthy", 20));
    }
    set_all(&mut other, &other_keys);
    assert_eq!(
        integer(&writer.call(&["WAIT", "1", "500"])),
        0,
        "WAIT counted a stopped replica"
    );
    assert_eq!(
        integer(&other.call(&["WAIT", "1", "5000"])),
        1,
        "a client that wrote only to healthy masters"
    );
    assert_on_replicas(layout, &other_keys);
    // Both: the least count over the masters written to.
    let mut both = RawClient::connect(proxy);
    set_all(&mut both, &layout.keys_on(healthy[0], "both", 5));
    set_all(&mut both, &layout.keys_on(stalled, "both", 5));
    assert_eq!(integer(&both.call(&["WAIT", "1", "300"])), 0);
    // WAIT 0: the count at once (a stopped replica acknowledged nothing new).
    assert_eq!(integer(&both.call(&["WAIT", "0", "0"])), 0);

    // WAIT inside MULTI, on the stalled master: the earlier write is not acknowledged.
    let key = &layout.keys_on(stalled, "tx", 1)[0];
    let mut tx = RawClient::connect(proxy);
    set_all(&mut tx, std::slice::from_ref(key));
    tx.call(&["MULTI"]);
    tx.call(&["SET", key, key]);
    tx.call(&["WAIT", "1", "0"]);
    let exec = tx.call(&["EXEC"]);
    let items = exec.as_array().expect("EXEC array");
    assert_eq!(integer(&items[1]), 0, "WAIT inside MULTI: {exec:?}");
    // A transaction without keys runs on the one master the client wrote to.
    tx.call(&["MULTI"]);
    tx.call(&["WAIT", "1", "0"]);
    let exec = tx.call(&["EXEC"]);
    assert_eq!(integer(&exec.as_array().expect("EXEC array")[0]), 0);

    drop(stopped);
    // The trail is kept: once the replica caught up, the same client's WAIT counts it.
    assert_eq!(integer(&writer.call(&["WAIT", "1", "10000"])), 1);
    assert_on_replicas(layout, &layout.keys_on(stalled, "stalled", 20));
}

/// WAIT without writes, argument errors (the node's own texts), RESP3, and WAIT inside
/// MULTI when the client also wrote to another master.
fn edges(cluster: &Cluster, layout: &Layout, proxy: u16) {
    let mut fresh = RawClient::connect(proxy);
    // No write: what Redis answers on a connection that never wrote (every replica).
    assert_eq!(integer(&fresh.call(&["WAIT", "1", "1000"])), 1);
    let mut node = RawClient::connect(cluster.nodes[layout.index[&layout.masters()[0]]].port);
    let mut writer = RawClient::connect(proxy);
    for port in layout.masters() {
        set_all(&mut writer, &layout.keys_on(port, "edges", 2));
    }
    for args in [
        &["WAIT", "1", "-1"][..],
        &["WAIT", "x", "0"],
        &["WAIT", "1", "x"],
        &["WAIT", "1", "1.5"],
        &["WAIT", "1"],
    ] {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let expected = node.call_raw(&args);
        assert!(expected.starts_with(b"-ERR"), "{}", show(&expected));
        assert_eq!(show(&fresh.call_raw(&args)), show(&expected));
        assert_eq!(show(&writer.call_raw(&args)), show(&expected));
    }
    // RESP3: the masters are asked in the client's protocol.
    let mut resp3 = RawClient::connect(proxy);
    resp3.call(&["HELLO", "3"]);
    set_all(&mut resp3, &layout.keys_on(layout.masters()[1], "resp3", 3));
    assert_eq!(show(&resp3.call_raw(&[b"WAIT", b"1", b"5000"])), ":1\\r\\n");
    // A transaction runs on one master: its WAIT cannot count the writes on the others.
    let key = &layout.keys_on(layout.masters()[0], "edges-tx", 1)[0];
    writer.call(&["MULTI"]);
    writer.call(&["SET", key, "1"]);
    writer.call(&["WAIT", "1", "0"]);
    let raw = writer.call_raw(&[b"EXEC"]);
    assert!(
        raw.starts_with(b"-EXECABORT") && show(&raw).contains("other masters"),
        "{}",
        show(&raw)
    );
    // A client that wrote to the transaction's master only: WAIT inside MULTI answers.
    let mut one = RawClient::connect(proxy);
    set_all(&mut one, std::slice::from_ref(key));
    one.call(&["MULTI"]);
    one.call(&["SET", key, "2"]);
    one.call(&["WAIT", "1", "0"]);
    let exec = one.call(&["EXEC"]);
    assert_eq!(exec.as_array().map(|a| a.len()), Some(2), "{exec:?}");
    assert!(integer(&exec.as_array().expect("array")[1]) <= 1);
}

fn call_ok(port: u16, args: &[&str]) {
    let raw =
        RawClient::connect(port).call_raw(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
    assert_eq!(show(&raw), "+OK\\r\\n", "{args:?} on {port}");
}

fn bulk_text(frame: Frame) -> String {
    String::from_utf8_lossy(frame.as_bytes().expect("bulk")).into_owned()
}

/// A write a node redirected (ASK during a slot migration) ran on the target: WAIT counts
/// the target's replicas, not the first master's. When the slot then moves for good (the
/// proxy learns it from a MOVED), the writer's WAIT is an error, not a count; its next
/// WAIT starts a new trail. A client that wrote only to a master the move left alone
/// still gets its count.
fn redirected_writes(cluster: &Cluster, layout: &Layout, proxy: u16) {
    let masters = layout.masters();
    let (source, target) = (masters[1], masters[2]);
    let source_id = bulk_text(RawClient::connect(source).call(&["CLUSTER", "MYID"]));
    let target_id = bulk_text(RawClient::connect(target).call(&["CLUSTER", "MYID"]));
    // A slot the source holds no key of, so that it can be handed over at the end.
    let mut counts = RawClient::connect(source);
    let key = &layout
        .keys_on(source, "asked", 50)
        .into_iter()
        .find(|k| {
            let slot = key_slot(k.as_bytes()).to_string();
            counts
                .call(&["CLUSTER", "COUNTKEYSINSLOT", &slot])
                .as_integer()
                == Some(0)
        })
        .expect("an empty slot");
    let slot = key_slot(key.as_bytes()).to_string();
    call_ok(
        target,
        &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id],
    );
    call_ok(
        source,
        &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id],
    );
    let replica = layout.replica[&target];
    let stopped = Stopped::new(cluster.nodes[layout.index[&replica]].pid());
    let mut writer = RawClient::connect(proxy);
    // A new key of a migrating slot: the source answers ASK, the target runs it.
    set_all(&mut writer, std::slice::from_ref(key));
    let mut asking = RawClient::connect(target);
    asking.call(&["ASKING"]);
    assert_eq!(
        asking.call(&["EXISTS", key]).as_integer(),
        Some(1),
        "the write ran on the target"
    );
    assert_eq!(
        integer(&writer.call(&["WAIT", "1", "300"])),
        0,
        "WAIT counted the source's replica for a write the target ran"
    );
    drop(stopped);
    assert_eq!(integer(&writer.call(&["WAIT", "1", "10000"])), 1);
    // A client that wrote only to the third master.
    let mut bystander = RawClient::connect(proxy);
    set_all(&mut bystander, &layout.keys_on(masters[0], "bystander", 10));
    // The slot moves for good; another client's request meets the MOVED.
    call_ok(target, &["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
    call_ok(source, &["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
    let mut reader = RawClient::connect(proxy);
    assert_eq!(bulk_text(reader.call(&["GET", key])), *key);
    let raw = writer.call_raw(&[b"WAIT", b"1", b"1000"]);
    assert!(
        show(&raw).contains("slot map changed"),
        "WAIT after the slot map changed: {}",
        show(&raw)
    );
    // A new trail: no write since, so the answer of a connection that never wrote.
    assert_eq!(integer(&writer.call(&["WAIT", "1", "1000"])), 1);
    // The move did not touch the masters the bystander wrote to: its WAIT still counts.
    let raw = bystander.call_raw(&[b"WAIT", b"1", b"5000"]);
    assert_eq!(
        show(&raw),
        ":1\\r\\n",
        "a bystander's WAIT after an unrelated move"
    );
}

/// A master the client wrote to dies before its WAIT: an error, not the other master's
/// count.
fn a_dead_master_is_an_error(cluster: &mut Cluster, layout: &Layout, proxy: u16) {
    let masters = layout.masters();
    let mut writer = RawClient::connect(proxy);
    set_all(&mut writer, &layout.keys_on(masters[2], "survivor", 5));
    set_all(&mut writer, &layout.keys_on(masters[0], "doomed", 5));
    assert_eq!(integer(&writer.call(&["WAIT", "1", "5000"])), 1);
    cluster.nodes[layout.index[&masters[0]]].kill();
    let raw = writer.call_raw(&[b"WAIT", b"1", b"1000"]);
    assert!(
        raw.starts_with(b"-"),
        "WAIT with a dead master written to: {}",
        show(&raw)
    );
}

/// redis-py's `wait` through the proxy.
fn redis_py(layout: &Layout, proxy: u16) {
    let script = "import redis, sys\n\
        r = redis.Redis(port=int(sys.argv[1]), socket_timeout=30)\n\
        for i in range(50):\n    r.set(f'py:{i}', f'py:{i}')\n\
        n = r.wait(1, 5000)\n\
        assert n == 1, n\n";
    let mut python = Command::new("python3");
    python.args(["-c", script, &proxy.to_string()]);
    let (status, output) = run_logged(python, "slotproxy-wait-py", Duration::from_secs(60));
    assert!(status.success(), "redis-py: {output}");
    let keys: Vec<String> = (0..50).map(|i| format!("py:{i}")).collect();
    assert_on_replicas(layout, &keys);
}

#[test]
fn wait_through_the_proxy_on_a_redis_cluster_with_replicas() {
    let mut cluster = Cluster::redis_with_replicas(3);
    let layout = Layout::of(&cluster);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    wait_counts_replicas_that_have_every_write(&layout, proxy.port);
    a_stopped_replica_is_not_counted(&cluster, &layout, proxy.port);
    edges(&cluster, &layout, proxy.port);
    redis_py(&layout, proxy.port);
    // Last: they move a slot, then kill a master.
    redirected_writes(&cluster, &layout, proxy.port);
    a_dead_master_is_an_error(&mut cluster, &layout, proxy.port);
}
