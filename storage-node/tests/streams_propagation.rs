//! How stream commands are propagated, read from the append-only log: byte for byte what
//! redis-server 7.0 logs for explicit ids, `<ms>-*`, `~` trims (rewritten with `=` and the
//! threshold reached), trims that remove nothing, XDEL, XSETID and transactions; and XADD
//! with `*` logged with the id it generated.

mod persistence_fixture;

use std::path::{Path, PathBuf};

use persistence_fixture::*;
use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

fn aof_server(dir: &Path, node: bool) -> ServerProcess {
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--stream-node-max-entries",
        "3",
    ];
    if node {
        node_in(dir, &args)
    } else {
        redis_in(dir, &args)
    }
}

/// Runs `script`, then `more` (given the client and the port), on a node and on a
/// redis-server that log to fresh directories named after `name`; returns the node's
/// directory and redis-server's.
fn log_on_both(
    name: &str,
    script: &[&[&str]],
    more: impl Fn(&mut RawClient, u16),
) -> (ScratchDir, ScratchDir) {
    let node_dir = scratch_dir(&format!("{name}-n"));
    let redis_dir = scratch_dir(&format!("{name}-r"));
    let node = aof_server(&node_dir, true);
    let redis = aof_server(&redis_dir, false);
    for port in [node.port, redis.port] {
        let mut c = RawClient::connect(port);
        for command in script {
            c.call(command);
        }
        more(&mut c, port);
    }
    (node_dir, redis_dir)
}

/// The incremental file the manifest names last.
fn incr_file(dir: &Path) -> PathBuf {
    let name = manifest_files(dir)
        .into_iter()
        .rev()
        .find(|(_, kind)| kind == "i")
        .expect("an incremental file")
        .0;
    dir.join(AOF_DIR).join(name)
}

#[test]
fn the_logged_stream_commands_are_byte_for_byte_redis_s() {
    let script: &[&[&str]] = &[
        &["XADD", "s", "1-1", "a", "1"],
        &["XADD", "s", "1-*", "a", "2"],
        &["XADD", "s", "2", "a", "3"],
        &["XADD", "s", "3-*", "b", "4"],
        &["XADD", "s", "4-1", "a", "5"],
        &["XADD", "s", "5-1", "a", "6"],
        &["XADD", "s", "6-1", "a", "7"],
        &["XADD", "s", "7-1", "a", "8"],
        &["XADD", "s", "MAXLEN", "~", "4", "8-*", "x", "y"],
        &["XADD", "s", "MAXLEN", "=", "100", "9-1", "x", "y"],
        &["XADD", "s", "MINID", "~", "0", "10-1", "x", "y"],
        &["XTRIM", "s", "MINID", "~", "6"],
        &["XTRIM", "s", "MAXLEN", "~", "100"],
        &["XTRIM", "s", "MAXLEN", "~", "2", "LIMIT", "3"],
        &["XTRIM", "s", "MAXLEN", "5"],
        &["XDEL", "s", "9-1", "99-1"],
        &["XDEL", "s", "99-1"],
        &["XSETID", "s", "30-0", "ENTRIESADDED", "40"],
        &["XADD", "none", "NOMKSTREAM", "1-1", "a", "b"],
        &["XADD", "s", "NOMKSTREAM", "31-*", "a", "b"],
        &["MULTI"],
        &["XADD", "t", "1-*", "a", "b"],
        &["XADD", "t", "MAXLEN", "~", "0", "2-*", "a", "b"],
        &["EXEC"],
        &[
            "EVAL",
            "return redis.call('xadd', KEYS[1], '5-*', 'k', 'v')",
            "1",
            "t",
        ],
    ];
    let (node_dir, redis_dir) = log_on_both("streams", script, |_, _| {});
    assert_same_log(&node_dir, &redis_dir);
}

#[test]
fn xadd_with_a_generated_id_is_logged_with_that_id() {
    let dir = scratch_dir("streams-star");
    let node = aof_server(&dir, true);
    let mut c = RawClient::connect(node.port);
    let id = match c.call(&["XADD", "s", "*", "f", "v"]) {
        Frame::Bulk(id) => String::from_utf8(id.to_vec()).unwrap(),
        other => panic!("XADD answered {other:?}"),
    };
    let log = String::from_utf8(std::fs::read(incr_file(&dir)).unwrap()).unwrap();
    let expected = format!(
        "*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n${}\r\n{id}\r\n$1\r\nf\r\n$1\r\nv\r\n",
        id.len()
    );
    assert!(
        log.ends_with(&expected),
        "logged {log:?}, expected {expected:?}"
    );
}

