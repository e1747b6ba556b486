//! COMMAND (INFO, DOCS, COUNT, LIST, GETKEYS, GETKEYSANDFLAGS, HELP) compared with a real
//! redis-server, for the commands the node implements.

use std::collections::BTreeSet;

use slotproxy::cluster::CommandTable;
use slotproxy::resp::Frame;
use test_harness::Differential;

fn text_of(frame: &Frame) -> String {
    String::from_utf8_lossy(frame.as_bytes().expect("a string reply")).into_owned()
}

/// Sorts what Redis writes in hash-table order: the subcommand entries of a `COMMAND INFO`
/// entry and the `subcommands` map of `COMMAND DOCS` (a flat array in RESP2).
fn normalize(frame: Frame) -> Frame {
    let key = |f: &Frame| format!("{f:?}");
    match frame {
        Frame::Map(pairs) => {
            let mut pairs: Vec<(Frame, Frame)> =
                pairs.into_iter().map(|(k, v)| (k, normalize(v))).collect();
            pairs.sort_by_key(|(k, _)| key(k));
            Frame::Map(pairs)
        }
        Frame::Array(items) => {
            let mut items: Vec<Frame> = items.into_iter().map(normalize).collect();
            // A flattened `subcommands` map in RESP2 docs.
            if let Some(at) = items
                .iter()
                .position(|f| f.as_bytes() == Some(&b"subcommands"[..]))
            {
                if let Some(Frame::Array(flat)) = items.get_mut(at + 1) {
                    let mut pairs: Vec<Vec<Frame>> =
                        flat.chunks(2).map(<[Frame]>::to_vec).collect();
                    pairs.sort_by_key(|pair| key(&pair[0]));
                    *flat = pairs.concat();
                }
            }
            // A COMMAND INFO entry: its 10th field lists the subcommands.
            if items.len() == 10 {
                if let Frame::Array(subs) | Frame::Set(subs) = &mut items[9] {
                    subs.sort_by_key(|sub| key(sub));
                }
            }
            Frame::Array(items)
        }
        other => other,
    }
}

/// A container's COMMAND INFO or DOCS reply without its nested subcommand entries: the
/// node describes only the subcommands it implements (as its COMMAND LIST does), and each
/// of those is compared with redis-server's on its own.
fn without_subcommands(frame: Frame) -> Frame {
    match frame {
        Frame::Map(pairs) => Frame::Map(
            pairs
                .into_iter()
                .filter(|(k, _)| k.as_bytes() != Some(&b"subcommands"[..]))
                .map(|(k, v)| (k, without_subcommands(v)))
                .collect(),
        ),
        Frame::Array(items) => {
            let mut items: Vec<Frame> = items.into_iter().map(without_subcommands).collect();
            if let Some(at) = items
                .iter()
                .position(|f| f.as_bytes() == Some(&b"subcommands"[..]))
            {
                items.drain(at..(at + 2).min(items.len()));
            }
            if items.len() == 10 && matches!(items[1], Frame::Integer(_)) {
                items[9] = Frame::Array(Vec::new());
            }
            Frame::Array(items)
        }
        other => other,
    }
}

/// The names the node says it implements, but for module commands (RedisBloom's `BF.*`),
/// which the reference redis-server, without modules, does not have.
fn implemented_names(d: &mut Differential) -> Vec<String> {
    match d.node_client.call(&["COMMAND", "LIST"]) {
        Frame::Array(names) => names
            .iter()
            .map(text_of)
            .filter(|n| !is_module_command(n))
            .collect(),
        other => panic!("COMMAND LIST answered {other:?}"),
    }
}

fn is_module_command(name: &str) -> bool {
    slotproxy::cluster::CommandTable::get()
        .by_full_name(name.as_bytes())
        .is_some_and(|spec| spec.module().is_some())
}

