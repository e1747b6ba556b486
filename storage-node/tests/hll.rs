//! HyperLogLog commands compared with a real redis-server: every reply byte for byte, and
//! the HLL strings themselves (GET after the commands), through the sparse encoding, the
//! promotion to dense, corrupt values, and values carried between the two servers.
//! Random sequences are in `hll_props.rs`.

mod persistence_fixture;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use persistence_fixture::{node_in, redis_in, scratch_dir, AOF_DIR};
use slotproxy::resp::Frame;
use test_harness::notifications::compare_notifications;
use test_harness::{Differential, RawClient};

/// Sends raw arguments to both servers, asserts identical replies, and returns the reply.
fn check(d: &mut Differential, args: &[&[u8]]) -> Frame {
    d.check_bytes(args)
}

/// The bytes of a bulk reply (empty for nil).
fn bulk(frame: Frame) -> Vec<u8> {
    match frame {
        Frame::Bulk(bytes) => bytes.to_vec(),
        Frame::Null => Vec::new(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// Both servers hold the same bytes at `key`.
fn same_value(d: &mut Differential, key: &str) -> Vec<u8> {
    bulk(d.check(&["GET", key]))
}

fn encoding(d: &mut Differential, key: &str) -> String {
    match d.check(&["PFDEBUG", "ENCODING", key]) {
        Frame::Simple(name) => String::from_utf8_lossy(&name).into_owned(),
        other => panic!("PFDEBUG ENCODING answered {other:?}"),
    }
}

#[test]
fn commands_and_errors_match_redis() {
    let mut d = Differential::start_with(
        &["--enable-debug-command", "yes"],
        &["--enable-debug-command", "yes"],
    );
    let commands: &[&[&str]] = &[
        &["PFCOUNT", "h"],
        &["PFADD", "h"],
        &["GET", "h"],
        &["PFADD", "h"],
        &["PFCOUNT", "h"],
        &["GET", "h"],
        &["PFADD", "h", "a", "b", "c"],
        &["PFADD", "h", "a", "b", "c"],
        &["PFADD", "h", ""],
        &["GET", "h"],
        &["PFCOUNT", "h"],
        &["GET", "h"],
        &["PFCOUNT", "h"],
        &["TYPE", "h"],
        &["OBJECT", "ENCODING", "h"],
        &["PFADD", "g", "c", "d", "e", "f"],
        &["PFMERGE", "dest"],
        &["GET", "dest"],
        &["PFMERGE", "dest", "h", "missing"],
        &["GET", "dest"],
        &["PFMERGE", "dest", "g"],
        &["GET", "dest"],
        &["PFCOUNT", "h", "g", "missing"],
        &["PFCOUNT", "dest"],
        &["PFCOUNT", "missing", "missing2"],
        &["EXISTS", "missing"],
        // Strings that are not HLLs, and other types.
        &["SET", "s", "hello"],
        &["PFADD", "s", "a"],
        &["PFCOUNT", "s"],
        &["PFCOUNT", "h", "s"],
        &["PFMERGE", "s", "h"],
        &["PFMERGE", "h", "s"],
        &["PFDEBUG", "ENCODING", "s"],
        &["SET", "n", "12345"],
        &["PFADD", "n", "a"],
        &["SET", "short", "HYLL"],
        &["PFCOUNT", "short"],
        &["LPUSH", "l", "x"],
        &["PFADD", "l", "a"],
        &["PFCOUNT", "l"],
        &["PFCOUNT", "h", "l"],
        &["PFMERGE", "l", "h"],
        &["PFMERGE", "h", "l"],
        &["PFDEBUG", "GETREG", "l"],
        // PFDEBUG: the key is checked before the subcommand.
        &["PFDEBUG", "GETREG", "missing"],
        &["PFDEBUG", "nosuch", "missing"],
        &["PFDEBUG", "nosuch", "h"],
        &["PFDEBUG", "ENCODING", "h"],
        &["PFDEBUG", "decode", "h"],
        &["PFDEBUG", "GETREG", "g"],
        &["GET", "g"],
        &["PFDEBUG", "ENCODING", "g"],
        &["PFDEBUG", "DECODE", "g"],
        &["PFDEBUG", "TODENSE", "h"],
        &["PFDEBUG", "TODENSE", "h"],
        &["GET", "h"],
        &["PFCOUNT", "h"],
        &["PFMERGE", "mixed", "g", "h"],
        &["GET", "mixed"],
        // Arity.
        &["PFADD"],
        &["PFCOUNT"],
        &["PFMERGE"],
        &["PFDEBUG", "GETREG"],
        &["PFDEBUG", "GETREG", "h", "x"],
        &["PFSELFTEST", "x"],
    ];
    d.check_both_protocols(commands);
}

#[test]
fn sparse_values_turn_dense_at_the_same_element_as_redis() {
    let mut d = Differential::start();
    // The default limit, 3000 bytes: adding one element at a time, compare the value after
    // every change while it is sparse and a few times after it turned dense.
    let mut dense_since = None;
    for i in 0..3000 {
        let element = format!("element:{i}");
        let changed = d.check(&["PFADD", "grow", &element]);
        if changed == Frame::Integer(1) && dense_since.is_none() {
            same_value(&mut d, "grow");
            if encoding(&mut d, "grow") == "dense" {
                dense_since = Some(i);
            }
        }
        if dense_since.is_some_and(|since| i >= since + 200) {
            break;
        }
    }
    let since = dense_since.expect("the value turned dense");
    assert!(since > 500, "turned dense after only {since} elements");
    same_value(&mut d, "grow");
    d.check(&["PFCOUNT", "grow"]);
    same_value(&mut d, "grow");

    // The limit is live: a smaller one promotes earlier, 0 at the first split.
    for limit in ["100", "0", "1k"] {
        d.check(&["CONFIG", "SET", "hll-sparse-max-bytes", limit]);
        d.check(&["DEL", "small"]);
        for i in 0..60 {
            d.check(&["PFADD", "small", &format!("x{i}"), &format!("y{i}")]);
            same_value(&mut d, "small");
        }
        let value = same_value(&mut d, "small");
        if limit != "1k" {
            assert_eq!(
                value.len(),
                12304,
                "dense under hll-sparse-max-bytes {limit}"
            );
        }
        d.check(&["PFCOUNT", "small"]);
    }
    d.check(&["CONFIG", "GET", "hll-sparse-max-bytes"]);
}

/// A register above 32 does not fit a VAL opcode: the element `e2119568080` sets register
/// 12049 to 35
/// (found by hashing candidates offline), which turns a sparse HLL dense at once.
#[test]
fn a_register_above_32_turns_the_value_dense() {
    let mut d = Differential::start();
    d.check(&["PFADD", "tall", "a", "b"]);
    assert_eq!(encoding(&mut d, "tall"), "sparse");
    d.check(&["PFADD", "tall", "e2119568080"]);
    assert_eq!(encoding(&mut d, "tall"), "dense");
    let value = same_value(&mut d, "tall");
    assert_eq!(value.len(), 12304);
    d.check(&["PFCOUNT", "tall"]);
    d.check(&["PFMERGE", "copy", "tall"]);
    same_value(&mut d, "copy");
}

/// A small sparse HLL to corrupt: 20 elements, about 40 bytes.
fn small_sparse(d: &mut Differential) -> Vec<u8> {
    d.check(&["DEL", "base"]);
    let mut add = vec!["PFADD", "base"];
    let elements: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    add.extend(elements.iter().map(String::as_str));
    d.check(&add);
    same_value(d, "base")
}

#[test]
fn corrupt_values_get_redis_errors_and_bytes() {
    let mut d = Differential::start();
    let base = small_sparse(&mut d);
    // Every byte of the value replaced by bytes that flip opcode kinds, lengths and values,
    // or the header's magic, encoding and stale bit. Reads come before the one PFADD: a
    // split of an XZERO cut short by the end of the string leaves a byte past the end in
    // redis-server that only a later read of it would see (see the README).
    let replacements: &[u8] = &[0x00, 0x01, 0x3f, 0x40, 0x7f, 0x80, 0x83, 0xfc, 0xff];
    for offset in 0..base.len() + 2 {
        for &byte in replacements {
            let offset_text = offset.to_string();
            check(&mut d, &[b"SET", b"x", &base]);
            check(
                &mut d,
                &[b"SETRANGE", b"x", offset_text.as_bytes(), &[byte]],
            );
            check(&mut d, &[b"PFCOUNT", b"x"]);
            check(&mut d, &[b"PFCOUNT", b"x", b"base"]);
            check(&mut d, &[b"PFDEBUG", b"DECODE", b"x"]);
            check(&mut d, &[b"PFMERGE", b"merged", b"x"]);
            check(&mut d, &[b"GET", b"merged"]);
            check(&mut d, &[b"PFADD", b"x", b"new element"]);
            check(&mut d, &[b"GET", b"x"]);
            check(&mut d, &[b"DEL", b"merged"]);
        }
    }
    // Cut short, and grown past the end.
    for len in 0..base.len() {
        check(&mut d, &[b"SET", b"x", &base[..len]]);
        check(&mut d, &[b"PFCOUNT", b"x"]);
        check(&mut d, &[b"PFDEBUG", b"GETREG", b"x"]);
        check(&mut d, &[b"PFADD", b"x", b"z"]);
        check(&mut d, &[b"GET", b"x"]);
    }
    check(&mut d, &[b"SET", b"x", &base]);
    check(&mut d, &[b"APPEND", b"x", b"\x80"]);
    check(&mut d, &[b"PFCOUNT", b"x"]);
    check(&mut d, &[b"PFDEBUG", b"TODENSE", b"x"]);
    // A dense value must be exactly 12,304 bytes.
    check(&mut d, &[b"PFDEBUG", b"TODENSE", b"base"]);
    check(&mut d, &[b"APPEND", b"base", b"!"]);
    check(&mut d, &[b"PFADD", b"base", b"a"]);
    check(&mut d, &[b"SETRANGE", b"base", b"12303", b""]);
    check(&mut d, &[b"PFCOUNT", b"base"]);
}

#[test]
fn a_valid_cached_count_is_answered_without_reading_the_registers() {
    let mut d = Differential::start();
    let base = small_sparse(&mut d);
    check(&mut d, &[b"SET", b"x", &base]);
    // Clear the stale bit over a count of 7 and break the registers: the cache answers.
    check(&mut d, &[b"SETRANGE", b"x", b"8", b"\x07\0\0\0\0\0\0\0"]);
    check(&mut d, &[b"SETRANGE", b"x", b"17", b"\x00\x00"]);
    check(&mut d, &[b"PFCOUNT", b"x"]);
    check(&mut d, &[b"PFCOUNT", b"x", b"base"]);
    check(&mut d, &[b"PFADD", b"x", b"m1"]);
    check(&mut d, &[b"GET", b"x"]);
    // An empty HLL with a valid cache, short enough to be stored `embstr`: PFCOUNT answers
    // from the cache but still makes the string `raw`, as Redis's dbUnshareStringValue.
    let empty = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff";
    check(&mut d, &[b"SET", b"e", empty]);
    check(&mut d, &[b"OBJECT", b"ENCODING", b"e"]);
    check(&mut d, &[b"PFCOUNT", b"e"]);
    check(&mut d, &[b"OBJECT", b"ENCODING", b"e"]);
}

/// Reads `key` from `from` and stores it on `to` with SET, and with DUMP/RESTORE.
fn carry(from: &mut RawClient, to: &mut RawClient, key: &str) {
    let value = bulk(from.call(&["GET", key]));
    let set = to.call_raw(&[b"SET", format!("{key}:set").as_bytes(), &value]);
    assert_eq!(set, b"+OK\r\n");
    let dump = bulk(from.call(&["DUMP", key]));
    let restored = to.call_raw(&[
        b"RESTORE",
        format!("{key}:restored").as_bytes(),
        b"0",
        &dump,
    ]);
    assert_eq!(restored, b"+OK\r\n");
}

#[test]
fn values_made_by_one_server_count_the_same_on_the_other() {
    let mut d = Differential::start();
    let many: Vec<String> = (0..5000).map(|i| format!("v{i}")).collect();
    for (key, elements) in [("sparse", &many[..50]), ("dense", &many[..])] {
        for chunk in elements.chunks(500) {
            let mut add = vec!["PFADD", key];
            add.extend(chunk.iter().map(String::as_str));
            d.check(&add);
        }
        let (mut node, mut redis) = d.clients();
        // Made by redis-server, read by the node; and the other way round. Both servers
        // then hold all four copies, which must count and grow identically.
        carry(&mut redis, &mut node, key);
        carry(&mut node, &mut redis, key);
        for copy in ["set", "restored"] {
            let copy = format!("{key}:{copy}");
            d.check(&["PFCOUNT", &copy]);
            d.check(&["PFADD", &copy, "one more", "and another"]);
            d.check(&["PFCOUNT", &copy]);
            same_value(&mut d, &copy);
        }
    }
}

#[test]
fn events_match_redis() {
    let d = Differential::start_with(
        &["--enable-debug-command", "yes"],
        &["--enable-debug-command", "yes"],
    );
    compare_notifications(
        &d,
        "KEA",
        false,
        &[
            &["PFADD", "h", "a", "b"],
            &["PFADD", "h", "a"],
            &["PFADD", "h"],
            &["PFADD", "empty"],
            &["PFCOUNT", "h"],
            &["PFMERGE", "m", "h"],
            &["PFMERGE", "m"],
            &["PFDEBUG", "TODENSE", "h"],
            &["SET", "s", "x"],
            &["PFADD", "s", "a"],
            &["PFMERGE", "s", "h"],
        ],
    );
    compare_notifications(&d, "KEn", false, &[&["PFADD", "new"], &["PFMERGE", "new2"]]);
}

/// Runs WATCH key; `change` from another client; MULTI; PING; EXEC on both servers and
/// compares the EXEC replies (nil when the change counted as one).
fn watch_sees(d: &mut Differential, key: &str, change: &[&str]) -> Frame {
    let (mut other_node, mut other_redis) = d.clients();
    d.check(&["WATCH", key]);
    let (a, b) = (other_node.call(change), other_redis.call(change));
    assert_eq!(a, b, "{change:?}");
    d.check(&["MULTI"]);
    d.check(&["PING"]);
    d.check(&["EXEC"])
}

#[test]
fn watch_sees_the_changes_redis_signals() {
    let mut d = Differential::start_with(
        &["--enable-debug-command", "yes"],
        &["--enable-debug-command", "yes"],
    );
    d.check(&["PFADD", "h", "a", "b"]);
    // PFCOUNT writing the cache changes the key; answering from the cache does not.
    assert_eq!(watch_sees(&mut d, "h", &["PFCOUNT", "h"]), Frame::NullArray);
    assert_ne!(watch_sees(&mut d, "h", &["PFCOUNT", "h"]), Frame::NullArray);
    assert_ne!(
        watch_sees(&mut d, "h", &["PFADD", "h", "a"]),
        Frame::NullArray
    );
    assert_eq!(
        watch_sees(&mut d, "h", &["PFADD", "h", "c"]),
        Frame::NullArray
    );
    assert_eq!(watch_sees(&mut d, "h", &["PFMERGE", "h"]), Frame::NullArray);
    assert_eq!(
        watch_sees(&mut d, "new", &["PFADD", "new"]),
        Frame::NullArray
    );
    // PFDEBUG's conversion to dense changes the bytes, but Redis does not signal the key.
    d.check(&["PFADD", "sparse", "a"]);
    assert_ne!(
        watch_sees(&mut d, "sparse", &["PFDEBUG", "TODENSE", "sparse"]),
        Frame::NullArray
    );
    d.check(&["PFADD", "sparse2", "a"]);
    assert_ne!(
        watch_sees(&mut d, "sparse2", &["PFDEBUG", "GETREG", "sparse2"]),
        Frame::NullArray
    );
}

/// The commands of `dir`'s first incremental AOF file.
fn aof_text(dir: &std::path::Path) -> String {
    let path = dir.join(AOF_DIR).join("appendonly.aof.1.incr.aof");
    String::from_utf8_lossy(&std::fs::read(path).expect("incremental AOF")).into_owned()
}

#[test]
fn changes_reach_the_aof_as_in_redis() {
    let node_dir = scratch_dir("hll-aof-node");
    let redis_dir = scratch_dir("hll-aof-redis");
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let debug = ["--enable-debug-command", "yes"];
    let node_args: Vec<&str> = aof.iter().chain(&debug).copied().collect();
    let node = node_in(&node_dir, &node_args);
    let redis = redis_in(&redis_dir, &node_args);
    let commands: &[&[&str]] = &[
        &["PFADD", "h", "a", "b"],
        &["PFADD", "h", "a"],
        // Writes the cache: propagated although PFCOUNT is not a write command.
        &["PFCOUNT", "h"],
        // Answered from the cache: nothing to propagate.
        &["PFCOUNT", "h"],
        &["PFCOUNT", "h", "missing"],
        &["PFMERGE", "m", "h"],
        &["PFDEBUG", "ENCODING", "m"],
        &["PFDEBUG", "TODENSE", "m"],
        &["PFDEBUG", "TODENSE", "m"],
        &["PFCOUNT", "m"],
    ];
    let mut node_client = RawClient::connect(node.port);
    let mut redis_client = RawClient::connect(redis.port);
    for command in commands {
        assert_eq!(
            node_client.call(command),
            redis_client.call(command),
            "{command:?}"
        );
    }
    assert_eq!(aof_text(&node_dir), aof_text(&redis_dir));
    assert!(aof_text(&node_dir).contains("PFCOUNT"));
    // Replayed, the log rebuilds the same bytes.
    let h = bulk(node_client.call(&["GET", "h"]));
    drop(node);
    let restarted = node_in(&node_dir, &node_args);
    let mut client = RawClient::connect(restarted.port);
    assert_eq!(bulk(client.call(&["GET", "h"])), h);
    assert_eq!(
        bulk(client.call(&["GET", "m"])),
        bulk(redis_client.call(&["GET", "m"]))
    );
}

/// PFSELFTEST adds ten million elements: in a debug build that takes longer than the
/// harness client waits, so this client waits up to ten minutes.
#[test]
fn the_self_test_passes() {
    let mut d = Differential::start();
    let mut stream = TcpStream::connect(("127.0.0.1", d.node.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(600)))
        .unwrap();
    stream.write_all(b"PFSELFTEST\r\n").unwrap();
    let mut reply = [0u8; 5];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
    drop(stream);
    // The self-test reads hll-sparse-max-bytes: below an empty HLL's 18 bytes the first
    // element already turns the HLL dense, and the check for the sparse form fails.
    d.check(&["CONFIG", "SET", "hll-sparse-max-bytes", "10"]);
    d.check(&["PFSELFTEST"]);
}
