//! Bloom filters kept and moved: DUMP/RESTORE, SAVE and restart, AOF replay and rewrite,
//! MIGRATE between cluster nodes (the node alone: no redis-server has RedisBloom here).

mod bloom_fixture;
mod persistence_fixture;

use std::time::{Duration, Instant};

use bloom_fixture::{int, pipelined, raw};
use persistence_fixture::{info_field, node_in, scratch_dir};
use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient, ServerProcess};

/// Fills `f` (two sub-filters) and returns what must survive: its INFO and DUMP.
fn fill_filter(c: &mut RawClient) -> (String, Frame) {
    assert_eq!(raw(c, &["BF.RESERVE", "f", "0.01", "500"]), "+OK\r\n");
    pipelined(c, "BF.MADD", "f", "k", 800);
    assert_eq!(
        raw(c, &["BF.RESERVE", "n", "0.1", "10", "NONSCALING"]),
        "+OK\r\n"
    );
    raw(c, &["BF.MADD", "n", "a", "b"]);
    (
        raw(c, &["BF.INFO", "f"]) + &raw(c, &["BF.INFO", "n"]),
        c.call(&["DUMP", "f"]),
    )
}

fn assert_filter_kept(c: &mut RawClient, expected: &(String, Frame)) {
    assert_eq!(
        raw(c, &["BF.INFO", "f"]) + &raw(c, &["BF.INFO", "n"]),
        expected.0
    );
    assert_eq!(c.call(&["DUMP", "f"]), expected.1);
    assert_eq!(pipelined(c, "BF.MEXISTS", "f", "k", 800), 800);
    assert_eq!(raw(c, &["BF.MEXISTS", "n", "a", "b"]), "*2\r\n:1\r\n:1\r\n");
    assert_eq!(raw(c, &["TYPE", "f"]), "+MBbloom--\r\n");
}

#[test]
fn dump_restore() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    let kept = fill_filter(&mut c);
    let payload = kept.1.as_bytes().expect("payload").to_vec();
    // RDB_TYPE_MODULE_2, then the module type id of MBbloom-- (encoding version 4) as a
    // 64-bit RDB length.
    assert_eq!(payload[0], 7);
    assert_eq!(payload[1], 0x81);
    let id = u64::from_be_bytes(payload[2..10].try_into().unwrap());
    let name: String = (0..9)
        .rev()
        .map(|i| {
            let digit = ((id >> (10 + 6 * i)) & 63) as usize;
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[digit] as char
        })
        .collect();
    assert_eq!((name.as_str(), id & 1023), ("MBbloom--", 4));
    c.call_raw(&[b"DEL", b"f"]);
    assert_eq!(c.call_raw(&[b"RESTORE", b"f", b"0", &payload]), b"+OK\r\n");
    assert_filter_kept(&mut c, &kept);
    // A corrupted payload is refused, and the node lives on.
    let mut bad = payload.clone();
    bad[12] ^= 0xff;
    assert_eq!(
        c.call_raw(&[b"RESTORE", b"g", b"0", &bad]),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
    assert_eq!(raw(&mut c, &["PING"]), "+PONG\r\n");
}

#[test]
fn survives_save_and_restart() {
    let dir = scratch_dir("bloom-rdb");
    let kept = {
        let node = node_in(&dir, &[]);
        let mut c = RawClient::connect(node.port);
        let kept = fill_filter(&mut c);
        assert_eq!(raw(&mut c, &["SAVE"]), "+OK\r\n");
        kept
    };
    let node = node_in(&dir, &[]);
    let mut c = RawClient::connect(node.port);
    assert_filter_kept(&mut c, &kept);
    // redis-check-rdb reads the file (it knows module values by their opcodes).
    let out = std::process::Command::new("redis-check-rdb")
        .arg(dir.join("dump.rdb"))
        .output()
        .expect("run redis-check-rdb");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("RDB looks OK"), "{text}");
}

