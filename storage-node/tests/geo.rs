//! GEO commands compared with a real redis-server, byte for byte, in RESP2 and RESP3:
//! hand-written edge cases (the limits of the coordinate ranges, the antimeridian, the
//! poles' neighbourhood, odd scores written with ZADD, members at equal distances, every
//! option and error), the keyspace events and the propagated stream. Random positions and
//! searches: `geo_props.rs`.

mod persistence_fixture;

use persistence_fixture::{assert_same_log, node_in, redis_in, scratch_dir};
use test_harness::differential::words;
use test_harness::notifications::compare_notifications;
use test_harness::{Differential, RawClient};

/// Palermo and Catania (Redis's documentation) and two more Sicilian points.
const SICILY: &str = "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania \
    12.758489 38.788135 edge1 17.241510 38.788135 edge2";

/// Points at the limits of the ranges.
const EDGES: &str = "GEOADD edges 180 85.05112878 ne -180 -85.05112878 sw 0 0 origin \
    179.99 0 east -179.99 0.001 west 180 0 date -180 0 date2 0 85 north 0 -85 south \
    -0 -0 zero";

/// A command written as words separated by spaces.
fn line(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

/// Runs commands (each a vector of arguments) on both servers in RESP2, then again in
/// RESP3 after FLUSHALL, asserting identical replies.
fn check_both_protocols(d: &mut Differential, commands: &[Vec<String>]) {
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check(&["FLUSHALL"]);
        for command in commands {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            d.check_bytes(&args);
        }
    }
    d.set_resp3(false);
}

/// [`check_both_protocols`] for commands written as [`line`]s.
fn check_lines(d: &mut Differential, lines: &[&str]) {
    let commands: Vec<Vec<String>> = lines.iter().map(|l| line(l)).collect();
    check_both_protocols(d, &commands);
}

#[test]
fn geoadd_scores_positions_and_hashes_match_redis() {
    let mut d = Differential::start();
    check_lines(
        &mut d,
        &[
            SICILY,
            EDGES,
            "ZRANGE Sicily 0 -1 WITHSCORES",
            "ZRANGE edges 0 -1 WITHSCORES",
            "DUMP Sicily",
            "DUMP edges",
            "GEOPOS Sicily Palermo Catania nope edge1",
            "GEOPOS edges ne sw origin east west date date2 north south zero",
            "GEOHASH edges ne sw origin east west date north zero x",
            "GEOHASH Sicily Palermo Catania",
            "GEOPOS missing a b",
            "GEOHASH missing a",
            // NX, XX, CH in any order, as ZADD's flags.
            "GEOADD Sicily NX 13 38 Palermo 1 2 new",
            "GEOADD Sicily XX CH 13 38 Palermo 1 2 other",
            "GEOADD Sicily ch xx 13 38 Palermo",
            "GEOADD Sicily CH 14 38 Palermo 1 2 new 3 4 n2",
            "GEOADD nokey XX 1 2 a",
            "EXISTS nokey",
            "ZRANGE Sicily 0 -1 WITHSCORES",
            "OBJECT ENCODING Sicily",
            // Refused arguments; nothing is added when one position is bad.
            "GEOADD Sicily NX XX 1 2 a",
            "GEOADD Sicily 1 2",
            "GEOADD Sicily 1 2 a 3",
            "GEOADD Sicily GT 1 2 a",
            "GEOADD Sicily INCR 1 2",
            "GEOADD Sicily CH CH CH",
            "GEOADD Sicily 181 0 a",
            "GEOADD Sicily -180.000001 0 a",
            "GEOADD Sicily 0 85.05112879 a",
            "GEOADD Sicily 0 -90 a",
            "GEOADD Sicily 0 90 a",
            "GEOADD Sicily 1e300 0 a",
            "GEOADD Sicily inf 0 a",
            "GEOADD Sicily 0 -inf a",
            "GEOADD Sicily nan 0 a",
            "GEOADD Sicily abc 0 a",
            "GEOADD Sicily 1e400 0 a",
            "GEOADD Sicily 1 2 ok 200 0 bad",
            "ZSCORE Sicily ok",
            "GEOADD Sicily",
            "SET str x",
            "GEOADD str 1 2 a",
            "GEOADD str 1 200 a",
            "GEOPOS str a",
            "GEOHASH str a",
            "GEODIST str a b",
        ],
    );
    check_both_protocols(
        &mut d,
        &[
            line(SICILY),
            words(&["GEOADD", "Sicily", "", "0", "a"]),
            words(&["GEOADD", "Sicily", " 1", "0", "a"]),
            words(&["GEOADD", "Sicily", "1", "2 ", "a"]),
            // Replies seen by scripts: RESP2, and RESP3 doubles after redis.setresp(3).
            words(&[
                "EVAL",
                "return redis.call('geopos', KEYS[1], 'Palermo')",
                "1",
                "Sicily",
            ]),
            words(&[
                "EVAL",
                "redis.setresp(3); return redis.call('geopos', KEYS[1], 'Palermo', 'x')",
                "1",
                "Sicily",
            ]),
            words(&[
                "EVAL",
                "redis.setresp(3); return redis.call('geosearch', KEYS[1], 'FROMLONLAT', \
                 '15', '37', 'BYRADIUS', '200', 'km', 'WITHCOORD', 'WITHDIST', 'ASC')",
                "1",
                "Sicily",
            ]),
            words(&[
                "EVAL",
                "return redis.call('geodist', KEYS[1], 'Palermo', 'Catania', 'km') .. ''",
                "1",
                "Sicily",
            ]),
            // GEORADIUS may store, so read-only scripts may not call it; the _RO form is fine.
            words(&[
                "EVAL_RO",
                "return redis.call('georadius', KEYS[1], '15', '37', '200', 'km')",
                "1",
                "Sicily",
            ]),
            words(&[
                "EVAL_RO",
                "return redis.call('georadius_ro', KEYS[1], '15', '37', '200', 'km')",
                "1",
                "Sicily",
            ]),
            words(&[
                "EVAL_RO",
                "return redis.call('geosearch', KEYS[1], 'FROMMEMBER', 'Palermo', \
                 'BYRADIUS', '200', 'km', 'ASC')",
                "1",
                "Sicily",
            ]),
        ],
    );
}

