//! GEO commands compared with a real redis-server, byte for byte, in RESP2 and RESP3:
//! hand-written edge cases (the limits of the coordinate ranges, the antimeridian, the
//! poles' neighbourhood, odd scores written with ZADD, every option and error), the
//! keyspace events and the propagated stream, and random positions and searches.

mod persistence_fixture;

use std::cell::RefCell;

use persistence_fixture::{manifest_files, node_in, redis_in, scratch_dir, AOF_DIR};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::differential::words;
use test_harness::notifications::compare_notifications;
use test_harness::{Differential, RawClient};

/// Palermo and Catania (Redis's documentation) plus points at the edges of the ranges.
const SICILY: &[&str] = &[
    "GEOADD",
    "Sicily",
    "13.361389",
    "38.115556",
    "Palermo",
    "15.087269",
    "37.502669",
    "Catania",
    "12.758489",
    "38.788135",
    "edge1",
    "17.241510",
    "38.788135",
    "edge2",
];

const EDGES: &[&str] = &[
    "GEOADD",
    "edges",
    "180",
    "85.05112878",
    "ne",
    "-180",
    "-85.05112878",
    "sw",
    "0",
    "0",
    "origin",
    "179.99",
    "0",
    "east",
    "-179.99",
    "0.001",
    "west",
    "180",
    "0",
    "date",
    "-180",
    "0",
    "date2",
    "0",
    "85",
    "north",
    "0",
    "-85",
    "south",
    "-0",
    "-0",
    "zero",
];

#[test]
fn geoadd_scores_positions_and_hashes_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        SICILY,
        EDGES,
        &["ZRANGE", "Sicily", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "edges", "0", "-1", "WITHSCORES"],
        &["GEOPOS", "Sicily", "Palermo", "Catania", "nope", "edge1"],
        &[
            "GEOPOS", "edges", "ne", "sw", "origin", "east", "west", "date", "date2", "north",
            "south", "zero",
        ],
        &[
            "GEOHASH", "edges", "ne", "sw", "origin", "east", "west", "date", "north", "zero", "x",
        ],
        &["GEOHASH", "Sicily", "Palermo", "Catania"],
        &["GEOPOS", "missing", "a", "b"],
        &["GEOHASH", "missing", "a"],
        // NX, XX, CH in any order, as ZADD's flags.
        &[
            "GEOADD", "Sicily", "NX", "13", "38", "Palermo", "1", "2", "new",
        ],
        &[
            "GEOADD", "Sicily", "XX", "CH", "13", "38", "Palermo", "1", "2", "other",
        ],
        &["GEOADD", "Sicily", "ch", "xx", "13", "38", "Palermo"],
        &[
            "GEOADD", "Sicily", "CH", "14", "38", "Palermo", "1", "2", "new", "3", "4", "n2",
        ],
        &["GEOADD", "nokey", "XX", "1", "2", "a"],
        &["EXISTS", "nokey"],
        &["ZRANGE", "Sicily", "0", "-1", "WITHSCORES"],
        &["OBJECT", "ENCODING", "Sicily"],
        // Refused arguments.
        &["GEOADD", "Sicily", "NX", "XX", "1", "2", "a"],
        &["GEOADD", "Sicily", "1", "2"],
        &["GEOADD", "Sicily", "1", "2", "a", "3"],
        &["GEOADD", "Sicily", "GT", "1", "2", "a"],
        &["GEOADD", "Sicily", "INCR", "1", "2"],
        &["GEOADD", "Sicily", "CH", "CH", "CH"],
        &["GEOADD", "Sicily", "181", "0", "a"],
        &["GEOADD", "Sicily", "-180.000001", "0", "a"],
        &["GEOADD", "Sicily", "0", "85.05112879", "a"],
        &["GEOADD", "Sicily", "0", "-90", "a"],
        &["GEOADD", "Sicily", "0", "90", "a"],
        &["GEOADD", "Sicily", "1e300", "0", "a"],
        &["GEOADD", "Sicily", "inf", "0", "a"],
        &["GEOADD", "Sicily", "0", "-inf", "a"],
        &["GEOADD", "Sicily", "nan", "0", "a"],
        &["GEOADD", "Sicily", "abc", "0", "a"],
        &["GEOADD", "Sicily", "", "0", "a"],
        &["GEOADD", "Sicily", " 1", "0", "a"],
        &["GEOADD", "Sicily", "1e400", "0", "a"],
        &["GEOADD", "Sicily", "1", "2", "ok", "200", "0", "bad"],
        &["ZSCORE", "Sicily", "ok"],
        &["GEOADD", "Sicily"],
        &["SET", "str", "x"],
        &["GEOADD", "str", "1", "2", "a"],
        &["GEOADD", "str", "1", "200", "a"],
        &["GEOPOS", "str", "a"],
        &["GEOHASH", "str", "a"],
        &["GEODIST", "str", "a", "b"],
    ]);
}

