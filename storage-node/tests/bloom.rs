//! Bloom filters (RedisBloom 2.6's `BF.*` commands and its `MBbloom--` type).
//!
//! No redis-server with RedisBloom is installed here, so these are not differential tests:
//! the expected replies are RedisBloom 2.6's as read in its source (`src/rebloom.c`,
//! `src/sb.c`, `deps/bloom/bloom.c`): its error texts (some without `ERR`, one with a
//! trailing blank), its `BF.INFO` fields, and sizes computed here from its formulas
//! ([`redisbloom_bytes`]); one size is also RedisBloom's own documented example (a default
//! filter of capacity 100 is 240 bytes). The persistence tests use the node alone (save
//! and restart, AOF replay and rewrite, DUMP/RESTORE, MIGRATE between cluster nodes).

mod bloom_fixture;
mod persistence_fixture;

use bloom_fixture::{int, pipelined, raw};
use test_harness::{RawClient, ServerProcess};

/// The bytes RedisBloom's `bloom_init` gives a filter (`BLOOM_OPT_NOROUND`): bits per
/// entry `-ln(error) / ln(2)^2`, `floor(entries * bpe)` bits rounded up to 64-bit words.
fn redisbloom_bytes(entries: u64, error: f64) -> u64 {
    let bpe = -(error.ln() / 0.480453013918201);
    let bits = ((entries as f64 * bpe) as u64).max(1);
    if !bits.is_multiple_of(64) {
        (bits / 64 + 1) * 8
    } else {
        bits / 8
    }
}

/// RedisBloom's `BF.INFO` Size: `sizeof(SBChain)` (32) plus per filter `sizeof(SBLink)`
/// (64) and its bytes, for filters of `(entries, error)`.
fn redisbloom_size(filters: &[(u64, f64)]) -> i64 {
    32 + filters
        .iter()
        .map(|&(e, r)| 64 + redisbloom_bytes(e, r) as i64)
        .sum::<i64>()
}

fn info_reply(
    capacity: i64,
    size: i64,
    filters: i64,
    items: i64,
    expansion: Option<i64>,
) -> String {
    let expansion = match expansion {
        Some(n) => format!(":{n}\r\n"),
        None => "$-1\r\n".to_string(),
    };
    format!(
        "*10\r\n+Capacity\r\n:{capacity}\r\n+Size\r\n:{size}\r\n+Number of filters\r\n:{filters}\r\n\
         +Number of items inserted\r\n:{items}\r\n+Expansion rate\r\n{expansion}"
    )
}