fn wait_rewrite(c: &mut RawClient) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(c, "aof_rewrite_in_progress") != "0" || info_field(c, "aof_rewrites") == "0" {
        assert!(Instant::now() < deadline, "AOF rewrite did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(info_field(c, "aof_last_bgrewrite_status"), "ok");
}

/// The AOF replays the BF commands as they were sent; after a rewrite the base (RDB
/// preamble or RESTORE commands) carries the filters.
#[test]
fn survives_aof_replay_and_rewrite() {
    for preamble in ["yes", "no"] {
        let dir = scratch_dir(&format!("bloom-aof-{preamble}"));
        let args = ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble];
        let kept = {
            let node = node_in(&dir, &args);
            let mut c = RawClient::connect(node.port);
            fill_filter(&mut c)
        };
        let kept = {
            let node = node_in(&dir, &args);
            let mut c = RawClient::connect(node.port);
            assert_filter_kept(&mut c, &kept);
            assert_eq!(
                raw(&mut c, &["BGREWRITEAOF"]),
                "+Background append only file rewriting started\r\n"
            );
            wait_rewrite(&mut c);
            kept
        };
        let node = node_in(&dir, &args);
        let mut c = RawClient::connect(node.port);
        assert_filter_kept(&mut c, &kept);
    }
}

/// A slot holding a filter moves between two storage-nodes of a cluster with
/// SETSLOT IMPORTING/MIGRATING, MIGRATE and SETSLOT NODE.
#[test]
fn migrate_between_cluster_nodes() {
    let cluster = Cluster::storage_nodes(3);
    let key = "{bf}users";
    let slot = {
        let mut c = RawClient::connect(cluster.nodes[0].port);
        int(&mut c, &["CLUSTER", "KEYSLOT", key]) as u16
    };
    let from = cluster.node_for_slot(slot);
    let to = (from + 1) % 3;
    let mut src = RawClient::connect(cluster.nodes[from].port);
    let mut dst = RawClient::connect(cluster.nodes[to].port);
    assert_eq!(
        raw(&mut src, &["BF.RESERVE", key, "0.001", "2000"]),
        "+OK\r\n"
    );
    pipelined(&mut src, "BF.MADD", key, "user", 3000);
    let info = raw(&mut src, &["BF.INFO", key]);
    let dump = src.call(&["DUMP", key]);
    assert_eq!(
        raw(&mut dst, &["BF.EXISTS", key, "user1"]),
        format!("-MOVED {slot} 127.0.0.1:{}\r\n", cluster.nodes[from].port),
        "the node routes BF.* by its key"
    );

    let id = |c: &mut RawClient| {
        String::from_utf8(c.call(&["CLUSTER", "MYID"]).as_bytes().unwrap().to_vec()).unwrap()
    };
    let (src_id, dst_id) = (id(&mut src), id(&mut dst));
    let slot_text = slot.to_string();
    assert_eq!(
        raw(
            &mut dst,
            &["CLUSTER", "SETSLOT", &slot_text, "IMPORTING", &src_id]
        ),
        "+OK\r\n"
    );
    assert_eq!(
        raw(
            &mut src,
            &["CLUSTER", "SETSLOT", &slot_text, "MIGRATING", &dst_id]
        ),
        "+OK\r\n"
    );
    let port = cluster.nodes[to].port.to_string();
    assert_eq!(
        raw(&mut src, &["MIGRATE", "127.0.0.1", &port, key, "0", "5000"]),
        "+OK\r\n"
    );
    for node in &cluster.nodes {
        let mut c = RawClient::connect(node.port);
        assert_eq!(
            raw(&mut c, &["CLUSTER", "SETSLOT", &slot_text, "NODE", &dst_id]),
            "+OK\r\n"
        );
    }
    assert_eq!(raw(&mut dst, &["BF.INFO", key]), info);
    assert_eq!(dst.call(&["DUMP", key]), dump);
    assert_eq!(pipelined(&mut dst, "BF.MEXISTS", key, "user", 3000), 3000);
    assert_eq!(raw(&mut dst, &["BF.ADD", key, "newcomer"]), ":1\r\n");
    assert_eq!(int(&mut src, &["DBSIZE"]), 0);
}