#[test]
fn scores_not_written_by_geoadd_decode_as_in_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &[
            "ZADD",
            "odd",
            "-1",
            "minus",
            "1e300",
            "huge",
            "4503599627370496",
            "p52",
            "9007199254740992",
            "p53",
            "0",
            "zero",
            "0.5",
            "half",
            "-inf",
            "ninf",
            "inf",
            "pinf",
            "-1e19",
            "n19",
            "1e19",
            "p19",
            "2e19",
            "p2e19",
            "123456789.75",
            "frac",
        ],
        &[
            "GEOPOS", "odd", "minus", "huge", "p52", "p53", "zero", "half", "ninf", "pinf", "n19",
            "p19", "p2e19", "frac",
        ],
        &[
            "GEOHASH", "odd", "minus", "huge", "p52", "p53", "zero", "ninf", "pinf", "n19", "p19",
            "p2e19", "frac",
        ],
        &["GEODIST", "odd", "minus", "zero"],
        &["GEODIST", "odd", "p52", "frac", "km"],
        &[
            "GEORADIUSBYMEMBER",
            "odd",
            "zero",
            "100",
            "km",
            "WITHHASH",
            "WITHCOORD",
        ],
        &[
            "GEOSEARCH",
            "odd",
            "FROMMEMBER",
            "frac",
            "BYRADIUS",
            "5000",
            "km",
            "WITHHASH",
        ],
    ]);
}

#[test]
fn geodist_units_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        SICILY,
        EDGES,
        &["GEODIST", "Sicily", "Palermo", "Catania"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "m"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "KM"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "ft"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "Mi"],
        &["GEODIST", "Sicily", "Palermo", "Palermo"],
        &["GEODIST", "Sicily", "Palermo", "nope"],
        &["GEODIST", "missing", "a", "b"],
        &["GEODIST", "missing", "a", "b", "yards"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "yards"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "km", "extra"],
        &["GEODIST", "Sicily", "Palermo"],
        &["GEODIST", "edges", "ne", "sw"],
        &["GEODIST", "edges", "date", "date2"],
        &["GEODIST", "edges", "east", "west", "km"],
        &["GEODIST", "edges", "north", "south", "mi"],
        &["GEODIST", "edges", "origin", "zero"],
    ]);
}