#[test]
fn scores_not_written_by_geoadd_decode_as_in_redis() {
    let mut d = Differential::start();
    check_lines(
        &mut d,
        &[
            "ZADD odd -1 minus 1e300 huge 4503599627370496 p52 9007199254740992 p53 0 zero \
             0.5 half -inf ninf inf pinf -1e19 n19 1e19 p19 2e19 p2e19 123456789.75 frac",
            "GEOPOS odd minus huge p52 p53 zero half ninf pinf n19 p19 p2e19 frac",
            "GEOHASH odd minus huge p52 p53 zero ninf pinf n19 p19 p2e19 frac",
            "GEODIST odd minus zero",
            "GEODIST odd p52 frac km",
            "GEORADIUSBYMEMBER odd zero 100 km WITHHASH WITHCOORD",
            "GEOSEARCH odd FROMMEMBER frac BYRADIUS 5000 km WITHHASH",
        ],
    );
}

#[test]
fn geodist_units_and_errors_match_redis() {
    let mut d = Differential::start();
    check_lines(
        &mut d,
        &[
            SICILY,
            EDGES,
            "GEODIST Sicily Palermo Catania",
            "GEODIST Sicily Palermo Catania m",
            "GEODIST Sicily Palermo Catania KM",
            "GEODIST Sicily Palermo Catania ft",
            "GEODIST Sicily Palermo Catania Mi",
            "GEODIST Sicily Palermo Palermo",
            "GEODIST Sicily Palermo nope",
            "GEODIST missing a b",
            "GEODIST missing a b yards",
            "GEODIST Sicily Palermo Catania yards",
            "GEODIST Sicily Palermo Catania km extra",
            "GEODIST Sicily Palermo",
            "GEODIST edges ne sw",
            "GEODIST edges date date2",
            "GEODIST edges east west km",
            "GEODIST edges north south mi",
            "GEODIST edges origin zero",
        ],
    );
}

