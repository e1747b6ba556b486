//! ZRANGE and friends: ranks, score bounds and lex bounds at their edges, compared with a
//! real redis-server byte for byte, for small (listpack) and big (skiplist) sorted sets.

use test_harness::Differential;

fn load_scores(d: &mut Differential, key: &str, count: usize) {
    let mut args = vec!["ZADD".to_string(), key.to_string()];
    for i in 0..count {
        args.push(format!("{}", (i as f64) / 2.0 - 3.0));
        args.push(format!("m{i:03}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    d.check(&args);
}

const RANK_CASES: &[&[&str]] = &[
    &["ZRANGE", "z", "0", "-1"],
    &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    &["ZRANGE", "z", "-3", "-1", "WITHSCORES"],
    &["ZRANGE", "z", "-100", "2"],
    &["ZRANGE", "z", "5", "2"],
    &["ZRANGE", "z", "1000", "2000"],
    &["ZRANGE", "z", "2", "1000"],
    &["ZRANGE", "z", "0", "-1000"],
    &["ZRANGE", "z", "-9223372036854775808", "9223372036854775807"],
    &["ZRANGE", "z", "0", "-1", "REV"],
    &["ZRANGE", "z", "1", "3", "REV", "WITHSCORES"],
    &["ZREVRANGE", "z", "0", "2", "WITHSCORES"],
    &["ZREVRANGE", "z", "-2", "-1"],
    &["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"],
    &["ZRANGE", "z", "0", "1", "LIMIT", "0", "-1"],
    &["ZRANGE", "z", "a", "1"],
    &["ZRANGE", "z", "0", "1", "FOO"],
    &["ZREVRANGE", "z", "0", "1", "REV"],
    &["ZRANGE", "missing", "0", "-1"],
    &["ZRANGE", "missing", "0", "-1", "REV"],
    &["ZRANGE", "z", "0", "1", "WITHSCORES", "WITHSCORES"],
];

const SCORE_CASES: &[&[&str]] = &[
    &["ZRANGEBYSCORE", "z", "-inf", "+inf"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"],
    &["ZRANGEBYSCORE", "z", "(-1", "1", "WITHSCORES"],
    &["ZRANGEBYSCORE", "z", "-1", "(1"],
    &["ZRANGEBYSCORE", "z", "(-1", "(-1"],
    &["ZRANGEBYSCORE", "z", "-1", "-1"],
    &["ZRANGEBYSCORE", "z", "1", "-1"],
    &["ZRANGEBYSCORE", "z", "", ""],
    &["ZRANGEBYSCORE", "z", " 1", "  2"],
    &["ZRANGEBYSCORE", "z", "(", "(2"],
    &["ZRANGEBYSCORE", "z", "-INF", "Infinity"],
    &["ZRANGEBYSCORE", "z", "1e400", "inf"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "2", "3"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "2", "-1"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "3"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1000", "3"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "0"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1"],
    &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "x", "1"],
    &["ZRANGEBYSCORE", "z", "nan", "1"],
    &["ZRANGEBYSCORE", "z", "1", "x"],
    &["ZRANGEBYSCORE", "z", "((1", "2"],
    &["ZRANGEBYSCORE", "z", "1 ", "2"],
    &["ZRANGEBYSCORE", "z", "0", "1", "REV"],
    &["ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES"],
    &["ZREVRANGEBYSCORE", "z", "(1", "-1"],
    &["ZREVRANGEBYSCORE", "z", "-1", "1"],
    &[
        "ZREVRANGEBYSCORE",
        "z",
        "+inf",
        "-inf",
        "LIMIT",
        "1",
        "2",
        "WITHSCORES",
    ],
    &["ZRANGE", "z", "(0", "2", "BYSCORE", "WITHSCORES"],
    &["ZRANGE", "z", "2", "(0", "BYSCORE", "REV", "WITHSCORES"],
    &["ZRANGE", "z", "-inf", "inf", "BYSCORE", "LIMIT", "1", "2"],
    &[
        "ZRANGE", "z", "-inf", "inf", "BYSCORE", "REV", "LIMIT", "1", "2",
    ],
    &["ZRANGE", "z", "-inf", "inf", "BYSCORE", "BYLEX"],
    &["ZRANGE", "z", "-inf", "inf", "BYSCORE", "BYSCORE"],
    &["ZRANGE", "missing", "-inf", "inf", "BYSCORE"],
    &["ZRANGE", "missing", "x", "inf", "BYSCORE"],
    &["ZCOUNT", "z", "-inf", "+inf"],
    &["ZCOUNT", "z", "(0", "(2"],
    &["ZCOUNT", "z", "2", "0"],
    &["ZCOUNT", "z", "x", "0"],
    &["ZCOUNT", "missing", "0", "1"],
];

#[test]
fn rank_ranges_match_redis() {
    let mut d = Differential::start();
    for size in [7, 300] {
        for resp3 in [false, true] {
            d.set_resp3(resp3);
            d.check(&["FLUSHALL"]);
            load_scores(&mut d, "z", size);
            d.check_all(RANK_CASES);
        }
    }
}

#[test]
fn score_ranges_match_redis() {
    let mut d = Differential::start();
    for size in [9, 300] {
        for resp3 in [false, true] {
            d.set_resp3(resp3);
            d.check(&["FLUSHALL"]);
            load_scores(&mut d, "z", size);
            d.check(&[
                "ZADD", "z", "-inf", "bottom", "inf", "top", "1", "tie-a", "1", "tie-b",
            ]);
            d.check_all(SCORE_CASES);
        }
    }
}

const LEX_CASES: &[&[&str]] = &[
    &["ZRANGEBYLEX", "z", "-", "+"],
    &["ZRANGEBYLEX", "z", "[b", "[d"],
    &["ZRANGEBYLEX", "z", "(b", "(d"],
    &["ZRANGEBYLEX", "z", "[b", "(b"],
    &["ZRANGEBYLEX", "z", "[b", "[b"],
    &["ZRANGEBYLEX", "z", "(b", "[b"],
    &["ZRANGEBYLEX", "z", "[d", "[b"],
    &["ZRANGEBYLEX", "z", "+", "-"],
    &["ZRANGEBYLEX", "z", "-", "-"],
    &["ZRANGEBYLEX", "z", "+", "+"],
    &["ZRANGEBYLEX", "z", "[", "(c"],
    &["ZRANGEBYLEX", "z", "(", "+"],
    &["ZRANGEBYLEX", "z", "[bb", "+"],
    &["ZRANGEBYLEX", "z", "-", "+", "LIMIT", "1", "2"],
    &["ZRANGEBYLEX", "z", "-", "+", "LIMIT", "-1", "2"],
    &["ZRANGEBYLEX", "z", "-", "+", "LIMIT", "1", "-5"],
    &["ZRANGEBYLEX", "z", "b", "+"],
    &["ZRANGEBYLEX", "z", "-x", "+"],
    &["ZRANGEBYLEX", "z", "[a", "+x"],
    &["ZRANGEBYLEX", "z", "", "+"],
    &["ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"],
    &["ZREVRANGEBYLEX", "z", "+", "-"],
    &["ZREVRANGEBYLEX", "z", "[d", "(a"],
    &["ZREVRANGEBYLEX", "z", "(a", "[d"],
    &["ZREVRANGEBYLEX", "z", "+", "-", "LIMIT", "1", "2"],
    &["ZRANGE", "z", "[b", "[d", "BYLEX"],
    &["ZRANGE", "z", "[d", "[b", "BYLEX", "REV"],
    &["ZRANGE", "z", "[d", "[b", "BYLEX", "REV", "LIMIT", "1", "1"],
    &["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"],
    &["ZRANGE", "missing", "-", "+", "BYLEX"],
    &["ZLEXCOUNT", "z", "-", "+"],
    &["ZLEXCOUNT", "z", "(b", "[d"],
    &["ZLEXCOUNT", "z", "[d", "[b"],
    &["ZLEXCOUNT", "z", "b", "[d"],
    &["ZLEXCOUNT", "missing", "-", "+"],
];

#[test]
fn lex_ranges_match_redis() {
    let mut d = Differential::start();
    let mut big = vec!["ZADD".to_string(), "z".to_string()];
    for i in 0..200 {
        big.push("0".into());
        big.push(format!("zz{i:03}"));
    }
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    for load_big in [false, true] {
        for resp3 in [false, true] {
            d.set_resp3(resp3);
            d.check(&["FLUSHALL"]);
            d.check(&[
                "ZADD", "z", "0", "a", "0", "b", "0", "bb", "0", "c", "0", "d", "0", "e",
            ]);
            if load_big {
                d.check(&big);
            }
            d.check_all(LEX_CASES);
        }
    }
    // Mixed scores in a listpack: Redis scans from the ends, and so does the node.
    d.check(&["FLUSHALL"]);
    d.check(&["ZADD", "m", "1", "a", "0", "z", "2", "b", "3", "c"]);
    for args in [
        &["ZRANGEBYLEX", "m", "[b", "+"][..],
        &["ZRANGEBYLEX", "m", "-", "[c"],
        &["ZREVRANGEBYLEX", "m", "[c", "-"],
        &["ZREVRANGEBYLEX", "m", "+", "[b"],
        &["ZLEXCOUNT", "m", "[a", "[z"],
        &["ZREMRANGEBYLEX", "m", "[a", "[b"],
        &["ZRANGE", "m", "0", "-1"],
    ] {
        d.check(args);
    }
}

#[test]
fn range_removals_and_stores_match_redis() {
    let mut d = Differential::start();
    for size in [10, 300] {
        for resp3 in [false, true] {
            d.set_resp3(resp3);
            d.check(&["FLUSHALL"]);
            d.check_all(&[
                &["ZREMRANGEBYRANK", "z", "0", "1"],
                &["ZREMRANGEBYRANK", "z", "x", "1"],
                &["ZREMRANGEBYSCORE", "z", "x", "1"],
                &["ZREMRANGEBYLEX", "z", "x", "+"],
            ]);
            load_scores(&mut d, "z", size);
            d.check_all(&[
                &["ZRANGESTORE", "dst", "z", "0", "2"],
                &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
                &[
                    "ZRANGESTORE",
                    "dst",
                    "z",
                    "(0",
                    "+inf",
                    "BYSCORE",
                    "LIMIT",
                    "1",
                    "3",
                ],
                &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
                &["ZRANGESTORE", "dst", "z", "+inf", "-inf", "BYSCORE", "REV"],
                &["ZCARD", "dst"],
                &["ZRANGESTORE", "dst", "z", "[m001", "[m004", "BYLEX"],
                &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
                &["ZRANGESTORE", "dst", "z", "5", "1"],
                &["EXISTS", "dst"],
                &["ZRANGESTORE", "dst", "missing", "0", "-1"],
                &["ZRANGESTORE", "dst", "z", "0", "1", "WITHSCORES"],
                &["ZRANGESTORE", "dst", "z", "0", "1", "LIMIT", "0", "1"],
                &["SET", "str", "x"],
                &["ZRANGESTORE", "dst", "str", "0", "1"],
                &["ZRANGESTORE", "str", "z", "0", "1"],
                &["TYPE", "str"],
                &["ZREMRANGEBYRANK", "z", "-2", "-1"],
                &["ZREMRANGEBYRANK", "z", "5", "2"],
                &["ZREMRANGEBYRANK", "z", "1000", "2000"],
                &["ZREMRANGEBYSCORE", "z", "(-1", "0"],
                &["ZREMRANGEBYSCORE", "z", "5", "1"],
                &["ZREMRANGEBYLEX", "z", "[m005", "(m007"],
                &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
                &["ZREMRANGEBYSCORE", "str", "0", "1"],
                &["ZREMRANGEBYRANK", "z", "0", "-1"],
                &["EXISTS", "z"],
            ]);
        }
    }
}