#[test]
fn georadius_family_matches_redis() {
    let mut d = Differential::start();
    let r = |extra: &[&'static str]| {
        let mut c = vec!["GEORADIUS", "Sicily", "15", "37", "200", "km"];
        c.extend_from_slice(extra);
        c
    };
    let commands: Vec<Vec<&str>> = vec![
        SICILY.to_vec(),
        r(&[]),
        r(&["WITHDIST"]),
        r(&["WITHCOORD"]),
        r(&["WITHHASH"]),
        r(&["WITHDIST", "WITHCOORD", "WITHHASH"]),
        r(&["withhash", "withcoord", "withdist", "ASC"]),
        r(&["DESC", "WITHDIST"]),
        r(&["COUNT", "1"]),
        r(&["COUNT", "1", "DESC"]),
        r(&["COUNT", "1", "ANY"]),
        r(&["COUNT", "2", "ANY", "ASC", "WITHDIST"]),
        r(&["COUNT", "100"]),
        r(&["ASC", "DESC"]),
        r(&["COUNT", "0"]),
        r(&["COUNT", "-1"]),
        r(&["COUNT", "x"]),
        r(&["COUNT"]),
        r(&["ANY"]),
        r(&["STORE"]),
        r(&["WITHDIST", "STORE", "dst"]),
        r(&["STOREDIST", "dst", "WITHCOORD"]),
        r(&["FROMMEMBER", "Palermo"]),
        r(&["BYRADIUS", "1", "km"]),
        r(&["bogus"]),
        vec!["GEORADIUS", "Sicily", "15", "37", "200", "miles"],
        vec!["GEORADIUS", "Sicily", "15", "37", "-1", "km"],
        vec!["GEORADIUS", "Sicily", "15", "37", "x", "km"],
        vec!["GEORADIUS", "Sicily", "15", "37", "inf", "km"],
        vec!["GEORADIUS", "Sicily", "190", "37", "1", "km"],
        vec!["GEORADIUS", "Sicily", "15", "37", "0", "km"],
        vec![
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "KM",
            "STORE",
            "dst",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec!["OBJECT", "ENCODING", "dst"],
        vec![
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "FT",
            "STOREDIST",
            "dst",
        ],
        vec!["EXISTS", "dst"],
        vec![
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "mi",
            "STOREDIST",
            "dst",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec![
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "dst",
            "COUNT",
            "1",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec!["SET", "str", "v"],
        vec![
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "str",
        ],
        vec!["TYPE", "str"],
        vec![
            "GEORADIUS",
            "missing",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "str",
        ],
        vec!["EXISTS", "str"],
        vec!["GEORADIUS", "str", "15", "37", "200", "km"],
        vec!["SET", "str", "v"],
        vec!["GEORADIUS", "str", "15", "37", "200", "km"],
        vec!["GEORADIUS", "str", "x", "37", "200", "km"],
        vec!["GEORADIUS", "missing", "15", "37", "200", "km"],
        vec!["GEORADIUS", "missing", "x", "37", "200", "km"],
        vec![
            "GEORADIUS_RO",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "WITHDIST",
            "ASC",
        ],
        vec![
            "GEORADIUS_RO",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "dst",
        ],
        vec![
            "GEORADIUS_RO",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STOREDIST",
            "dst",
        ],
        vec![
            "GEORADIUSBYMEMBER",
            "Sicily",
            "Palermo",
            "200",
            "km",
            "WITHDIST",
        ],
        vec![
            "GEORADIUSBYMEMBER",
            "Sicily",
            "Palermo",
            "0",
            "m",
            "WITHDIST",
        ],
        vec!["GEORADIUSBYMEMBER", "Sicily", "nope", "200", "km"],
        vec!["GEORADIUSBYMEMBER", "Sicily", "nope", "-200", "km"],
        vec!["GEORADIUSBYMEMBER", "Sicily", "Palermo", "-200", "km"],
        vec![
            "GEORADIUSBYMEMBER",
            "missing",
            "nope",
            "-200",
            "parsecs",
            "COUNT",
            "1",
        ],
        vec![
            "GEORADIUSBYMEMBER",
            "missing",
            "nope",
            "1",
            "km",
            "COUNT",
            "0",
        ],
        vec!["GEORADIUSBYMEMBER", "missing", "nope", "1", "km", "ANY"],
        vec![
            "GEORADIUSBYMEMBER",
            "Sicily",
            "Palermo",
            "300",
            "km",
            "STORE",
            "dst",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec![
            "GEORADIUSBYMEMBER",
            "missing",
            "Palermo",
            "300",
            "km",
            "STORE",
            "dst",
        ],
        vec!["EXISTS", "dst"],
        vec![
            "GEORADIUSBYMEMBER_RO",
            "Sicily",
            "Catania",
            "100",
            "mi",
            "WITHCOORD",
            "DESC",
        ],
        vec![
            "GEORADIUSBYMEMBER_RO",
            "Sicily",
            "Catania",
            "100",
            "mi",
            "STORE",
            "x",
        ],
    ];
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    d.check_both_protocols(&commands);
}

#[test]
fn geosearch_and_geosearchstore_match_redis() {
    let mut d = Differential::start();
    let s = |extra: &[&'static str]| {
        let mut c = vec!["GEOSEARCH", "Sicily"];
        c.extend_from_slice(extra);
        c
    };
    let commands: Vec<Vec<&str>> = vec![
        SICILY.to_vec(),
        s(&["FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYBOX",
            "400",
            "400",
            "km",
            "ASC",
            "WITHCOORD",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYBOX",
            "400",
            "400",
            "km",
            "WITHDIST",
            "WITHHASH",
        ]),
        s(&[
            "FROMMEMBER",
            "Palermo",
            "BYBOX",
            "200",
            "100",
            "mi",
            "DESC",
            "WITHDIST",
        ]),
        s(&["FROMMEMBER", "Palermo", "BYRADIUS", "0", "km", "WITHDIST"]),
        s(&["FROMMEMBER", "Palermo", "BYBOX", "0", "0", "km"]),
        s(&[
            "BYRADIUS",
            "200",
            "km",
            "FROMMEMBER",
            "Catania",
            "COUNT",
            "2",
            "ANY",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "500",
            "km",
            "COUNT",
            "3",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "500",
            "km",
            "COUNT",
            "3",
            "ANY",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "500",
            "km",
            "COUNT",
            "3",
            "ANY",
            "DESC",
        ]),
        // Repeated and conflicting options.
        s(&[
            "FROMMEMBER",
            "Palermo",
            "FROMMEMBER",
            "Catania",
            "BYRADIUS",
            "1",
            "m",
        ]),
        s(&[
            "FROMMEMBER",
            "Palermo",
            "FROMLONLAT",
            "1",
            "1",
            "BYRADIUS",
            "1",
            "m",
        ]),
        s(&[
            "FROMLONLAT",
            "1",
            "1",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "m",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "1",
            "m",
            "BYBOX",
            "1",
            "1",
            "m",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYBOX",
            "1",
            "1",
            "m",
            "BYRADIUS",
            "1",
            "m",
        ]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "1",
            "km",
            "BYRADIUS",
            "300",
            "km",
        ]),
        // Errors.
        s(&["FROMLONLAT", "15", "37"]),
        s(&["BYRADIUS", "15", "km"]),
        s(&["FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "ANY"]),
        s(&[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "1",
            "km",
            "STORE",
            "x",
        ]),
        s(&["FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STOREDIST"]),
        s(&["FROMLONLAT", "15", "37", "BYRADIUS", "1", "parsec"]),
        s(&["FROMLONLAT", "15", "37", "BYBOX", "1", "1", "parsec"]),
        s(&["FROMLONLAT", "15", "37", "BYBOX", "x", "y", "km"]),
        s(&["FROMLONLAT", "15", "37", "BYBOX", "1", "y", "km"]),
        s(&["FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km"]),
        s(&["FROMLONLAT", "15", "37", "BYBOX", "1", "-1", "km"]),
        s(&["FROMLONLAT", "15", "37", "BYBOX", "1", "1"]),
        s(&["FROMLONLAT", "15", "99", "BYBOX", "1", "1", "km"]),
        s(&["FROMLONLAT", "x", "37", "BYBOX", "1", "1", "km"]),
        s(&["FROMLONLAT", "15", "BYBOX", "1", "1", "km"]),
        s(&["FROMMEMBER", "nope", "BYBOX", "1", "1", "km"]),
        s(&["FROMMEMBER"]),
        vec!["geosearch", "Sicily", "BYBOX", "1", "1", "km"],
        vec!["GeoSearch", "Sicily", "FROMMEMBER", "Palermo"],
        vec![
            "GEOSEARCH",
            "missing",
            "FROMMEMBER",
            "nope",
            "BYRADIUS",
            "1",
            "km",
        ],
        vec!["GEOSEARCH", "missing", "FROMMEMBER", "nope"],
        vec!["SET", "str", "v"],
        vec!["GEOSEARCH", "str", "FROMMEMBER", "nope"],
        // GEOSEARCHSTORE.
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYBOX",
            "400",
            "400",
            "km",
            "ASC",
            "COUNT",
            "3",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYBOX",
            "400",
            "400",
            "km",
            "ASC",
            "COUNT",
            "3",
            "STOREDIST",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec![
            "GEOSEARCHSTORE",
            "str",
            "Sicily",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "m",
            "storedist",
        ],
        vec!["ZRANGE", "str", "0", "-1", "WITHSCORES"],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "1",
            "m",
        ],
        vec!["EXISTS", "dst"],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "1",
            "m",
        ],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMMEMBER",
            "x",
            "BYRADIUS",
            "1",
            "m",
        ],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMLONLAT",
            "0",
            "0",
            "WITHDIST",
        ],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMLONLAT",
            "0",
            "0",
            "STORE",
            "x",
        ],
        vec!["SET", "str", "v"],
        vec![
            "GEOSEARCHSTORE",
            "str",
            "missing",
            "FROMMEMBER",
            "x",
            "BYRADIUS",
            "1",
            "m",
        ],
        vec!["EXISTS", "str"],
        vec!["SET", "str", "v"],
        vec![
            "GEOSEARCHSTORE",
            "dst",
            "str",
            "FROMMEMBER",
            "x",
            "BYRADIUS",
            "1",
            "m",
        ],
        vec!["geosearchstore", "dst", "Sicily", "BYRADIUS", "1", "m"],
    ];
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    d.check_both_protocols(&commands);
}

