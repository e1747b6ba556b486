//! The resharding scenarios, each taking the cluster and the proxy so the same code can run
//! against storage-node clusters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use test_harness::http::{get, request};
use test_harness::{Cluster, ServerProcess};

use super::admin::*;
use super::data;

/// 200,000 keys; 2,000 slots move while 3 threads run mixed GET/SET/MGET through the
/// proxy. No client error, no lost or wrong value, progress visible while running.
pub fn reshard_under_load(cluster: &Cluster, proxy_port: u16, admin: u16) {
    const KEYS: usize = 200_000;
    const THREADS: usize = 3;
    data::load(proxy_port, KEYS);
    let (from, to) = (cluster.nodes[0].port, cluster.nodes[1].port);
    let to_id = node_id(to);
    let before = slot_count(to, &to_id);

    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let load = data::Load {
                    port: proxy_port,
                    keys: KEYS,
                    thread: t,
                    threads: THREADS,
                    rate: 4_000,
                    max_ops: 5_000_000,
                    max_time: Duration::from_secs(600),
                };
                data::run_load(load, stop)
            })
        })
        .collect();
    let body = format!(r#"{{"from": "127.0.0.1:{from}", "to": "127.0.0.1:{to}", "count": 2000}}"#);
    let id = start_job(admin, "POST", "/v1/reshard", &body);
    let mut observed: Vec<u64> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    let last = loop {
        let reply = get(admin, "/v1/jobs");
        let list: serde_json::Value = serde_json::from_str(&reply.body).expect("jobs JSON");
        let job = list["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == id.as_str()))
            .cloned()
            .expect("job listed");
        match job["state"].as_str() {
            Some("running") => observed.push(job["slots_done"].as_u64().unwrap_or(0)),
            Some("done") | Some("failed") => break job,
            _ => {}
        }
        assert!(Instant::now() < deadline, "job did not finish: {job}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // A little more load after the job, then stop.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let results: Vec<data::LoadResult> = workers
        .into_iter()
        .map(|w| w.join().expect("load thread"))
        .collect();
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(last["state"], "done", "{last}");
    assert_eq!(last["slots_done"], 2000, "{last}");
    // The same progress is in /metrics.
    let metrics = test_harness::http::get(admin, "/metrics").body;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1.0)
    };
    assert!(
        value("slotproxy_reshard_slots_done_total") >= 2000.0,
        "{metrics}"
    );
    assert!(value("slotproxy_reshard_keys_moved_total") > 0.0);
    assert_eq!(value("slotproxy_reshard_slots_pending"), 0.0);
    assert!(
        metrics.contains("slotproxy_reshard_job_state{state=\"completed\"} 1"),
        "{metrics}"
    );
    let ops: u64 = results.iter().map(|r| r.ops).sum();
    let errors: u64 = results.iter().map(|r| r.errors).sum();
    let wrong_reads: u64 = results.iter().map(|r| r.wrong).sum();
    let mut expected = HashMap::new();
    for r in &results {
        expected.extend(r.written.iter().map(|(k, v)| (*k, v.clone())));
    }
    let (lost, wrong) = data::verify(proxy_port, KEYS, &expected);
    let rate = ops as f64 / elapsed;
    let increases = observed.windows(2).filter(|w| w[1] > w[0]).count();
    println!(
        "reshard under load: {ops} ops in {elapsed:.1} s = {rate:.0} ops/s; job {} keys moved; progress observations {:?}..; errors {errors}, wrong reads {wrong_reads}, lost {lost}, wrong {wrong}",
        last["keys_moved"],
        &observed[..observed.len().min(8)]
    );
    let info = test_harness::RawClient::connect(proxy_port).call(&["INFO", "stats"]);
    let info = String::from_utf8_lossy(info.as_bytes().unwrap_or(b"")).into_owned();
    let redirects: Vec<&str> = info
        .lines()
        .filter(|l| l.starts_with("redirects_"))
        .collect();
    println!("proxy redirects followed during the test: {redirects:?}");
    let first_errors: Vec<&String> = results.iter().flat_map(|r| &r.first_errors).collect();
    assert_eq!(errors, 0, "client errors: {first_errors:?}");
    assert_eq!(wrong_reads, 0, "reads that did not match the model");
    assert_eq!((lost, wrong), (0, 0), "lost / wrong keys after the job");
    assert!(
        increases >= 2,
        "progress not visible while running: {observed:?}"
    );
    assert!(open_slots(&ports(cluster)).is_empty());
    assert_eq!(slot_count(to, &to_id), before + 2000);
    assert_cluster_check_clean(from);
}

/// The proxy is killed in the middle of a job; after a restart, the next job first finishes
/// the slot left open, and no key is lost.
pub fn interrupted_job_is_finished_by_the_next(
    cluster: &Cluster,
    start_proxy: &dyn Fn() -> (ServerProcess, u16),
) {
    const KEYS: usize = 100_000;
    let (mut proxy, admin) = start_proxy();
    data::load(proxy.port, KEYS);
    let (from, to) = (cluster.nodes[1].port, cluster.nodes[2].port);
    // Small batches so the job is still moving keys when it is killed.
    let body = format!(
        r#"{{"from": "127.0.0.1:{from}", "to": "127.0.0.1:{to}", "count": 1000, "batch": 2}}"#
    );
    let id = start_job(admin, "POST", "/v1/reshard", &body);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let j = job(admin, &id);
        assert_ne!(
            j["state"], "done",
            "job finished before it could be interrupted"
        );
        if j["state"] == "running" && j["slots_done"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "job made no progress: {j}");
        std::thread::sleep(Duration::from_millis(20));
    }
    proxy.kill();
    let mut open = open_slots(&ports(cluster));
    if open.is_empty() {
        // Killed between two slots: leave one open by hand, as a crashed tool would.
        leave_slot_half_moved(cluster);
        open = open_slots(&ports(cluster));
    }
    println!("left open after the kill: {open:?}");
    assert!(!open.is_empty());

    let (proxy, admin) = start_proxy();
    let body = format!(r#"{{"from": "127.0.0.1:{from}", "to": "127.0.0.1:{to}", "count": 1}}"#);
    let done = run_job(admin, "POST", "/v1/reshard", &body);
    println!("recovering job: {done}");
    assert!(
        !done["recovered"].as_array().is_none_or(Vec::is_empty),
        "nothing recovered: {done}"
    );
    assert!(
        open_slots(&ports(cluster)).is_empty(),
        "{:?}",
        open_slots(&ports(cluster))
    );
    let (lost, wrong) = data::verify(proxy.port, KEYS, &HashMap::new());
    assert_eq!((lost, wrong), (0, 0));
    assert_cluster_check_clean(from);
}

/// Opens the first slot of node 1 towards node 2 and migrates half its keys.
fn leave_slot_half_moved(cluster: &Cluster) {
    use test_harness::RawClient;
    let (src, dst) = (&cluster.nodes[1], &cluster.nodes[2]);
    let (src_id, dst_id) = (node_id(src.port), node_id(dst.port));
    let nodes = cluster_nodes(src.port);
    let line = nodes
        .lines()
        .find(|l| l.contains("myself"))
        .expect("myself");
    let first = line.split_whitespace().nth(8).expect("a slot range");
    let slot = first.split('-').next().expect("slot").to_string();
    let mut s = RawClient::connect(src.port);
    let mut d = RawClient::connect(dst.port);
    assert!(!d
        .call(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &src_id])
        .is_error());
    assert!(!s
        .call(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &dst_id])
        .is_error());
    let keys = s.call(&["CLUSTER", "GETKEYSINSLOT", &slot, "1000"]);
    let keys: Vec<String> = keys
        .as_array()
        .unwrap_or(&[])
        .iter()
        .filter_map(|k| {
            k.as_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
        })
        .collect();
    let half = &keys[..keys.len() / 2];
    if !half.is_empty() {
        let port = dst.port.to_string();
        let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        args.extend(half.iter().map(String::as_str));
        assert!(!s.call(&args).is_error());
    }
}