#[test]
fn reserve_errors_and_info() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    let arity = |name: &str| format!("-ERR wrong number of arguments for '{name}' command\r\n");

    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "0.01"]),
        arity("BF.RESERVE")
    );
    assert_eq!(
        raw(
            &mut c,
            &["bf.Reserve", "f", "0.01", "1", "a", "b", "c", "d"]
        ),
        arity("bf.Reserve"),
        "the name as sent, as RedisModule_WrongArity answers"
    );
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "x", "100"]),
        "-ERR bad error rate\r\n"
    );
    for rate in ["0", "1", "-0.5", "1.5", "inf"] {
        assert_eq!(
            raw(&mut c, &["BF.RESERVE", "f", rate, "100"]),
            "-ERR (0 < error rate range < 1) \r\n",
            "rate {rate}"
        );
    }
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "0.1", "1.5"]),
        "-ERR bad capacity\r\n"
    );
    for capacity in ["0", "-3"] {
        assert_eq!(
            raw(&mut c, &["BF.RESERVE", "f", "0.1", capacity]),
            "-ERR (capacity should be larger than 0)\r\n"
        );
    }
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "0.1", "10", "EXPANSION"]),
        "-ERR no expansion\r\n"
    );
    assert_eq!(
        raw(
            &mut c,
            &[
                "BF.RESERVE",
                "f",
                "0.1",
                "10",
                "NONSCALING",
                "EXPANSION",
                "3"
            ]
        ),
        "-Nonscaling filters cannot expand\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "0.1", "10", "EXPANSION", "x"]),
        "-ERR bad expansion\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "0.1", "10", "EXPANSION", "0"]),
        "-ERR expansion should be greater or equal to 1\r\n"
    );
    assert_eq!(int(&mut c, &["EXISTS", "f"]), 0, "no error created a key");

    assert_eq!(raw(&mut c, &["BF.RESERVE", "f", "0.01", "1000"]), "+OK\r\n");
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "f", "0.01", "1000"]),
        "-ERR item exists\r\n"
    );
    raw(&mut c, &["SET", "s", "x"]);
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "s", "0.01", "1000"]),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(raw(&mut c, &["TYPE", "f"]), "+MBbloom--\r\n");
    assert_eq!(raw(&mut c, &["OBJECT", "ENCODING", "f"]), "$3\r\nraw\r\n");
    // SCAN's TYPE filter matches the module type's name, as Redis 7.0 compares it.
    assert_eq!(
        raw(&mut c, &["SCAN", "0", "TYPE", "MBbloom--"]),
        "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nf\r\n"
    );

    // A scaling filter's first sub-filter gets half the error rate.
    let size = redisbloom_size(&[(1000, 0.005)]);
    assert_eq!(
        raw(&mut c, &["BF.INFO", "f"]),
        info_reply(1000, size, 1, 0, Some(2))
    );
    for (field, value) in [
        ("CAPACITY", ":1000\r\n".to_string()),
        ("size", format!(":{size}\r\n")),
        ("Filters", ":1\r\n".to_string()),
        ("items", ":0\r\n".to_string()),
        ("expansion", ":2\r\n".to_string()),
    ] {
        assert_eq!(
            raw(&mut c, &["BF.INFO", "f", field]),
            format!("*1\r\n{value}")
        );
    }
    assert_eq!(
        raw(&mut c, &["BF.INFO", "f", "bogus"]),
        "-Invalid information value\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.INFO", "f", "a", "b"]), arity("BF.INFO"));
    assert_eq!(raw(&mut c, &["BF.INFO", "missing"]), "-ERR not found\r\n");
    assert_eq!(
        raw(&mut c, &["BF.INFO", "s"]),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.CARD", "missing"]), ":0\r\n");
    assert_eq!(
        raw(&mut c, &["BF.CARD", "s"]),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );

    // NONSCALING: the requested rate as is, and a null expansion; EXPANSION sets growth.
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "n", "0.001", "500", "NONSCALING"]),
        "+OK\r\n"
    );
    let size = redisbloom_size(&[(500, 0.001)]);
    assert_eq!(
        raw(&mut c, &["BF.INFO", "n"]),
        info_reply(500, size, 1, 0, None)
    );
    assert_eq!(raw(&mut c, &["BF.INFO", "n", "EXPANSION"]), "*1\r\n$-1\r\n");
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "e", "0.1", "10", "EXPANSION", "5"]),
        "+OK\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.INFO", "e", "expansion"]), "*1\r\n:5\r\n");
    // RESP3 gets the same array (RedisBloom 2.6 replies with arrays).
    c.call(&["HELLO", "3"]);
    assert_eq!(raw(&mut c, &["BF.INFO", "n", "EXPANSION"]), "*1\r\n_\r\n");
}