#[test]
fn searches_near_the_antimeridian_and_the_poles_match_redis() {
    let mut d = Differential::start();
    let mut commands: Vec<Vec<String>> = vec![words(&[
        "GEOADD", "w", "179.95", "0", "a", "-179.95", "0", "b", "179.5", "0.3", "c", "-179.5",
        "-0.3", "d", "180", "0", "e", "-180", "0", "f", "0", "84.9", "n1", "90", "84.9", "n2",
        "-90", "85", "n3", "180", "85.05", "n4", "0", "-84.9", "s1", "179.99", "-85", "s2",
    ])];
    for (lon, lat) in [
        ("179.9", "0"),
        ("-179.9", "0"),
        ("180", "0"),
        ("-180", "0"),
        ("0", "85"),
        ("180", "85.05"),
        ("0", "-85"),
        ("179.99", "-84.99"),
    ] {
        for by in [
            &["BYRADIUS", "50", "km"][..],
            &["BYRADIUS", "100", "km"],
            &["BYRADIUS", "2000", "km"],
            &["BYRADIUS", "20000", "km"],
            &["BYBOX", "100", "100", "km"],
            &["BYBOX", "200", "20", "km"],
            &["BYBOX", "5000", "500", "km"],
            &["BYBOX", "40000", "40000", "km"],
        ] {
            for tail in [&["WITHDIST"][..], &["ASC", "WITHCOORD"]] {
                let mut c = words(&["GEOSEARCH", "w", "FROMLONLAT", lon, lat]);
                c.extend(words(by));
                c.extend(words(tail));
                commands.push(c);
            }
        }
    }
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["FLUSHALL"]);
        for command in &commands {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            d.check_bytes(&args);
        }
    }
}