/// A 4th master joins (with a rebalance onto it), is drained, then forgotten; the cluster
/// checks clean at every step and no key is lost.
pub fn add_drain_remove_a_node(cluster: &Cluster, proxy_port: u16, admin: u16) {
    const KEYS: usize = 20_000;
    data::load(proxy_port, KEYS);
    let extra = cluster.spare_node();
    let port = extra.port;
    let id = node_id(extra.port);
    let seed = cluster.nodes[0].port;
    let body = format!(r#"{{"addr": "127.0.0.1:{port}", "rebalance": true}}"#);
    let done = run_job(admin, "POST", "/v1/nodes", &body);
    let owned = slot_count(seed, &id);
    println!("added {id}: owns {owned} slots; job {done}");
    assert!((4000..=4200).contains(&owned), "{owned}");
    assert_cluster_check_clean(seed);
    assert_eq!(data::verify(proxy_port, KEYS, &HashMap::new()), (0, 0));

    run_job(admin, "POST", &format!("/v1/nodes/{id}/drain"), "");
    assert_eq!(slot_count(seed, &id), 0);
    assert_cluster_check_clean(seed);
    assert_eq!(data::verify(proxy_port, KEYS, &HashMap::new()), (0, 0));

    run_job(admin, "DELETE", &format!("/v1/nodes/{id}"), "");
    for node in &cluster.nodes {
        assert!(
            !cluster_nodes(node.port).contains(&id),
            "{} still knows {id}",
            node.port
        );
    }
    cluster.wait_until_consistent();
    assert_cluster_check_clean(seed);
    assert_eq!(data::verify(proxy_port, KEYS, &HashMap::new()), (0, 0));
}

/// 401 without the token, 400 naming the field, 404 unknown node, 409 while a job runs or
/// when deleting a node that owns slots.
pub fn request_errors(cluster: &Cluster, admin: u16) {
    let (a, b) = (cluster.nodes[0].port, cluster.nodes[1].port);
    let unauthorized = request(admin, "POST", "/v1/rebalance", None, "{}");
    assert_eq!(unauthorized.status, 401, "{unauthorized:?}");
    let wrong_token = request(admin, "DELETE", "/v1/nodes/x", Some("nope"), "");
    assert_eq!(wrong_token.status, 401);

    let bad_bodies = [
        ("/v1/reshard", "{not json".to_string(), "JSON"),
        (
            "/v1/reshard",
            r#"{"to": "x", "count": 1}"#.to_string(),
            "from",
        ),
        (
            "/v1/reshard",
            format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}"}}"#),
            "slots",
        ),
        (
            "/v1/reshard",
            format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}", "slots": [20000]}}"#),
            "slots[0]",
        ),
        (
            "/v1/reshard",
            format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}", "slots": ["9-3"]}}"#),
            "slots[0]",
        ),
        (
            "/v1/reshard",
            format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}", "count": 0}}"#),
            "count",
        ),
        (
            "/v1/reshard",
            format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}", "count": 99999}}"#),
            "count",
        ),
        (
            "/v1/reshard",
            format!(
                r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}", "count": 1, "slots": [1]}}"#
            ),
            "slots, count",
        ),
        (
            "/v1/reshard",
            format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{a}", "count": 1}}"#),
            "to",
        ),
        ("/v1/rebalance", r#"{"by": "bytes"}"#.to_string(), "by"),
        (
            "/v1/rebalance",
            r#"{"threshold": "lots"}"#.to_string(),
            "threshold",
        ),
        (
            "/v1/rebalance",
            r#"{"colour": "red"}"#.to_string(),
            "colour",
        ),
        ("/v1/nodes", r#"{"addr": "nowhere"}"#.to_string(), "addr"),
        ("/v1/nodes", r#"{}"#.to_string(), "addr"),
    ];
    for (path, body, field) in &bad_bodies {
        let (status, value) = call(admin, "POST", path, body);
        let message = value["error"].as_str().unwrap_or_default().to_string();
        assert_eq!(status, 400, "{path} {body}: {value}");
        assert!(
            message.contains(field),
            "{path} {body}: '{message}' does not name {field}"
        );
    }

    let unknown = format!(r#"{{"from": "127.0.0.1:1", "to": "127.0.0.1:{b}", "count": 1}}"#);
    let (status, value) = call(admin, "POST", "/v1/reshard", &unknown);
    assert_eq!(status, 404, "{value}");
    assert_eq!(
        call(admin, "POST", "/v1/nodes/0123456789abcdef/drain", "").0,
        404
    );
    assert_eq!(call(admin, "DELETE", "/v1/nodes/127.0.0.1:1", "").0, 404);
    assert_eq!(get(admin, "/v1/jobs/none").status, 404);

    let owner = node_id(a);
    let (status, value) = call(admin, "DELETE", &format!("/v1/nodes/{owner}"), "");
    assert_eq!(status, 409, "{value}");

    let long = format!(r#"{{"from": "127.0.0.1:{a}", "to": "127.0.0.1:{b}", "count": 2000}}"#);
    let id = start_job(admin, "POST", "/v1/reshard", &long);
    let (status, value) = call(admin, "POST", "/v1/rebalance", "{}");
    assert_eq!(status, 409, "{value}");
    assert!(value["error"].as_str().unwrap_or_default().contains(&id));
    let done = wait_job(admin, &id, Duration::from_secs(300));
    assert_eq!(done["state"], "done", "{done}");
    // And the reverse by rebalancing evens the cluster out again.
    run_job(admin, "POST", "/v1/rebalance", r#"{"by": "slots"}"#);
    for node in &cluster.nodes {
        let n = slot_count(a, &node_id(node.port));
        assert!((5400..=5500).contains(&n), "{n}");
    }
}

/// A slot held half migrated for longer than the old 5-retry TRYAGAIN limit: an MGET of
/// its keys, and then a transaction on another such slot, wait it out and answer normally.
/// Each request runs alone, and the migration is finished only once the proxy's
/// `redirects_tryagain` counter shows that request met TRYAGAIN more than 5 times.
pub fn multi_key_requests_wait_out_a_slow_migration(cluster: &Cluster, proxy_port: u16) {
    use slotproxy::resp::Frame;
    use test_harness::RawClient;
    let mut client = RawClient::connect(proxy_port);
    for k in ["{slow}a", "{slow}b", "{slowtx}a"] {
        assert_eq!(
            client.call(&["SET", k, &format!("v-{k}")]),
            Frame::Simple("OK".into())
        );
    }

    // MGET {slow}a {slow}b with only {slow}a moved: the source answers TRYAGAIN.
    let mut slow = SplitSlot::open(cluster, "{slow}a");
    let before = tryagain_count(&mut client);
    let mget = std::thread::spawn(move || {
        let mut c = RawClient::connect(proxy_port);
        c.call(&["MGET", "{slow}a", "{slow}b"])
    });
    wait_for_tryagains(&mut client, before + 6);
    slow.migrate("{slow}b");
    slow.finish(cluster);
    let mget = mget.join().expect("mget thread");
    assert_eq!(
        mget,
        Frame::Array(vec![Frame::bulk("v-{slow}a"), Frame::bulk("v-{slow}b")])
    );

    // A transaction writing a new key beside a moved one: the target answers TRYAGAIN.
    let slow = SplitSlot::open(cluster, "{slowtx}a");
    let before = tryagain_count(&mut client);
    let tx = std::thread::spawn(move || {
        let mut c = RawClient::connect(proxy_port);
        assert_eq!(c.call(&["MULTI"]), Frame::Simple("OK".into()));
        c.call(&["SET", "{slowtx}c", "v-c"]);
        c.call(&["GET", "{slowtx}a"]);
        c.call(&["EXEC"])
    });
    wait_for_tryagains(&mut client, before + 6);
    slow.finish(cluster);
    let tx = tx.join().expect("tx thread");
    assert_eq!(
        tx,
        Frame::Array(vec![Frame::Simple("OK".into()), Frame::bulk("v-{slowtx}a")])
    );
    assert_eq!(client.call(&["GET", "{slowtx}c"]), Frame::bulk("v-c"));
}

/// A slot being migrated from its owner to the next node, with its first key moved.
struct SplitSlot {
    slot: String,
    src: test_harness::RawClient,
    dst: test_harness::RawClient,
    dst_port: u16,
    dst_id: String,
}

impl SplitSlot {
    fn open(cluster: &Cluster, first_key: &str) -> SplitSlot {
        use test_harness::RawClient;
        let slot = slotproxy::cluster::key_slot(first_key.as_bytes());
        let src = cluster.node_for_slot(slot);
        let dst = (src + 1) % cluster.nodes.len();
        let (src, dst) = (&cluster.nodes[src], &cluster.nodes[dst]);
        let mut split = SplitSlot {
            slot: slot.to_string(),
            src: RawClient::connect(src.port),
            dst: RawClient::connect(dst.port),
            dst_port: dst.port,
            dst_id: node_id(dst.port),
        };
        let src_id = node_id(src.port);
        let s = split.slot.clone();
        assert!(!split
            .dst
            .call(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &src_id])
            .is_error());
        let dst_id = split.dst_id.clone();
        assert!(!split
            .src
            .call(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &dst_id])
            .is_error());
        split.migrate(first_key);
        split
    }

    fn migrate(&mut self, key: &str) {
        let port = self.dst_port.to_string();
        let reply = self
            .src
            .call(&["MIGRATE", "127.0.0.1", &port, key, "0", "5000"]);
        assert_eq!(reply, slotproxy::resp::Frame::Simple("OK".into()));
    }

    /// Gives the slot to the target on every node.
    fn finish(mut self, cluster: &Cluster) {
        let node = ["CLUSTER", "SETSLOT", &self.slot, "NODE", &self.dst_id];
        assert!(!self.dst.call(&node).is_error());
        for n in &cluster.nodes {
            if n.port != self.dst_port {
                assert!(!test_harness::RawClient::connect(n.port)
                    .call(&node)
                    .is_error());
            }
        }
    }
}

/// TRYAGAIN replies the proxy has waited out so far (INFO stats through the proxy).
fn tryagain_count(client: &mut test_harness::RawClient) -> u64 {
    let slotproxy::resp::Frame::Bulk(text) = client.call(&["INFO", "stats"]) else {
        panic!("INFO stats is not a bulk string");
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|line| line.strip_prefix("redirects_tryagain:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("redirects_tryagain in the proxy's INFO stats")
}

/// Polls until the proxy has met at least `count` TRYAGAIN replies.
fn wait_for_tryagains(client: &mut test_harness::RawClient, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = tryagain_count(client);
        if seen >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the proxy met {seen} TRYAGAIN replies, expected {count}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