#[test]
fn command_info_and_docs_match_redis_for_implemented_commands() {
    let mut d = Differential::start();
    let names = implemented_names(&mut d);
    for expected in [
        "get",
        "config",
        "config|get",
        "client|list",
        "info",
        "command",
        "time",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} not listed");
    }
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for name in &names {
            for sub in ["INFO", "DOCS"] {
                let (node, redis) = d.both(&["COMMAND", sub, name]);
                // Redis lists subcommands in its hash table's order, which is seeded at
                // random on every start: compare containers with their subcommands sorted.
                let container = names.iter().any(|n| n.starts_with(&format!("{name}|")));
                let (node, redis) = if container {
                    (without_subcommands(node), without_subcommands(redis))
                } else {
                    (node, redis)
                };
                assert_eq!(
                    normalize(node),
                    normalize(redis),
                    "COMMAND {sub} {name} (RESP{})",
                    if resp3 { 3 } else { 2 }
                );
            }
            if !names.iter().any(|n| n.starts_with(&format!("{name}|"))) {
                d.check(&["COMMAND", "INFO", name]);
                d.check(&["COMMAND", "DOCS", name]);
            }
        }
        d.check(&["COMMAND", "INFO", "get", "nosuch", "config|get", "SET"]);
        d.check(&["COMMAND", "DOCS", "nosuch", "get"]);
        d.check(&["COMMAND", "DOCS", "nosuch"]);
        d.check(&["COMMAND", "GETKEYS"]);
        d.check(&["COMMAND", "FOO"]);
        d.check(&["COMMAND", "LIST", "FILTERBY", "foo", "bar"]);
        d.check(&["COMMAND", "LIST", "foo"]);
        d.check(&["COMMAND", "LIST", "FILTERBY", "PATTERN"]);
        d.check(&["COMMAND", "LIST", "FILTERBY", "MODULE", "foo"]);
        d.check(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcategory"]);
        d.check(&["COMMAND", "COUNT", "x"]);
    }
}

#[test]
fn command_lists_only_implemented_commands() {
    let mut d = Differential::start();
    let names = implemented_names(&mut d);
    let modules = slotproxy::cluster::CommandTable::get()
        .commands()
        .iter()
        .filter(|c| c.module().is_some())
        .count();
    let top_level = names.iter().filter(|n| !n.contains('|')).count() + modules;
    assert_eq!(
        d.node_client.call(&["COMMAND", "COUNT"]),
        Frame::Integer(top_level as i64)
    );
    match d.node_client.call(&["COMMAND"]) {
        Frame::Array(entries) => assert_eq!(entries.len(), top_level),
        other => panic!("COMMAND answered {other:?}"),
    }
    // A command the node lacks has no entry, as an unknown one.
    assert!(!names.iter().any(|n| n == "script|debug"));
    assert!(names.iter().any(|n| n == "command|getkeysandflags"));
    assert_eq!(
        d.node_client.call(&["COMMAND", "INFO", "script|debug"]),
        Frame::Array(vec![Frame::Null])
    );
    // Filters: a pattern, and an ACL category, agree with Redis on the commands both have.
    // (Glob patterns beyond `*` are tested with the glob module itself.)
    for filter in [
        &["PATTERN", "*"][..],
        &["PATTERN", "config|get"],
        &["ACLCAT", "connection"],
        &["ACLCAT", "ADMIN"],
    ] {
        let mut command = vec!["COMMAND", "LIST", "FILTERBY"];
        command.extend_from_slice(filter);
        let (node, redis) = d.both(&command);
        let set = |f: &Frame| -> BTreeSet<String> {
            f.as_array().expect("array").iter().map(text_of).collect()
        };
        let node: BTreeSet<String> = set(&node)
            .into_iter()
            .filter(|n| !is_module_command(n))
            .collect();
        let redis = set(&redis);
        let implemented: BTreeSet<String> = names.iter().cloned().collect();
        let expected: BTreeSet<String> = redis.intersection(&implemented).cloned().collect();
        assert_eq!(node, expected, "COMMAND LIST FILTERBY {filter:?}");
    }
}

#[test]
fn command_help_matches_redis() {
    let mut d = Differential::start();
    d.check(&["COMMAND", "HELP"]);
}

/// Arguments for sweeping COMMAND GETKEYS over every command: words, numbers and keywords
/// that key specs look for.
const FILLERS: &[&[&str]] = &[
    &["a", "b", "c", "d", "e", "f", "g"],
    &["2", "a", "b", "c", "d", "e", "f"],
    &["a", "2", "b", "c", "d", "e", "f"],
    &["a", "1", "b", "c"],
    &["a", "0", "b"],
    &["a", "b", "STREAMS", "s1", "s2", "0", "0"],
    &["a", "b", "STORE", "dest", "c"],
    &["a", "-1", "b", "c"],
    &["x", "y", "KEYS", "k1", "k2"],
    &["1", "2", "3", "4", "5", "6"],
];

