//! Sequences the differential command fuzzer (`tests/harness/src/difffuzz`) found, shrunk
//! and kept as plain tests: each is compared byte for byte with redis-server 7.0.

use test_harness::Differential;

/// `SELECT` reads a C `int`: past its range the error is Redis's range error, not
/// `DB index is out of range`.
#[test]
fn select_index_outside_int_range() {
    let mut d = Differential::start();
    d.check_all(&[
        &["SELECT", "9223372036854775807"],
        &["SELECT", "-9223372036854775807"],
        &["SELECT", "2147483648"],
        &["SELECT", "16"],
        &["SELECT", "abc"],
    ]);
}

/// EVALSHA with a SHA1 that cannot be one (not 40 characters) is NOSCRIPT before numkeys
/// is read; a 40-character unknown one reads numkeys first.
#[test]
fn evalsha_checks_the_sha_length_before_numkeys() {
    let mut d = Differential::start();
    d.check_all(&[
        &["EVALSHA", "abc", "0x10", "{fz}big"],
        &["EVALSHA", "", "2", "{fz}new"],
        &["EVALSHA_RO", "abc", "18446744073709551616", "{fz}zset"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "abc"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "5"],
    ]);
}

/// FCALL looks the function up before numkeys, and a numkeys that is not an integer is
/// `Bad number of keys provided` (not EVAL's integer error).
#[test]
fn fcall_looks_up_the_function_before_numkeys() {
    let mut d = Differential::start();
    d.check_all(&[
        &["FCALL", "", "-9223372036854775808", "{fz}int"],
        &["FCALL_RO", "f", "1"],
        &["FCALL", "nosuch", "abc"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=fz\nredis.register_function('f', function(keys, args) return 1 end)",
        ],
        &["FCALL", "f", "abc"],
        &["FCALL_RO", "f", "abc"],
        &["FCALL", "f", "5", "a"],
        &["FCALL", "f", "-1"],
        &["FCALL_RO", "f", "0"],
        &["FCALL", "f", "0"],
    ]);
}

/// A Lua number that is NaN, infinite or outside `i64` becomes the integer the C cast gives
/// on x86-64 (`i64::MIN`); others are truncated toward zero.
#[test]
fn lua_numbers_outside_i64_become_i64_min() {
    let mut d = Differential::start();
    d.check_all(&[
        &["EVAL", "return 0/0", "0"],
        &["EVAL", "return {1/0, -1/0, 3.99, -3.99}", "0"],
        &[
            "EVAL",
            "return {1e300, -1e300, 9223372036854775807, -2^63}",
            "0",
        ],
        &["EVAL_RO", "return tonumber('nan')", "0"],
    ]);
}

/// Scores, score ranges and weights accept C `strtod`'s hexadecimal floats.
#[test]
fn zset_scores_accept_hexadecimal_floats() {
    let mut d = Differential::start();
    d.check_all(&[
        &["ZADD", "{fz}zset", "1", "a", "2", "b", "8", "c"],
        &["ZADD", "{fz}zset", "XX", "CH", "0x1p3", "a"],
        &["ZINCRBY", "{fz}zset", "0x10", "b"],
        &["ZRANGEBYSCORE", "{fz}zset", "0x1p3", "+inf", "WITHSCORES"],
        &["ZREVRANGEBYSCORE", "{fz}zset", "0x10", "(0x1p3"],
        &["ZCOUNT", "{fz}zset", "(-inf", "0x1p3"],
        &["ZREMRANGEBYSCORE", "{fz}missing", "0x1p3", "(1"],
        &["ZUNIONSTORE", "{fz}out", "1", "{fz}zset", "WEIGHTS", "0x.8"],
        &["ZRANGE", "{fz}out", "0", "-1", "WITHSCORES"],
        &["ZADD", "{fz}zset", "0x", "d"],
        &["ZADD", "{fz}zset", "0x1p", "d"],
        &["ZRANGEBYSCORE", "{fz}zset", "0xg", "1"],
    ]);
}

