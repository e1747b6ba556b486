//! The fixed data every case starts from: one key of each type (all in hash slot `{fz}`,
//! so that the same keys work through the proxy), written the same way to both servers.

/// Keys the generator draws from: the prepared ones, one that never exists, and odd names.
pub const KEYS: &[&str] = &[
    "{fz}str",
    "{fz}int",
    "{fz}float",
    "{fz}big",
    "{fz}list",
    "{fz}hash",
    "{fz}set",
    "{fz}intset",
    "{fz}zset",
    "{fz}geo",
    "{fz}stream",
    "{fz}hll",
    "{fz}ttl",
    "{fz}missing",
    "{fz}new",
    "{fz}",
];

/// The commands that build the prepared keys (the 1 MB value of `{fz}big` is added by
/// [`commands`]).
const SETUP: &[&[&str]] = &[
    &["SET", "{fz}str", "hello"],
    &["SET", "{fz}int", "10"],
    &["SET", "{fz}float", "3.5"],
    &["RPUSH", "{fz}list", "a", "b", "c", "1", "2", "3"],
    &["HSET", "{fz}hash", "f1", "v1", "f2", "2", "f3", "3.5"],
    &["SADD", "{fz}set", "a", "b", "c"],
    &["SADD", "{fz}intset", "1", "2", "3"],
    &[
        "ZADD", "{fz}zset", "1", "a", "2", "b", "3", "c", "-inf", "lo", "+inf", "hi",
    ],
    &[
        "GEOADD",
        "{fz}geo",
        "13.361389",
        "38.115556",
        "Palermo",
        "15.087269",
        "37.502669",
        "Catania",
    ],
    &["XADD", "{fz}stream", "1-1", "f", "v1"],
    &["XADD", "{fz}stream", "2-1", "f", "v2"],
    &["XGROUP", "CREATE", "{fz}stream", "g", "0"],
    &[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "1",
        "STREAMS",
        "{fz}stream",
        ">",
    ],
    &["PFADD", "{fz}hll", "a", "b", "c"],
    &["SET", "{fz}ttl", "v", "EX", "100000"],
];

/// The setup commands as byte arguments, in order.
pub fn commands() -> Vec<Vec<Vec<u8>>> {
    let mut all: Vec<Vec<Vec<u8>>> = SETUP
        .iter()
        .map(|c| c.iter().map(|w| w.as_bytes().to_vec()).collect())
        .collect();
    all.push(vec![
        b"SET".to_vec(),
        b"{fz}big".to_vec(),
        super::alphabet::megabyte().to_vec(),
    ]);
    all
}