#[test]
fn georadius_family_matches_redis() {
    let mut d = Differential::start();
    let options = [
        "",
        "WITHDIST",
        "WITHCOORD",
        "WITHHASH",
        "WITHDIST WITHCOORD WITHHASH",
        "withhash withcoord withdist ASC",
        "DESC WITHDIST",
        "COUNT 1",
        "COUNT 1 DESC",
        "COUNT 1 ANY",
        "COUNT 2 ANY ASC WITHDIST",
        "COUNT 100",
        "ASC DESC",
        "COUNT 0",
        "COUNT -1",
        "COUNT x",
        "COUNT",
        "ANY",
        "STORE",
        "WITHDIST STORE dst",
        "STOREDIST dst WITHCOORD",
        "FROMMEMBER Palermo",
        "BYRADIUS 1 km",
        "bogus",
    ];
    // More results than a listpack holds: the stored set is a skiplist.
    let mut many = line("GEOADD many");
    for i in 0..150 {
        many.extend(line(&format!("15.{i:03} 37 m{i}")));
    }
    let mut commands = vec![line(SICILY), many];
    commands.extend(
        [
            "DUMP many",
            "GEORADIUS many 15 37 100 km STORE dst",
            "OBJECT ENCODING dst",
            "GEOSEARCHSTORE dst many FROMLONLAT 15 37 BYRADIUS 100 km COUNT 128 STOREDIST",
            "OBJECT ENCODING dst",
            "ZRANGE dst 0 -1 WITHSCORES",
        ]
        .map(line),
    );
    for o in options {
        commands.push(line(&format!("GEORADIUS Sicily 15 37 200 km {o}")));
        commands.push(line(&format!(
            "GEORADIUSBYMEMBER Sicily Palermo 200 km {o}"
        )));
    }
    commands.extend(
        [
            "GEORADIUS Sicily 15 37 200 miles",
            "GEORADIUS Sicily 15 37 -1 km",
            "GEORADIUS Sicily 15 37 x km",
            "GEORADIUS Sicily 15 37 inf km",
            "GEORADIUS Sicily 190 37 1 km",
            "GEORADIUS Sicily 15 37 0 km",
            "GEORADIUS Sicily 15 37 200 KM STORE dst",
            "ZRANGE dst 0 -1 WITHSCORES",
            "OBJECT ENCODING dst",
            "GEORADIUS Sicily 15 37 200 FT STOREDIST dst",
            "EXISTS dst",
            "GEORADIUS Sicily 15 37 200 mi STOREDIST dst",
            "ZRANGE dst 0 -1 WITHSCORES",
            "GEORADIUS Sicily 15 37 200 km STORE d1 STOREDIST d2",
            "EXISTS d1",
            "ZRANGE d2 0 -1 WITHSCORES",
            "GEORADIUS Sicily 15 37 200 km STORE dst COUNT 1",
            "ZRANGE dst 0 -1 WITHSCORES",
            "SET str v",
            "GEORADIUS Sicily 15 37 200 km STORE str",
            "TYPE str",
            "GEORADIUS missing 15 37 200 km STORE str",
            "EXISTS str",
            "SET str v",
            "GEORADIUS str 15 37 200 km",
            "GEORADIUS str x 37 200 km",
            "GEORADIUS missing 15 37 200 km",
            "GEORADIUS missing x 37 200 km",
            "GEORADIUS_RO Sicily 15 37 200 km WITHDIST ASC",
            "GEORADIUS_RO Sicily 15 37 200 km STORE dst",
            "GEORADIUS_RO Sicily 15 37 200 km STOREDIST dst",
            "GEORADIUSBYMEMBER Sicily Palermo 0 m WITHDIST",
            "GEORADIUSBYMEMBER Sicily nope 200 km",
            "GEORADIUSBYMEMBER Sicily nope -200 km",
            "GEORADIUSBYMEMBER Sicily Palermo -200 km",
            // A missing source: the member and the radius are not even read.
            "GEORADIUSBYMEMBER missing nope -200 parsecs COUNT 1",
            "GEORADIUSBYMEMBER missing nope 1 km COUNT 0",
            "GEORADIUSBYMEMBER missing nope 1 km ANY",
            "GEORADIUSBYMEMBER Sicily Palermo 300 km STORE dst",
            "ZRANGE dst 0 -1 WITHSCORES",
            "GEORADIUSBYMEMBER missing Palermo 300 km STORE dst",
            "EXISTS dst",
            "GEORADIUSBYMEMBER_RO Sicily Catania 100 mi WITHCOORD DESC",
            "GEORADIUSBYMEMBER_RO Sicily Catania 100 mi STORE x",
            // The destination is a key (cluster routing and ACLs depend on it).
            "COMMAND GETKEYS GEORADIUS k 15 37 200 km STORE d",
            "COMMAND GETKEYS GEORADIUS k 15 37 2 km STOREDIST d",
            "COMMAND GETKEYS GEORADIUSBYMEMBER k m 2 km COUNT 1 STORE d",
            "COMMAND GETKEYS GEORADIUS_RO k 15 37 200 km",
            "COMMAND GETKEYS GEORADIUS k 1 2 3 m STORE d STOREDIST e",
            "COMMAND GETKEYS GEORADIUS k 1 2 3 m STORE d STORE e",
            "COMMAND GETKEYS GEORADIUSBYMEMBER k m 3 m STORE STORE",
            "COMMAND GETKEYS GEORADIUS k 1 2 3 m STORE",
            "COMMAND GETKEYS GEOSEARCHSTORE d k FROMMEMBER m",
            "COMMAND GETKEYS GEOSEARCH k FROMMEMBER m BYRADIUS 1 m",
            "COMMAND GETKEYS GEOADD k 1 2 m",
        ]
        .map(line),
    );
    check_both_protocols(&mut d, &commands);
}

