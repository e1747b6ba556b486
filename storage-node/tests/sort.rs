//! SORT and SORT_RO over sets and sorted sets, compared with a real redis-server byte for
//! byte. (Lists, `->field` hash lookups and STORE depend on the list and hash types; their
//! cases are added when those types are merged.)

use test_harness::Differential;

#[test]
fn sort_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        // SORT converts a listpack sorted set to skiplist, as Redis 7.0 does.
        &["ZADD", "zconv", "-1", "1", "0", "3"],
        &["OBJECT", "ENCODING", "zconv"],
        &["SORT", "zconv"],
        &["OBJECT", "ENCODING", "zconv"],
        &["SADD", "nums", "10", "3", "-2", "7", "100"],
        &["SADD", "words", "pear", "apple", "fig", "banana"],
        &["SADD", "floats", "1.5", "  2", "-0.5", "1e2", ""],
        &["ZADD", "z", "3", "c", "1", "a", "2", "b", "0", "10"],
        &["SORT", "nums"],
        &["SORT", "nums", "DESC"],
        &["SORT", "nums", "ASC", "LIMIT", "1", "2"],
        &["SORT", "nums", "LIMIT", "0", "-1"],
        &["SORT", "nums", "LIMIT", "-5", "2"],
        &["SORT", "nums", "LIMIT", "3", "100"],
        &["SORT", "nums", "LIMIT", "100", "1"],
        &["SORT", "nums", "LIMIT", "1", "0"],
        &["SORT", "nums", "LIMIT", "x", "1"],
        &["SORT", "nums", "LIMIT", "1"],
        &["SORT", "words"],
        &["SORT", "words", "ALPHA"],
        &["SORT", "words", "ALPHA", "DESC", "LIMIT", "0", "2"],
        &["SORT", "floats"],
        &["SORT", "z"],
        &["SORT", "z", "ALPHA", "DESC"],
        &["SORT", "z", "BY", "nosort"],
        &["SORT", "z", "BY", "nosort", "DESC"],
        &["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"],
        &["SORT", "nums", "BY", "nosort"],
        &["SORT", "missing"],
        &["SORT", "missing", "BY", "w_*"],
        // BY and GET through string keys.
        &[
            "MSET", "w_10", "3", "w_3", "1", "w_-2", "2", "w_7", "9", "w_100", "0",
        ],
        &[
            "MSET", "name_10", "ten", "name_3", "three", "name_7", "seven",
        ],
        &["SORT", "nums", "BY", "w_*"],
        &["SORT", "nums", "BY", "w_*", "DESC"],
        &["SORT", "nums", "BY", "w_*", "GET", "name_*"],
        &[
            "SORT", "nums", "BY", "w_*", "GET", "#", "GET", "name_*", "GET", "nokey",
        ],
        &["SORT", "nums", "BY", "missing_*"],
        &["SORT", "nums", "BY", "name_*", "ALPHA"],
        &["SORT", "words", "BY", "w_*"],
        &["SORT", "nums", "GET", "#"],
        &["SORT_RO", "nums", "BY", "w_*", "GET", "name_*"],
        &["SORT_RO", "nums", "STORE", "dst"],
        &["SORT", "words"],
        &["SORT", "nums", "FOO"],
        &["SORT", "nums", "BY"],
        &["SORT", "nums", "GET"],
        &["SET", "str", "x"],
        &["SORT", "str"],
        &["SORT", "str", "FOO"],
        &["SORT_RO", "str"],
        &["SORT", "nums", "BY", "str"],
        &["SORT", "nums", "STORE", "dst", "LIMIT", "100", "1"],
        &["EXISTS", "dst"],
        &["SORT", "missing", "STORE", "dst"],
    ]);
}