/// Members at the same position have equal distances: Redis's sorts (glibc's merge sort
/// for all results, its own partial quicksort under COUNT) put them in their own orders.
#[test]
fn equal_distances_are_ordered_as_redis_orders_them() {
    let mut d = Differential::start();
    let mut add = words(&["GEOADD", "t"]);
    for i in 0..70 {
        let (lon, lat) = [("10.5", "20.5"), ("10.6", "20.6"), ("10.4", "20.45")][i % 3];
        add.extend(words(&[lon, lat, &format!("m{i}")]));
    }
    // Found by the property test: 23 results, most at one position, under COUNT 1.
    let mut small = words(&["GEOADD", "u"]);
    for (i, (lon, lat)) in [
        ("0", "42.525565"),
        ("0", "0"),
        ("0", "14.805261"),
        ("0", "30.108273"),
        ("2.3522", "48.8566"),
        ("-12.141647", "16.855731"),
        ("-21.089051", "20.367352"),
    ]
    .into_iter()
    .chain(std::iter::repeat_n(("2.35", "48.85"), 16))
    .enumerate()
    {
        small.extend(words(&[lon, lat, &format!("m{i}")]));
    }
    let mut commands = vec![add, small];
    for count in ["1", "2", "5", "22"] {
        for sort in ["ASC", "DESC"] {
            commands.push(words(&[
                "GEOSEARCH",
                "u",
                "FROMLONLAT",
                "2.35",
                "48.85",
                "BYRADIUS",
                "3793.5",
                "km",
                "COUNT",
                count,
                sort,
            ]));
        }
    }
    for sort in ["ASC", "DESC"] {
        commands.push(words(&[
            "GEOSEARCH",
            "t",
            "FROMLONLAT",
            "10.5",
            "20.5",
            "BYRADIUS",
            "100",
            "km",
            sort,
        ]));
        for count in [1, 2, 3, 6, 7, 8, 9, 16, 23, 24, 25, 41, 47, 69, 70, 71] {
            commands.push(words(&[
                "GEOSEARCH",
                "t",
                "FROMLONLAT",
                "10.5",
                "20.5",
                "BYRADIUS",
                "100",
                "km",
                sort,
                "COUNT",
                &count.to_string(),
                "WITHDIST",
            ]));
            commands.push(words(&[
                "GEORADIUS",
                "t",
                "10.55",
                "20.55",
                "50",
                "km",
                sort,
                "COUNT",
                &count.to_string(),
            ]));
        }
    }
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["FLUSHALL"]);
        for command in &commands {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            d.check_bytes(&args);
        }
    }
}

