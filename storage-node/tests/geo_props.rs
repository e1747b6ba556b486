//! Random GEO positions and searches compared with a real redis-server, byte for byte, in
//! RESP2 and RESP3: up to 60 members, some sharing positions (so results tie on distance
//! and the sorts' orders show), then GEOSEARCH, GEORADIUS, their STORE forms, GEODIST,
//! GEOPOS and GEOHASH with random centres, sizes, units and options. Replies are compared
//! exactly, COUNT ANY included: the node scans Redis's cells in Redis's order.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::differential::words;
use test_harness::Differential;

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
        cases: 256,
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