#[test]
fn add_exists_and_scaling() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(raw(&mut c, &["BF.ADD", "f", "a"]), ":1\r\n");
    assert_eq!(raw(&mut c, &["BF.ADD", "f", "a"]), ":0\r\n");
    assert_eq!(
        raw(&mut c, &["BF.ADD", "f"]),
        "-ERR wrong number of arguments for 'BF.ADD' command\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.ADD", "f", "a", "b"]),
        "-ERR wrong number of arguments for 'BF.ADD' command\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.MADD", "f", "a", "b", "c"]),
        "*3\r\n:0\r\n:1\r\n:1\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.MADD", "f"]),
        "-ERR wrong number of arguments for 'BF.MADD' command\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.EXISTS", "f", "b"]), ":1\r\n");
    assert_eq!(raw(&mut c, &["BF.EXISTS", "f", "zz"]), ":0\r\n");
    assert_eq!(raw(&mut c, &["BF.EXISTS", "missing", "zz"]), ":0\r\n");
    assert_eq!(
        raw(&mut c, &["BF.MEXISTS", "f", "a", "zz", "c"]),
        "*3\r\n:1\r\n:0\r\n:1\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.MEXISTS", "missing", "a", "b"]),
        "*2\r\n:0\r\n:0\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.EXISTS", "f"]),
        "-ERR wrong number of arguments for 'BF.EXISTS' command\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.CARD", "f"]), ":3\r\n");
    // RedisBloom's documented example: a default filter (capacity 100, 1%) is 240 bytes.
    assert_eq!(
        raw(&mut c, &["BF.INFO", "f"]),
        info_reply(100, 240, 1, 3, Some(2))
    );
    assert_eq!(redisbloom_size(&[(100, 0.005)]), 240);

    // Another type: BF.ADD refuses it, BF.EXISTS reads it as no filter (RedisBloom's
    // check answers 0 for anything but a filter).
    raw(&mut c, &["LPUSH", "l", "x"]);
    assert_eq!(
        raw(&mut c, &["BF.ADD", "l", "x"]),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.EXISTS", "l", "x"]), ":0\r\n");
    assert_eq!(raw(&mut c, &["BF.MEXISTS", "l", "x"]), "*1\r\n:0\r\n");

    // Past its capacity a scaling filter adds sub-filters: x2 capacity, half the rate.
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "g", "0.1", "50", "EXPANSION", "3"]),
        "+OK\r\n"
    );
    let mut i = 0;
    while int(&mut c, &["BF.CARD", "g"]) < 51 {
        c.call(&["BF.ADD", "g", &format!("item{i}")]);
        i += 1;
        assert!(i < 10_000);
    }
    let size = redisbloom_size(&[(50, 0.05), (150, 0.025)]);
    assert_eq!(
        raw(&mut c, &["BF.INFO", "g"]),
        info_reply(200, size, 2, 51, Some(3))
    );
    assert!(int(&mut c, &["MEMORY", "USAGE", "g"]) >= size);
}

#[test]
fn nonscaling_filter_fills_up() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "n", "0.01", "3", "NONSCALING"]),
        "+OK\r\n"
    );
    // The array ends with the item that did not fit; the items after it are not tried.
    assert_eq!(
        raw(&mut c, &["BF.MADD", "n", "a", "b", "c", "d", "e"]),
        "*4\r\n:1\r\n:1\r\n:1\r\n-ERR non scaling filter is full\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.ADD", "n", "f"]),
        "-ERR non scaling filter is full\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.ADD", "n", "a"]),
        ":0\r\n",
        "a present item is still found"
    );
    assert_eq!(
        raw(&mut c, &["BF.MEXISTS", "n", "d", "e"]),
        "*2\r\n:0\r\n:0\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.CARD", "n"]), ":3\r\n");
}

