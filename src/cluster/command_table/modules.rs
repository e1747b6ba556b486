//! Commands of Redis modules the storage node implements: RedisBloom 2.6's Bloom filter
//! commands, entered as a redis-server 7.0 with RedisBloom loaded lists them.
//!
//! RedisBloom registers each with `RedisModule_CreateCommand(name, flags, 1, 1, 1)`, flags
//! `"write deny-oom"` or `"readonly fast"`. Redis 7.0 turns that into a `COMMAND INFO`
//! entry with arity -1 (the module checks its own arguments), its flags plus `module`, no
//! ACL categories, first/last key 1 and step 1, and one key spec built from that range
//! (`RW access update`, index 1, range lastkey 0). `COMMAND DOCS` gives only the group
//! `module` and the module's name `bf`.

use bytes::Bytes;

use crate::resp::Frame;

/// `(name, writes)`: RedisBloom's Bloom filter commands.
const BLOOM_COMMANDS: &[(&str, bool)] = &[
    ("bf.reserve", true),
    ("bf.add", true),
    ("bf.madd", true),
    ("bf.insert", true),
    ("bf.exists", false),
    ("bf.mexists", false),
    ("bf.info", false),
    ("bf.card", false),
    ("bf.scandump", false),
    ("bf.loadchunk", true),
];

/// The module the commands belong to, as `COMMAND DOCS` names it.
const MODULE_NAME: &str = "bf";

fn simple(text: &str) -> Frame {
    Frame::Simple(Bytes::copy_from_slice(text.as_bytes()))
}

fn simple_set(words: &[&str]) -> Frame {
    Frame::Set(words.iter().map(|w| simple(w)).collect())
}

fn map(pairs: Vec<(&str, Frame)>) -> Frame {
    Frame::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Frame::bulk(k), v))
            .collect(),
    )
}

/// The key spec Redis 7.0 derives from a module command's (1, 1, 1) key range.
fn legacy_key_spec() -> Frame {
    map(vec![
        ("flags", simple_set(&["RW", "access", "update"])),
        (
            "begin_search",
            map(vec![
                ("type", Frame::bulk("index")),
                ("spec", map(vec![("index", Frame::Integer(1))])),
            ]),
        ),
        (
            "find_keys",
            map(vec![
                ("type", Frame::bulk("range")),
                (
                    "spec",
                    map(vec![
                        ("lastkey", Frame::Integer(0)),
                        ("keystep", Frame::Integer(1)),
                        ("limit", Frame::Integer(0)),
                    ]),
                ),
            ]),
        ),
    ])
}

/// `COMMAND INFO` entries of the module commands.
pub(super) fn info_entries() -> Vec<Frame> {
    BLOOM_COMMANDS
        .iter()
        .map(|&(name, writes)| {
            // Redis lists flags in its own order: write, readonly, denyoom, module, ... fast.
            let flags: &[&str] = if writes {
                &["write", "denyoom", "module"]
            } else {
                &["readonly", "module", "fast"]
            };
            Frame::Array(vec![
                Frame::bulk(name),
                Frame::Integer(-1),
                simple_set(flags),
                Frame::Integer(1),
                Frame::Integer(1),
                Frame::Integer(1),
                Frame::Set(Vec::new()),
                Frame::Set(Vec::new()),
                Frame::Array(vec![legacy_key_spec()]),
                Frame::Array(Vec::new()),
            ])
        })
        .collect()
}

/// The module a command belongs to, if it is a module command.
pub(super) fn module_of(name: &str) -> Option<&'static str> {
    BLOOM_COMMANDS
        .iter()
        .any(|&(command, _)| command == name)
        .then_some(MODULE_NAME)
}

/// `COMMAND DOCS` entries of the module commands, by name.
pub(super) fn docs_entries() -> Vec<(String, Frame)> {
    BLOOM_COMMANDS
        .iter()
        .map(|&(name, _)| {
            let docs = map(vec![
                ("group", Frame::bulk("module")),
                ("module", Frame::bulk(MODULE_NAME)),
            ]);
            (name.to_string(), docs)
        })
        .collect()
}
