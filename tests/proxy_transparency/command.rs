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

/// The subcommands of `container` a `COMMAND LIST` answer names.
fn subcommands_listed(listed: &BTreeSet<String>, container: &str) -> BTreeSet<String> {
    let prefix = format!("{container}|");
    listed
        .iter()
        .filter(|name| name.starts_with(&prefix))
        .cloned()
        .collect()
}

/// The names a frame of nested `COMMAND INFO` entries or a `subcommands` docs map holds.
fn nested_names(frame: &Frame) -> BTreeSet<String> {
    let text = |f: &Frame| String::from_utf8_lossy(f.as_bytes().unwrap_or(b"")).into_owned();
    match frame {
        Frame::Array(entries) => entries
            .iter()
            .filter_map(|entry| entry.as_array().and_then(|e| e.first()).map(text))
            .collect(),
        Frame::Map(pairs) => pairs.iter().map(|(name, _)| text(name)).collect(),
        other => panic!("not a list of subcommands: {other:?}"),
    }
}

/// The proxy's COMMAND answers name exactly the CLIENT and CLUSTER subcommands it serves:
/// each one it lists is answered (not refused), each one Redis 7.0 has and it does not list
/// is refused, and `COMMAND INFO` / `COMMAND DOCS` of the container nest the same ones.
pub fn lists_only_what_it_serves(port: u16) {
    let redis = ServerProcess::redis_server(&[]);
    let mut proxy = RawClient::connect(port);
    let mut reference = RawClient::connect(redis.port);
    let listed = names(&proxy.call(&["COMMAND", "LIST"]));
    let in_redis = names(&reference.call(&["COMMAND", "LIST"]));
    let refused = |reply: &str| reply.contains("not supported through the proxy");
    for container in ["client", "cluster"] {
        let served = subcommands_listed(&listed, container);
        assert!(!served.is_empty(), "{container}: nothing listed");
        for name in subcommands_listed(&in_redis, container) {
            let arity = match proxy.call(&["COMMAND", "INFO", &name]) {
                Frame::Array(entries) => match entries.first().and_then(Frame::as_array) {
                    Some(entry) => match entry.get(1) {
                        Some(Frame::Integer(arity)) => arity.unsigned_abs() as usize,
                        other => panic!("{name}: arity {other:?}"),
                    },
                    // Not served: the arity is Redis's.
                    None => match reference.call(&["COMMAND", "INFO", &name]) {
                        Frame::Array(e) => match e[0].as_array().map(|e| &e[1]) {
                            Some(Frame::Integer(arity)) => arity.unsigned_abs() as usize,
                            other => panic!("{name}: arity {other:?}"),
                        },
                        other => panic!("{name}: {other:?}"),
                    },
                },
                other => panic!("{name}: {other:?}"),
            };
            // Harmless filler arguments up to the arity: the subcommand's own checks may
            // refuse them, the proxy's route must not.
            let mut words: Vec<&str> = name.split('|').collect();
            while words.len() < arity {
                words.push("x");
            }
            let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            let reply = show(&proxy.call_raw(&args));
            if served.contains(&name) {
                assert!(!refused(&reply), "{name} is listed but refused: {reply}");
            } else {
                assert!(
                    refused(&reply),
                    "{name} is not listed but answered: {reply}"
                );
            }
        }
        let info = proxy.call(&["COMMAND", "INFO", container]);
        let entry = info
            .as_array()
            .and_then(|e| e[0].as_array())
            .expect("entry");
        assert_eq!(nested_names(&entry[9]), served, "COMMAND INFO {container}");
        let docs = proxy.call(&["COMMAND", "DOCS", container]);
        let fields = match &docs {
            Frame::Array(items) => items[1].clone(),
            Frame::Map(pairs) => pairs[0].1.clone(),
            other => panic!("COMMAND DOCS {container}: {other:?}"),
        };
        let subcommands = match fields {
            Frame::Array(items) => items
                .chunks(2)
                .find(|kv| kv[0].as_bytes() == Some(b"subcommands"))
                .map(|kv| kv[1].clone()),
            Frame::Map(pairs) => pairs
                .into_iter()
                .find(|(k, _)| k.as_bytes() == Some(b"subcommands"))
                .map(|(_, v)| v),
            other => panic!("COMMAND DOCS {container}: {other:?}"),
        }
        .expect("subcommands in the docs");
        // RESP2 answers the docs map as a flat array of name, docs pairs.
        let documented = match subcommands {
            Frame::Array(items) => items
                .chunks(2)
                .map(|kv| String::from_utf8_lossy(kv[0].as_bytes().unwrap_or(b"")).into_owned())
                .collect(),
            other => nested_names(&other),
        };
        assert_eq!(documented, served, "COMMAND DOCS {container}");
    }
}