#[test]
fn insert_options() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    let arity = "-ERR wrong number of arguments for 'BF.INSERT' command\r\n";
    assert_eq!(raw(&mut c, &["BF.INSERT", "f", "ITEMS"]), arity);
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "f", "CAPACITY", "10"]),
        arity,
        "no ITEMS"
    );
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "f", "NOCREATE", "ITEMS"]),
        arity,
        "no item"
    );
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "f", "ITEMS", "a"]),
        "*1\r\n:1\r\n"
    );
    assert_eq!(raw(&mut c, &["BF.INSERT", "f", "CAPACITY"]), arity);
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "f", "BOGUS", "ITEMS", "a"]),
        "-Unknown argument received\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "g", "CAPACITY", "x", "ITEMS", "a"]),
        "-Bad capacity\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "g", "ERROR", "x", "ITEMS", "a"]),
        "-Bad error rate\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "g", "EXPANSION", "x", "ITEMS", "a"]),
        "-Bad expansion\r\n"
    );
    for bad in [
        &["ERROR", "0"][..],
        &["ERROR", "1"],
        &["CAPACITY", "0"],
        &["EXPANSION", "0"],
    ] {
        let mut args = vec!["BF.INSERT", "g"];
        args.extend_from_slice(bad);
        args.extend_from_slice(&["ITEMS", "a"]);
        assert_eq!(raw(&mut c, &args), "-Bad argument received\r\n", "{bad:?}");
    }
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "g", "NOCREATE", "ITEMS", "a"]),
        "-ERR not found\r\n"
    );
    assert_eq!(int(&mut c, &["EXISTS", "g"]), 0);

    assert_eq!(
        raw(
            &mut c,
            &[
                "BF.INSERT",
                "g",
                "capacity",
                "1000",
                "error",
                "0.001",
                "expansion",
                "4",
                "ITEMS",
                "a",
                "b",
                "a"
            ]
        ),
        "*3\r\n:1\r\n:1\r\n:0\r\n"
    );
    let size = redisbloom_size(&[(1000, 0.0005)]);
    assert_eq!(
        raw(&mut c, &["BF.INFO", "g"]),
        info_reply(1000, size, 1, 2, Some(4))
    );
    // On an existing filter the options change nothing.
    assert_eq!(
        raw(
            &mut c,
            &[
                "BF.INSERT",
                "g",
                "CAPACITY",
                "5",
                "NONSCALING",
                "ITEMS",
                "c"
            ]
        ),
        "*1\r\n:1\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.INFO", "g"]),
        info_reply(1000, size, 1, 3, Some(4))
    );
    assert_eq!(
        raw(
            &mut c,
            &[
                "BF.INSERT",
                "h",
                "NONSCALING",
                "CAPACITY",
                "2",
                "ITEMS",
                "a",
                "b",
                "c"
            ]
        ),
        "*3\r\n:1\r\n:1\r\n-ERR non scaling filter is full\r\n"
    );
    let size = redisbloom_size(&[(2, 0.01)]);
    assert_eq!(
        raw(&mut c, &["BF.INFO", "h"]),
        info_reply(2, size, 1, 2, None)
    );
}

/// 1,000,000 items into a filter reserved for them at 1%: no false negatives, and the
/// measured false-positive rate over 1,000,000 other items stays at or under 1%.
#[test]
fn false_positive_rate_with_a_million_items() {
    const N: usize = 1_000_000;
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "fp", "0.01", &N.to_string()]),
        "+OK\r\n"
    );
    let added = pipelined(&mut c, "BF.MADD", "fp", "member:", N);
    assert_eq!(int(&mut c, &["BF.CARD", "fp"]), added as i64);
    assert_eq!(
        pipelined(&mut c, "BF.MEXISTS", "fp", "member:", N),
        N,
        "no false negatives"
    );
    let false_positives = pipelined(&mut c, "BF.MEXISTS", "fp", "stranger:", N);
    let rate = false_positives as f64 / N as f64;
    eprintln!("false positives: {false_positives} of {N} ({rate:.5}); adds reported new: {added}");
    assert!(rate <= 0.01, "false-positive rate {rate}");
    // Memory per item is RedisBloom's: one sub-filter of bpe(0.5%) bits per item.
    let size = redisbloom_size(&[(N as u64, 0.005)]);
    assert_eq!(
        raw(&mut c, &["BF.INFO", "fp", "SIZE"]),
        format!("*1\r\n:{size}\r\n")
    );
    assert!(
        (size as f64 / N as f64) < 1.39,
        "{size} bytes for {N} items"
    );
}