fn sweep_commands() -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    // Module commands are left out: the reference redis-server has no modules loaded.
    for spec in CommandTable::get()
        .commands()
        .iter()
        .filter(|c| c.module().is_none())
    {
        let mut bases: Vec<(Vec<String>, i64)> = vec![(vec![spec.name.clone()], spec.arity)];
        for sub in &spec.subcommands {
            let words = sub.name.split('|').map(str::to_string).collect();
            bases.push((words, sub.arity));
        }
        for (base, arity) in bases {
            let min = arity.unsigned_abs() as usize;
            for filler in FILLERS {
                for extra in 0..=3 {
                    let mut command = base.clone();
                    let wanted = (min + extra).max(command.len());
                    command.extend(
                        filler
                            .iter()
                            .cycle()
                            .take(wanted - base.len())
                            .map(|s| s.to_string()),
                    );
                    if !commands.contains(&command) {
                        commands.push(command);
                    }
                    if arity > 0 {
                        break;
                    }
                }
            }
        }
    }
    commands
}

#[test]
fn command_getkeys_and_flags_match_redis_for_every_command() {
    let mut d = Differential::start();
    let commands = sweep_commands();
    assert!(commands.len() > 1000);
    let mut mismatches = Vec::new();
    for command in &commands {
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut args = vec!["COMMAND", sub];
            args.extend(command.iter().map(String::as_str));
            let (node, redis) = d.both(&args);
            if node != redis {
                mismatches.push(format!("{sub} {command:?}: node {node:?}, redis {redis:?}"));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        commands.len(),
        mismatches.join("\n")
    );
}

#[test]
fn command_getkeys_edge_cases_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["COMMAND", "GETKEYS", "get"],
        &["COMMAND", "GETKEYS", "nosuch", "a"],
        &["COMMAND", "GETKEYS", "ping", "x"],
        &["COMMAND", "GETKEYS", "set", "a"],
        &["COMMAND", "GETKEYS", "set", "a", "b"],
        &["COMMAND", "GETKEYS", "SET", "a", "b", "EX", "10"],
        &["COMMAND", "GETKEYS", "get", "a", "b"],
        &["COMMAND", "GETKEYS", "config", "a"],
        &["COMMAND", "GETKEYS", "config", "get", "a"],
        &["COMMAND", "GETKEYS", "client", "kill", "a"],
        &["COMMAND", "GETKEYS", "eval", "s", "0"],
        &["COMMAND", "GETKEYS", "eval", "s", "2", "a", "b", "c"],
        &["COMMAND", "GETKEYS", "eval", "s", "3", "a"],
        &["COMMAND", "GETKEYS", "zunionstore", "d", "x", "a", "b"],
        &["COMMAND", "GETKEYS", "zunionstore", "d", "2", "a", "b"],
        &["COMMAND", "GETKEYS", "zunionstore", "d", "0", "a"],
        &["COMMAND", "GETKEYS", "zunionstore", "d", "2abc", "a", "b"],
        &["COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"],
        &["COMMAND", "GETKEYS", "mset", "a", "1", "b"],
        &[
            "COMMAND", "GETKEYS", "xread", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0",
        ],
        &["COMMAND", "GETKEYS", "xread", "STREAMS", "s1", "s2", "0"],
        &[
            "COMMAND", "GETKEYS", "sort", "k", "BY", "store", "STORE", "d",
        ],
        &[
            "COMMAND", "GETKEYS", "migrate", "h", "1", "", "0", "5", "KEYS", "a", "b",
        ],
        &["COMMAND", "GETKEYS", "migrate", "h", "1", "k", "0", "5"],
        &[
            "COMMAND",
            "GETKEYS",
            "georadius",
            "k",
            "1",
            "2",
            "3",
            "m",
            "STORE",
            "d",
        ],
        &["COMMAND", "GETKEYS", "lmpop", "2", "a", "b", "LEFT"],
        &["COMMAND", "GETKEYS", "blmpop", "0", "2", "a", "b", "LEFT"],
        &["COMMAND", "GETKEYS", "spublish", "ch", "m"],
        &["COMMAND", "GETKEYS", "object", "encoding", "k"],
        &["COMMAND", "GETKEYS", "memory", "usage", "k"],
        &["COMMAND", "GETKEYS", "bitfield", "k", "GET", "u8", "0"],
    ]);
}