#[test]
fn geosearch_and_geosearchstore_match_redis() {
    let mut d = Differential::start();
    let searches = [
        "FROMLONLAT 15 37 BYRADIUS 200 km ASC",
        "FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD",
        "FROMLONLAT 15 37 BYBOX 400 400 km WITHDIST WITHHASH",
        "FROMMEMBER Palermo BYBOX 200 100 mi DESC WITHDIST",
        "FROMMEMBER Palermo BYRADIUS 0 km WITHDIST",
        "FROMMEMBER Palermo BYBOX 0 0 km",
        "FROMMEMBER Palermo BYBOX 1e308 1e308 km WITHDIST",
        "FROMMEMBER Palermo BYBOX inf 1 km WITHDIST",
        "FROMMEMBER Palermo BYRADIUS 1e308 mi WITHDIST",
        "FROMMEMBER Palermo BYRADIUS 1e-300 m WITHDIST",
        "FROMMEMBER Palermo BYRADIUS 1 km COUNT 9223372036854775807",
        "FROMMEMBER Palermo BYRADIUS 1 km COUNT 9223372036854775808",
        "BYRADIUS 200 km FROMMEMBER Catania COUNT 2 ANY",
        "FROMLONLAT 15 37 BYRADIUS 500 km COUNT 3",
        "FROMLONLAT 15 37 BYRADIUS 500 km COUNT 3 ANY",
        "FROMLONLAT 15 37 BYRADIUS 500 km COUNT 3 ANY DESC",
        // Repeated and conflicting options.
        "FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 1 m",
        "FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 m",
        "FROMLONLAT 1 1 FROMMEMBER Palermo BYRADIUS 1 m",
        "FROMLONLAT 15 37 BYRADIUS 1 m BYBOX 1 1 m",
        "FROMLONLAT 15 37 BYBOX 1 1 m BYRADIUS 1 m",
        "FROMLONLAT 15 37 BYRADIUS 1 km BYRADIUS 300 km",
        // Errors.
        "FROMLONLAT 15 37",
        "BYRADIUS 15 km",
        "FROMLONLAT 15 37 BYRADIUS 1 km ANY",
        "FROMLONLAT 15 37 BYRADIUS 1 km STORE x",
        "FROMLONLAT 15 37 BYRADIUS 1 km STOREDIST",
        "FROMLONLAT 15 37 BYRADIUS 1 parsec",
        "FROMLONLAT 15 37 BYBOX 1 1 parsec",
        "FROMLONLAT 15 37 BYBOX x y km",
        "FROMLONLAT 15 37 BYBOX 1 y km",
        "FROMLONLAT 15 37 BYBOX -1 1 km",
        "FROMLONLAT 15 37 BYBOX 1 -1 km",
        "FROMLONLAT 15 37 BYBOX 1 1",
        "FROMLONLAT 15 99 BYBOX 1 1 km",
        "FROMLONLAT x 37 BYBOX 1 1 km",
        "FROMLONLAT 15 BYBOX 1 1 km",
        "FROMMEMBER nope BYBOX 1 1 km",
        "FROMMEMBER",
    ];
    let mut commands = vec![line(SICILY)];
    for s in searches {
        commands.push(line(&format!("GEOSEARCH Sicily {s}")));
    }
    commands.extend(
        [
            // The command's name appears in some errors as the client wrote it.
            "geosearch Sicily BYBOX 1 1 km",
            "GeoSearch Sicily FROMMEMBER Palermo",
            "GEOSEARCH missing FROMMEMBER nope BYRADIUS 1 km",
            "GEOSEARCH missing FROMMEMBER nope",
            "SET str v",
            "GEOSEARCH str FROMMEMBER nope",
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3",
            "ZRANGE dst 0 -1 WITHSCORES",
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3 STOREDIST",
            "ZRANGE dst 0 -1 WITHSCORES",
            "GEOSEARCHSTORE str Sicily FROMMEMBER Palermo BYRADIUS 1 m storedist",
            "ZRANGE str 0 -1 WITHSCORES",
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 BYRADIUS 1 m",
            "EXISTS dst",
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 BYRADIUS 1 m",
            "GEOSEARCHSTORE dst Sicily FROMMEMBER x BYRADIUS 1 m",
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 WITHDIST",
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 STORE x",
            "SET str v",
            "GEOSEARCHSTORE str missing FROMMEMBER x BYRADIUS 1 m",
            "EXISTS str",
            "SET str v",
            "GEOSEARCHSTORE dst str FROMMEMBER x BYRADIUS 1 m",
            "geosearchstore dst Sicily BYRADIUS 1 m",
        ]
        .map(line),
    );
    check_both_protocols(&mut d, &commands);
}