/// SCANDUMP's chunks loaded with LOADCHUNK into another key give the same filter.
#[test]
fn scandump_loadchunk_round_trip() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(
        raw(&mut c, &["BF.SCANDUMP", "missing", "0"]),
        "-ERR not found\r\n"
    );
    assert_eq!(
        raw(
            &mut c,
            &["BF.RESERVE", "f", "0.01", "100", "EXPANSION", "3"]
        ),
        "+OK\r\n"
    );
    assert!(pipelined(&mut c, "BF.MADD", "f", "x", 2000) > 1900);
    assert_eq!(
        raw(&mut c, &["BF.SCANDUMP", "f", "x"]),
        "-Second argument must be numeric\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.LOADCHUNK", "g", "x", "data"]),
        "-ERR Second argument must be numeric\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.LOADCHUNK", "g", "5", "data"]),
        "-ERR not found\r\n"
    );
    assert_eq!(
        raw(&mut c, &["BF.LOADCHUNK", "g", "1", "short"]),
        "-ERR received bad data\r\n"
    );

    let mut chunks: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut iter = 0i64;
    loop {
        let reply = c.call(&["BF.SCANDUMP", "f", &iter.to_string()]);
        let items = reply.as_array().expect("array").to_vec();
        let next = items[0].as_integer().expect("iterator");
        let data = items[1].as_bytes().expect("data").to_vec();
        if next == 0 {
            assert!(data.is_empty());
            break;
        }
        chunks.push((next, data));
        iter = next;
        assert!(chunks.len() < 100);
    }
    // The header, then one chunk per sub-filter (each smaller than 16 MB).
    let filters = int_in(&mut c, &["BF.INFO", "f", "FILTERS"]);
    assert_eq!(chunks.len() as i64, 1 + filters);
    assert_eq!(
        chunks[0].1.len() as i64,
        20 + 53 * filters,
        "RedisBloom's packed header"
    );
    for (iter, data) in &chunks {
        let iter = iter.to_string();
        let reply = c.call_raw(&[b"BF.LOADCHUNK", b"g", iter.as_bytes(), data]);
        assert_eq!(reply, b"+OK\r\n");
    }
    assert_eq!(
        raw(&mut c, &["BF.INFO", "g"]),
        raw(&mut c, &["BF.INFO", "f"])
    );
    assert_eq!(pipelined(&mut c, "BF.MEXISTS", "g", "x", 2000), 2000);
    assert_eq!(
        pipelined(&mut c, "BF.MEXISTS", "g", "y", 2000),
        pipelined(&mut c, "BF.MEXISTS", "f", "y", 2000)
    );
    assert_eq!(c.call(&["DUMP", "g"]), c.call(&["DUMP", "f"]));
    // The header again on an existing key is not a chunk.
    let header = &chunks[0].1;
    assert_eq!(
        c.call_raw(&[b"BF.LOADCHUNK", b"g", b"1", header]),
        b"-ERR received bad data\r\n"
    );
}

/// The integer in a one-element array reply (BF.INFO with one field).
fn int_in(c: &mut RawClient, args: &[&str]) -> i64 {
    c.call(args)
        .as_array()
        .and_then(|a| a[0].as_integer())
        .expect("one integer")
}