/// The log with the value after each `TIME` argument (XCLAIM's delivery time, the clock's
/// reading when an entry was delivered) replaced by `T`.
fn without_delivery_times(log: Vec<u8>) -> Vec<u8> {
    const TIME: &[u8] = b"$4\r\nTIME\r\n";
    let mut out = Vec::with_capacity(log.len());
    let mut rest = &log[..];
    while let Some(at) = rest.windows(TIME.len()).position(|w| w == TIME) {
        out.extend_from_slice(&rest[..at + TIME.len()]);
        rest = &rest[at + TIME.len()..];
        // Skip `$<len>\r\n<value>\r\n`.
        let mut lines = 0;
        while lines < 2 && !rest.is_empty() {
            if rest.starts_with(b"\r\n") {
                lines += 1;
                rest = &rest[2..];
            } else {
                rest = &rest[1..];
            }
        }
        out.extend_from_slice(b"$1\r\nT\r\n");
    }
    out.extend_from_slice(rest);
    out
}

/// Consumer-group commands log what Redis 7.0 logs: XREADGROUP as one XCLAIM per entry it
/// delivered (in MULTI/EXEC when several) or as XGROUP SETID after NOACK, history reads
/// nothing; XCLAIM and XAUTOCLAIM as XCLAIMs (a deleted entry's too), a LASTID alone as
/// XGROUP SETID; commands that changed nothing are not logged. Delivery times aside (each
/// server reads its clock), the logs are byte for byte the same.
#[test]
fn the_logged_group_commands_are_byte_for_byte_redis_s() {
    let script: &[&[&str]] = &[
        &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
        &["XGROUP", "CREATE", "s", "g", "$"],
        &["XADD", "s", "1-1", "a", "1"],
        &["XADD", "s", "2-1", "a", "2"],
        &["XADD", "s", "3-1", "a", "3"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">",
        ],
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "NOACK",
            "STREAMS",
            "s",
            ">",
        ],
        &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "carol"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "carol"],
        &["XACK", "s", "g", "1-1", "9-9"],
        &["XACK", "s", "g", "9-9"],
        &["XCLAIM", "s", "g", "carol", "0", "2"],
        &[
            "XCLAIM",
            "s",
            "g",
            "carol",
            "0",
            "2-1",
            "TIME",
            "1000",
            "RETRYCOUNT",
            "5",
        ],
        &["XCLAIM", "s", "g", "carol", "3600000", "2-1"],
        &["XCLAIM", "s", "g", "carol", "0", "9-9", "LASTID", "20-0"],
        &["XDEL", "s", "2-1"],
        &["XAUTOCLAIM", "s", "g", "dave", "0", "0"],
        &["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "0"],
        &["XREADGROUP", "GROUP", "g", "erin", "STREAMS", "s", ">"],
        &["XAUTOCLAIM", "s", "g", "dave", "0", "0", "JUSTID"],
        &["XGROUP", "SETID", "s", "g", "$"],
        &["XGROUP", "DELCONSUMER", "s", "g", "alice"],
        &["XGROUP", "DELCONSUMER", "s", "g", "nobody"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XGROUP", "CREATE", "s", "h", "0"],
        &["MULTI"],
        &["XREADGROUP", "GROUP", "h", "x", "STREAMS", "s", ">"],
        &["XACK", "s", "h", "1-1"],
        &["EXEC"],
    ];
    let (node_dir, redis_dir) = log_on_both("stream-groups", script, |c, port| {
        // A blocked reader served by a later XADD logs its XCLAIM after that XADD.
        let mut reader = RawClient::connect(port);
        reader.send(&[
            b"XREADGROUP",
            b"GROUP",
            b"h",
            b"y",
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"s",
            b">",
        ]);
        test_harness::wait_blocked(c, 1);
        c.call(&["XADD", "s", "30-1", "late", "1"]);
        reader.read_reply();
    });
    assert_same_log_after(&node_dir, &redis_dir, without_delivery_times);
}