#[test]
fn geo_commands_publish_what_redis_publishes() {
    let d = Differential::start();
    let commands: &[&[&str]] = &[
        SICILY,
        &["GEOADD", "Sicily", "13.361389", "38.115556", "Palermo"],
        &["GEOADD", "Sicily", "XX", "1", "1", "Palermo"],
        &["GEOADD", "Sicily", "NX", "1", "1", "Palermo"],
        &[
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "dst",
        ],
        &[
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STOREDIST",
            "dst",
        ],
        &["GEORADIUS", "Sicily", "0", "0", "1", "km", "STORE", "dst"],
        &["GEORADIUS", "Sicily", "0", "0", "1", "km", "STORE", "dst"],
        &[
            "GEOSEARCHSTORE",
            "d2",
            "Sicily",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "km",
        ],
        &[
            "GEOSEARCHSTORE",
            "d2",
            "missing",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "km",
        ],
        &[
            "GEOSEARCH",
            "Sicily",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "km",
        ],
    ];
    compare_notifications(&d, "KEA", false, commands);
    compare_notifications(&d, "KEAn", true, commands);
    compare_notifications(&d, "Kz", false, commands);
}

/// GEOADD is written to the AOF as the ZADD it ran, the STORE forms as they were sent.
#[test]
fn geo_writes_are_propagated_as_redis_propagates_them() {
    let script: &[&[&str]] = &[
        SICILY,
        &[
            "GEOADD", "Sicily", "CH", "XX", "13", "38", "Palermo", "1", "2", "nope",
        ],
        &["GEOADD", "Sicily", "NX", "13", "38", "Palermo"],
        &[
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "dst",
        ],
        &["GEORADIUS", "Sicily", "15", "37", "1", "m", "STORE", "dst"],
        &["GEORADIUS", "Sicily", "15", "37", "1", "m", "STORE", "dst"],
        &[
            "GEOSEARCHSTORE",
            "d2",
            "Sicily",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "km",
        ],
        &[
            "GEOSEARCH",
            "Sicily",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "km",
        ],
    ];
    let node_dir = scratch_dir("geo-n");
    let redis_dir = scratch_dir("geo-r");
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let node = node_in(&node_dir, &aof);
    let redis = redis_in(&redis_dir, &aof);
    for port in [node.port, redis.port] {
        let mut c = RawClient::connect(port);
        for command in script {
            c.call(command);
        }
    }
    let incr = |dir: &std::path::Path| {
        let (name, _) = manifest_files(dir)
            .into_iter()
            .rev()
            .find(|(_, kind)| kind == "i")
            .expect("an incremental file");
        std::fs::read(dir.join(AOF_DIR).join(name)).unwrap()
    };
    let (node_log, redis_log) = (incr(&node_dir), incr(&redis_dir));
    assert!(
        node_log == redis_log,
        "the node logged\n{}\nredis-server logged\n{}",
        String::from_utf8_lossy(&node_log).replace("\r\n", " "),
        String::from_utf8_lossy(&redis_log).replace("\r\n", " ")
    );
}