/// EXEC refused for its arity aborts with EXECABORT even outside MULTI, and drops WATCH.
#[test]
fn refused_exec_aborts_outside_multi_too() {
    let mut d = Differential::start();
    let (mut node_other, mut redis_other) = d.clients();
    d.check_all(&[
        &["EXEC", "+"],
        &["WATCH", "{fz}k"],
        &["EXEC", "{fz}int"],
        &["MULTI"],
        &["SET", "{fz}k", "1"],
    ]);
    // Had WATCH survived the refused EXEC, this write would make EXEC answer a null array.
    node_other.call(&["SET", "{fz}k", "other"]);
    redis_other.call(&["SET", "{fz}k", "other"]);
    d.check_all(&[&["EXEC"], &["MULTI"], &["EXEC", "x"], &["EXEC"]]);
}

/// Errors that echo an argument print it as a C string: up to its first NUL byte.
#[test]
fn echoed_arguments_stop_at_nul() {
    let mut d = Differential::start();
    d.check_bytes(&[b"CLUSTER", b"\0\x7f\r\n"]);
    d.check_bytes(&[b"OBJECT", b"ab\0cd", b"{fz}k"]);
    d.check_bytes(&[b"NOSUCH\0X", b"a\0b", b"\0"]);
    d.check_bytes(&[b"FUNCTION", b"LIST", b"with\0code"]);
    d.check_bytes(&[b"EXPIRE", b"{fz}k", b"10", b"n\0x"]);
    d.check_bytes(&[b"FUNCTION", b"LOAD", b"\0\x7f\r\n", b"garbage"]);
    // A known subcommand with wrong arguments: `%.128s`, so also at most 128 characters.
    d.check_bytes(&[b"PUBSUB", b"NUMPAT", b"x"]);
    d.check_bytes(&[b"FUNCTION", b"FLUSH", b"a\0b", b"c"]);
    let long = [b'x'; 200];
    d.check_bytes(&[b"CLIENT", b"UNBLOCK", b"1", b"2", b"3"]);
    d.check_bytes(&[b"PUBSUB", &long[..], b"x"]);
}

/// Score ranges are read as C strings: a NUL byte ends the number.
#[test]
fn score_ranges_stop_at_nul() {
    let mut d = Differential::start();
    d.check(&["ZADD", "{fz}z", "0", "a", "1", "b"]);
    d.check_bytes(&[b"ZRANGE", b"{fz}z", b"-1", b"\0\x7f\r\n", b"BYSCORE"]);
    d.check_bytes(&[b"ZCOUNT", b"{fz}z", b"1\0junk", b"(2\0"]);
    d.check_bytes(&[b"ZRANGEBYSCORE", b"{fz}z", b"(\0", b"+inf"]);
    d.check_bytes(&[b"ZADD", b"{fz}z", b"1\0", b"c"]);
}

/// A key count of `i64::MAX` is an invalid key spec, not an overflow (a debug build
/// panicked computing the last key's index; the proxy dropped the connection).
#[test]
fn key_count_at_the_i64_limit() {
    let mut d = Differential::start();
    d.check_all(&[
        &[
            "COMMAND",
            "GETKEYS",
            "ZUNIONSTORE",
            "{fz}d",
            "9223372036854775807",
            "{fz}a",
        ],
        &[
            "COMMAND",
            "GETKEYS",
            "ZMPOP",
            "9223372036854775807",
            "{fz}a",
            "MAX",
        ],
        &[
            "ZUNIONSTORE",
            "{fz}d",
            "9223372036854775807",
            "{fz}a",
            "AGGREGATE",
            "MAX",
        ],
        &["PING"],
    ]);
}

/// Scripts the fuzzer found to crash the node (stack overflow), shrunk to one EVAL each;
/// the scripting depth bounds fixed them.
mod script_crashes {
    use test_harness::{RawClient, ServerProcess};

