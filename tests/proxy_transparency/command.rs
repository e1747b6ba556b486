//! `COMMAND` answered from the one shared table: the same session against a standalone
//! redis-server, through the proxy and on a storage-node.

use std::collections::BTreeSet;

use slotproxy::resp::Frame;
use test_harness::{show, Differential, RawClient, ServerProcess};

/// Requests whose replies are byte-identical on redis-server, the node and the proxy, in
/// RESP2 and RESP3.
const EXACT: &[&[&str]] = &[
    &["COMMAND", "INFO", "config|get"],
    &[
        "COMMAND",
        "INFO",
        "get",
        "nosuch",
        "CONFIG|GET",
        "client|nosuch",
    ],
    &["COMMAND", "DOCS", "config|get"],
    &["COMMAND", "DOCS", "nosuch"],
    &["COMMAND", "HELP"],
    &["COMMAND", "GETKEYSANDFLAGS", "set", "a", "b"],
    &["COMMAND", "GETKEYSANDFLAGS", "set", "a", "b", "GET"],
    &[
        "COMMAND",
        "GETKEYSANDFLAGS",
        "lmove",
        "a",
        "b",
        "left",
        "right",
    ],
    &["COMMAND", "GETKEYSANDFLAGS", "sort", "k", "store", "d"],
    &["COMMAND", "GETKEYSANDFLAGS", "sort", "k"],
    &[
        "COMMAND",
        "GETKEYSANDFLAGS",
        "bitfield",
        "k",
        "get",
        "u8",
        "0",
    ],
    &[
        "COMMAND",
        "GETKEYSANDFLAGS",
        "bitfield",
        "k",
        "set",
        "u8",
        "0",
        "1",
    ],
    &["COMMAND", "GETKEYSANDFLAGS", "eval", "s", "2", "a"],
    &["COMMAND", "GETKEYSANDFLAGS", "eval", "s", "2", "a", "b"],
    &[
        "COMMAND",
        "GETKEYSANDFLAGS",
        "migrate",
        "h",
        "1",
        "",
        "0",
        "5",
        "KEYS",
        "a",
        "b",
    ],
    &[
        "COMMAND",
        "GETKEYSANDFLAGS",
        "xread",
        "streams",
        "a",
        "b",
        "0",
        "0",
    ],
    &["COMMAND", "GETKEYSANDFLAGS", "ping", "x"],
    &["COMMAND", "GETKEYSANDFLAGS", "nosuch", "a"],
    &["COMMAND", "GETKEYSANDFLAGS", "get"],
    &["COMMAND", "GETKEYSANDFLAGS"],
    &["COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"],
    &["COMMAND", "LIST", "FILTERBY", "MODULE", "x"],
    &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcategory"],
    &["COMMAND", "LIST", "FILTERBY", "foo", "bar"],
    &["COMMAND", "LIST", "foo"],
    &["COMMAND", "NOSUCH"],
    &["COMMAND", "COUNT", "x"],
    &["CONFIG", "NOSUCH"],
    &["CONFIG"],
    &["CONFIG", "GET"],
];

/// Filters whose answers agree as sets (Redis lists in its hash table's order), on the
/// commands the subject serves.
const LISTS: &[&[&str]] = &[
    &["COMMAND", "LIST", "FILTERBY", "PATTERN", "config*"],
    &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "bitmap"],
    &["COMMAND", "LIST", "FILTERBY", "pattern", "*RANGE*"],
];

fn names(frame: &Frame) -> BTreeSet<String> {
    frame
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {frame:?}"))
        .iter()
        .map(|f| String::from_utf8_lossy(f.as_bytes().unwrap_or(b"")).into_owned())
        .collect()
}

/// Runs the session on `subject`, comparing with `reference` (a redis-server).
fn compare(subject: &mut RawClient, reference: &mut RawClient, what: &str) {
    for resp in ["2", "3"] {
        subject.call(&["HELLO", resp]);
        reference.call(&["HELLO", resp]);
        for command in EXACT {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            let got = subject.call_raw(&args);
            let expected = reference.call_raw(&args);
            assert_eq!(
                show(&got),
                show(&expected),
                "{what}: {command:?} (RESP{resp})"
            );
        }
        let served = names(&subject.call(&["COMMAND", "LIST"]));
        for command in LISTS {
            let got = names(&subject.call(command));
            let expected: BTreeSet<String> = names(&reference.call(command))
                .intersection(&served)
                .cloned()
                .collect();
            assert!(!expected.is_empty(), "{command:?}");
            assert_eq!(got, expected, "{what}: {command:?} (RESP{resp})");
        }
    }
}

pub fn session_matches_redis(port: u16) {
    let redis = ServerProcess::redis_server(&[]);
    compare(
        &mut RawClient::connect(port),
        &mut RawClient::connect(redis.port),
        "proxy",
    );
}

pub fn node_session_matches_redis() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    compare(&mut node, &mut redis, "storage-node");
}