// Random positions and searches.

/// A coordinate with six decimals in `[-limit, limit]`.
fn coordinate(limit: f64) -> impl Strategy<Value = String> {
    let micro = (limit * 1e6) as i64;
    (-micro..=micro).prop_map(|m| format!("{:.6}", m as f64 / 1e6))
}

/// Anywhere, or one of a few nearby positions (so members share positions and searches
/// of any size find several, some at equal distances).
fn position() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        (coordinate(180.0), coordinate(85.05)),
        prop::sample::select(&[("2.35", "48.85"), ("2.36", "48.86"), ("2.3522", "48.8566")][..])
            .prop_map(|(lon, lat)| (lon.to_string(), lat.to_string())),
    ]
}

/// A search size in the given unit: from a few meters to a hemisphere.
fn size() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..1000).prop_map(|n| n.to_string()),
        (0u32..20_000).prop_map(|n| format!("{}.5", n)),
        Just("0".to_string()),
    ]
}

fn unit() -> impl Strategy<Value = String> {
    prop::sample::select(&["m", "km", "ft", "mi", "KM"][..]).prop_map(String::from)
}

fn options() -> impl Strategy<Value = Vec<String>> {
    (
        prop::sample::select(&["", "ASC", "DESC"][..]),
        prop::option::of((1u32..50, any::<bool>())),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(sort, count, dist, hash, coord)| {
            let mut o = Vec::new();
            if !sort.is_empty() {
                o.push(sort.to_string());
            }
            if let Some((n, any)) = count {
                o.extend(["COUNT".to_string(), n.to_string()]);
                if any {
                    o.push("ANY".into());
                }
            }
            for (on, name) in [(dist, "WITHDIST"), (hash, "WITHHASH"), (coord, "WITHCOORD")] {
                if on {
                    o.push(name.into());
                }
            }
            o
        })
}