/// The command table lists the module commands as Redis does for RedisBloom's.
#[test]
fn command_info_as_a_module_declares_them() {
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    let key_spec = "*1\r\n*6\r\n$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n\
                    $12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n\
                    $9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n\
                    $7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n";
    assert_eq!(
        raw(&mut c, &["COMMAND", "INFO", "BF.ADD"]),
        format!("*1\r\n*10\r\n$6\r\nbf.add\r\n:-1\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n{key_spec}*0\r\n")
    );
    assert_eq!(
        raw(&mut c, &["COMMAND", "INFO", "bf.exists"]),
        format!("*1\r\n*10\r\n$9\r\nbf.exists\r\n:-1\r\n*3\r\n+readonly\r\n+module\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n{key_spec}*0\r\n")
    );
    assert_eq!(
        raw(&mut c, &["COMMAND", "GETKEYS", "BF.MADD", "k", "a", "b"]),
        "*1\r\n$1\r\nk\r\n"
    );
    assert_eq!(
        raw(&mut c, &["COMMAND", "DOCS", "bf.card"]),
        "*2\r\n$7\r\nbf.card\r\n*4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$2\r\nbf\r\n"
    );
    let listed = c.call(&["COMMAND", "LIST", "FILTERBY", "MODULE", "BF"]);
    let mut names: Vec<String> = listed
        .as_array()
        .expect("array")
        .iter()
        .map(|f| String::from_utf8_lossy(f.as_bytes().unwrap()).into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bf.add",
            "bf.card",
            "bf.exists",
            "bf.info",
            "bf.insert",
            "bf.loadchunk",
            "bf.madd",
            "bf.mexists",
            "bf.reserve",
            "bf.scandump"
        ]
    );
}

/// The item hash is MurmurHash64A exactly: checked against the one real Redis 7.0 runs for
/// HyperLogLog (seed 0xadc83b19), whose register index (low 14 bits) and run length (trailing
/// zeros of the rest, plus one) `PFDEBUG GETREG` shows for an HLL of one element.
#[test]
fn murmur_hash64a_matches_redis() {
    use storage_node::types::murmur::murmur_hash64a;
    let redis = ServerProcess::redis_server(&[]);
    let mut c = RawClient::connect(redis.port);
    let mut elements: Vec<Vec<u8>> = (0..40).map(|i| format!("item:{i}").into_bytes()).collect();
    elements.push(Vec::new());
    elements.push(b"exactly8".to_vec());
    elements.push(b"\x00\xff\x80binary tail".to_vec());
    for element in &elements {
        c.call(&["DEL", "h"]);
        c.call_raw(&[b"PFADD", b"h", element]);
        let registers = c.call(&["PFDEBUG", "GETREG", "h"]);
        let registers = registers.as_array().expect("registers");
        let set: Vec<(usize, i64)> = registers
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_integer().filter(|&v| v != 0).map(|v| (i, v)))
            .collect();
        let hash = murmur_hash64a(element, 0xadc8_3b19);
        let index = (hash & 16383) as usize;
        let run = ((hash >> 14) | (1 << 50)).trailing_zeros() as i64 + 1;
        assert_eq!(set, vec![(index, run)], "{element:?}");
    }
}

/// A scaling filter that starts small and grows to 1,000,000 items through its sub-filters
/// (each half the previous error rate) still stays at or under the requested 1%.
#[test]
fn scaled_filter_keeps_its_false_positive_rate() {
    const N: usize = 1_000_000;
    let node = ServerProcess::storage_node(&[]);
    let mut c = RawClient::connect(node.port);
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "grown", "0.01", "1000"]),
        "+OK\r\n"
    );
    pipelined(&mut c, "BF.MADD", "grown", "member:", N);
    let filters = int_in(&mut c, &["BF.INFO", "grown", "FILTERS"]);
    // 1000, 2000, ... 512,000: ten sub-filters hold 1,023,000 items.
    assert_eq!(filters, 10);
    assert_eq!(pipelined(&mut c, "BF.MEXISTS", "grown", "member:", N), N);
    let false_positives = pipelined(&mut c, "BF.MEXISTS", "grown", "stranger:", N);
    let rate = false_positives as f64 / N as f64;
    eprintln!("scaled filter: {filters} sub-filters, false positives {rate:.5}");
    assert!(rate <= 0.01, "false-positive rate {rate}");
}