    /// Runs one script on a fresh node and asserts the node answers it and a PING after.
    fn survives(script: &str, keys: &[&str]) {
        let node = ServerProcess::storage_node(&[]);
        let mut client = RawClient::connect(node.port);
        let numkeys = keys.len().to_string();
        let mut args: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), numkeys.as_bytes()];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        client.send(&args);
        // The reply may nest thousands deep (past what `parse_frame` builds): read its bytes.
        // A node that died fails here ("server closed the connection").
        let reply = client.read_raw_reply();
        assert!(
            !reply.is_empty(),
            "no reply to {script}; log:\n{}",
            node.log()
        );
        let pong = RawClient::connect(node.port).call(&["PING"]);
        assert_eq!(pong.as_bytes(), Some(&b"PONG"[..]));
    }

    #[test]
    fn self_referencing_table_reply() {
        survives("local a = {} a[1] = a return a", &["{fz}float", "{fz}zset"]);
    }

    #[test]
    fn mutually_referencing_tables_reply() {
        survives(
            "local a = {} local b = {a} a[1] = b return a",
            &["{fz}hll", "{fz}ttl"],
        );
    }

    #[test]
    fn table_nested_2000_deep_reply() {
        survives(
            "local t = {} local c = t for i = 1, 2000 do c[1] = {} c = c[1] end return t",
            &["{fz}set"],
        );
    }

    #[test]
    fn cjson_decode_of_deep_nesting() {
        survives(
            "return cjson.decode(string.rep('[', 100000) .. string.rep(']', 100000))",
            &["{fz}int", "{fz}ttl"],
        );
    }

    #[test]
    fn cjson_encode_of_self_reference() {
        survives("local a = {} a[1] = a return cjson.encode(a)", &["{fz}"]);
    }

    #[test]
    fn cmsgpack_unpack_of_deep_nesting() {
        survives(
            "return cmsgpack.unpack(string.rep('\\145', 100000))",
            &["{fz}"],
        );
    }
}

/// SORT of a list BY a pattern without `*` (no sorting) reads the list from the tail for
/// DESC, with or without LIMIT.
#[test]
fn sort_list_without_sorting_honours_desc() {
    let mut d = Differential::start();
    d.check_all(&[
        &["RPUSH", "{fz}list", "a", "b", "c", "1", "2", "3"],
        &[
            "SORT", "{fz}list", "BY", "", "LIMIT", "0", "1", "DESC", "ALPHA",
        ],
        &["SORT", "{fz}list", "BY", "nosort", "DESC"],
        &[
            "SORT", "{fz}list", "BY", "nosort", "LIMIT", "1", "3", "DESC",
        ],
        &["SORT", "{fz}list", "BY", "nosort", "LIMIT", "1", "3"],
        &["SORT_RO", "{fz}list", "BY", "nosort", "DESC", "GET", "#"],
    ]);
}

/// SORT BY a pattern without ALPHA is deterministic even under LIMIT and on a set (whose own
/// order is the hash table's): equal or missing weights fall back to the elements' bytes.
/// The fuzzer compares it byte for byte; only BY ... ALPHA ties and unsorted sets are
/// compared as far as Redis defines them (`difffuzz::policy::SortOptions`).
#[test]
fn sort_by_numeric_pattern_breaks_ties_by_element() {
    let mut d = Differential::start();
    d.check_all(&[
        &["SADD", "{fz}s", "3", "1", "2", "10", "01", "-1", "b", "a"],
        &[
            "MSET", "{fz}w_1", "5", "{fz}w_2", "5", "{fz}w_3", "-1", "{fz}w_b", "5",
        ],
        &["SORT", "{fz}s", "BY", "{fz}w_*", "LIMIT", "0", "3"],
        &["SORT", "{fz}s", "BY", "{fz}w_*", "LIMIT", "2", "4", "DESC"],
        &[
            "SORT_RO", "{fz}s", "BY", "{fz}w_*", "LIMIT", "1", "5", "GET", "#", "GET", "{fz}w_*",
        ],
        &["SORT", "{fz}s", "BY", "{fz}w_*", "STORE", "{fz}d"],
        &["LRANGE", "{fz}d", "0", "-1"],
    ]);
}

/// PUBLISH and SPUBLISH are `may_replicate` in Redis 7.0 (a flag COMMAND INFO hides), so a
/// read-only script refuses them as writes; a script that may write publishes.
#[test]
fn read_only_scripts_refuse_publish() {
    let mut d = Differential::start();
    d.check_all(&[
        &["EVAL_RO", "return redis.pcall('PUBLISH', 'ch', 'm')", "0"],
        &["EVAL_RO", "return redis.pcall('SPUBLISH', 'ch', 'm')", "0"],
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.pcall('PUBLISH', 'ch', 'm')",
            "0",
        ],
        &["EVAL", "return redis.call('PUBLISH', 'ch', 'm')", "0"],
        &["EVAL", "return redis.call('SPUBLISH', 'ch', 'm')", "0"],
    ]);
}