#[test]
fn searches_near_the_antimeridian_and_the_poles_match_redis() {
    let mut d = Differential::start();
    let mut commands = vec![line(
        "GEOADD w 179.95 0 a -179.95 0 b 179.5 0.3 c -179.5 -0.3 d 180 0 e -180 0 f \
         0 84.9 n1 90 84.9 n2 -90 85 n3 180 85.05 n4 0 -84.9 s1 179.99 -85 s2",
    )];
    let centres = [
        "179.9 0",
        "-179.9 0",
        "180 0",
        "-180 0",
        "0 85",
        "180 85.05",
        "0 -85",
        "179.99 -84.99",
    ];
    let shapes = [
        "BYRADIUS 50 km",
        "BYRADIUS 100 km",
        "BYRADIUS 2000 km",
        "BYRADIUS 20000 km",
        "BYBOX 100 100 km",
        "BYBOX 200 20 km",
        "BYBOX 5000 500 km",
        "BYBOX 40000 40000 km",
    ];
    for centre in centres {
        for shape in shapes {
            for tail in ["WITHDIST", "ASC WITHCOORD"] {
                commands.push(line(&format!(
                    "GEOSEARCH w FROMLONLAT {centre} {shape} {tail}"
                )));
            }
        }
    }
    // Antipodes: distances of half the globe, where the haversine's rounding shows.
    commands.push(line(
        "GEOADD ap 180 0 a -180 0 b 0 0 c 179.999999 0.000001 d 90 0 e -90 0 f 0 85 g \
         180 -85 h 45 45 i -135 -45 j",
    ));
    for centre in [
        "0 0",
        "180 0",
        "-180 0",
        "90 0",
        "45 45",
        "0 -85",
        "-135 -45",
        "0.000001 0",
    ] {
        commands.push(line(&format!(
            "GEOSEARCH ap FROMLONLAT {centre} BYRADIUS 40000 km WITHDIST ASC"
        )));
        commands.push(line(&format!(
            "GEOSEARCH ap FROMLONLAT {centre} BYBOX 40000 20000 km WITHDIST DESC"
        )));
    }
    for pair in ["a c", "i j", "g h", "b d", "e f"] {
        commands.push(line(&format!("GEODIST ap {pair}")));
    }
    check_both_protocols(&mut d, &commands);
}