fn search() -> impl Strategy<Value = Vec<String>> {
    let from = prop_oneof![
        position().prop_map(|(lon, lat)| vec!["FROMLONLAT".to_string(), lon, lat]),
        (0usize..60).prop_map(|i| vec!["FROMMEMBER".to_string(), format!("m{i}")]),
    ];
    let by = prop_oneof![
        (size(), unit()).prop_map(|(r, u)| vec!["BYRADIUS".to_string(), r, u]),
        (size(), size(), unit()).prop_map(|(w, h, u)| vec!["BYBOX".to_string(), w, h, u]),
    ];
    (from, by, options()).prop_map(|(from, by, options)| {
        let mut c = words(&["GEOSEARCH", "g"]);
        c.extend(from);
        c.extend(by);
        c.extend(options);
        c
    })
}

/// GEOSEARCHSTORE or GEORADIUS ... STORE|STOREDIST into `dst` (sometimes a string).
fn store_search() -> impl Strategy<Value = Vec<String>> {
    (search(), any::<bool>(), any::<bool>()).prop_map(|(search, dist, radius)| {
        // The WITH* options are refused with STORE: keep them out of most commands.
        let keep = |a: &String| !a.starts_with("WITH");
        let mut c = if radius {
            let mut c = words(&["GEORADIUS", "g", "2.35", "48.85", "500", "km"]);
            c.extend(
                search[2..]
                    .iter()
                    .filter(|a| keep(a))
                    .skip_while(|a| !matches!(a.as_str(), "ASC" | "DESC" | "COUNT"))
                    .cloned(),
            );
            c.extend(words(&[if dist { "STOREDIST" } else { "STORE" }, "dst"]));
            c
        } else {
            let mut c = words(&["GEOSEARCHSTORE", "dst"]);
            c.extend(search[1..].iter().filter(|a| keep(a)).cloned());
            if dist {
                c.push("STOREDIST".into());
            }
            c
        };
        if search.len() % 5 == 0 {
            c.push("WITHDIST".into());
        }
        c
    })
}

fn radius_search() -> impl Strategy<Value = Vec<String>> {
    (position(), size(), unit(), options()).prop_map(|((lon, lat), r, u, options)| {
        let mut c = words(&["GEORADIUS", "g", &lon, &lat, &r, &u]);
        c.extend(options);
        c
    })
}

/// Up to 60 members `m0`..`m59` at random positions, then searches and distances over them.
fn case() -> impl Strategy<Value = (Vec<(String, String)>, Vec<Vec<String>>)> {
    let query = prop_oneof![
        4 => search(),
        2 => radius_search(),
        2 => store_search(),
        1 => Just(words(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"])),
        1 => Just(words(&["SET", "dst", "string"])),
        1 => (0usize..20, 0usize..20, unit())
            .prop_map(|(a, b, u)| words(&["GEODIST", "g", &format!("m{a}"), &format!("m{b}"), &u])),
        1 => (0usize..20).prop_map(|i| words(&["GEOPOS", "g", &format!("m{i}")])),
        1 => (0usize..20).prop_map(|i| words(&["GEOHASH", "g", &format!("m{i}")])),
    ];
    (
        prop::collection::vec(position(), 1..60),
        prop::collection::vec(query, 1..12),
    )
}

#[test]
fn random_positions_and_searches_match_redis() {
    let d = RefCell::new(Differential::start());
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&(case(), any::<bool>()), |((points, queries), resp3)| {
            let mut d = d.borrow_mut();
            d.set_resp3(resp3);
            d.compare(&words(&["FLUSHALL"]))
                .map_err(TestCaseError::fail)?;
            let mut add = words(&["GEOADD", "g"]);
            for (i, (lon, lat)) in points.iter().enumerate() {
                add.extend([lon.clone(), lat.clone(), format!("m{i}")]);
            }
            d.compare(&add).map_err(TestCaseError::fail)?;
            for query in &queries {
                d.compare(query).map_err(TestCaseError::fail)?;
            }
            Ok(())
        })
        .unwrap();
}