/// Members at the same position have equal distances: Redis's sorts (glibc's merge sort
/// for all results, its own partial quicksort under COUNT) put them in their own orders.
#[test]
fn equal_distances_are_ordered_as_redis_orders_them() {
    let mut d = Differential::start();
    let mut add = line("GEOADD t");
    for i in 0..70 {
        let position = ["10.5 20.5", "10.6 20.6", "10.4 20.45"][i % 3];
        add.extend(line(&format!("{position} m{i}")));
    }
    // Found by the property test: 23 results, most at one position, under COUNT 1.
    let mut small = line(
        "GEOADD u 0 42.525565 m0 0 0 m1 0 14.805261 m2 0 30.108273 m3 2.3522 48.8566 m4 \
         -12.141647 16.855731 m5 -21.089051 20.367352 m6",
    );
    for i in 7..23 {
        small.extend(line(&format!("2.35 48.85 m{i}")));
    }
    let mut commands = vec![add, small];
    for count in ["1", "2", "5", "22"] {
        for sort in ["ASC", "DESC"] {
            commands.push(line(&format!(
                "GEOSEARCH u FROMLONLAT 2.35 48.85 BYRADIUS 3793.5 km COUNT {count} {sort}"
            )));
        }
    }
    for sort in ["ASC", "DESC"] {
        commands.push(line(&format!(
            "GEOSEARCH t FROMLONLAT 10.5 20.5 BYRADIUS 100 km {sort}"
        )));
        for count in [1, 2, 3, 6, 7, 8, 9, 16, 23, 24, 25, 41, 47, 69, 70, 71] {
            commands.push(line(&format!(
                "GEOSEARCH t FROMLONLAT 10.5 20.5 BYRADIUS 100 km {sort} COUNT {count} WITHDIST"
            )));
            commands.push(line(&format!(
                "GEORADIUS t 10.55 20.55 50 km {sort} COUNT {count}"
            )));
        }
    }
    check_both_protocols(&mut d, &commands);
}

#[test]
fn geo_commands_publish_what_redis_publishes() {
    let d = Differential::start();
    let lines = [
        SICILY,
        "GEOADD Sicily 13.361389 38.115556 Palermo",
        "GEOADD Sicily XX 1 1 Palermo",
        "GEOADD Sicily NX 1 1 Palermo",
        "GEORADIUS Sicily 15 37 200 km STORE dst",
        "GEORADIUS Sicily 15 37 200 km STOREDIST dst",
        "GEORADIUS Sicily 0 0 1 km STORE dst",
        "GEORADIUS Sicily 0 0 1 km STORE dst",
        "GEOSEARCHSTORE d2 Sicily FROMMEMBER Palermo BYRADIUS 1 km",
        "GEOSEARCHSTORE d2 missing FROMMEMBER Palermo BYRADIUS 1 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 1 km",
    ];
    let commands: Vec<Vec<String>> = lines.iter().map(|l| line(l)).collect();
    let commands: Vec<Vec<&str>> = commands
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    compare_notifications(&d, "KEA", false, &commands);
    compare_notifications(&d, "KEAn", true, &commands);
    compare_notifications(&d, "Kz", false, &commands);
}

/// GEOADD is written to the AOF as the ZADD it ran, the STORE forms as they were sent.
#[test]
fn geo_writes_are_propagated_as_redis_propagates_them() {
    let script = [
        SICILY,
        "GEOADD Sicily CH XX 13 38 Palermo 1 2 nope",
        "GEOADD Sicily NX 13 38 Palermo",
        "GEORADIUS Sicily 15 37 200 km STORE dst",
        "GEORADIUS Sicily 15 37 1 m STORE dst",
        "GEORADIUS Sicily 15 37 1 m STORE dst",
        "GEOSEARCHSTORE d2 Sicily FROMMEMBER Palermo BYRADIUS 1 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 1 km",
        "MULTI",
        "GEOADD Sicily 1 1 inmulti",
        "GEORADIUS Sicily 1 1 1 km STOREDIST d3",
        "EXEC",
        "EVAL redis.call('geoadd',KEYS[1],'2','2','inscript') 1 Sicily",
    ];
    let node_dir = scratch_dir("geo-n");
    let redis_dir = scratch_dir("geo-r");
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let node = node_in(&node_dir, &aof);
    let redis = redis_in(&redis_dir, &aof);
    for port in [node.port, redis.port] {
        let mut c = RawClient::connect(port);
        for command in script {
            let command = line(command);
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            c.call(&args);
        }
    }
    assert_same_log(&node_dir, &redis_dir);
}
