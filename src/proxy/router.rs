//! Deciding where a request goes, from the command table alone.

use std::sync::OnceLock;

use bytes::Bytes;

use crate::cluster::{key_slot, CommandFlags, CommandSpec, CommandTable};

/// The error Redis Cluster gives for keys in different slots.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The proxy answers it itself.
    Local,
    /// An error reply, without contacting any node.
    Reject(String),
    /// The master of one slot.
    Slot(u16),
    /// Any master (keyless commands whose answer does not depend on the node).
    AnyMaster,
    /// Split by slot and merged (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH).
    SplitKeys,
    /// Every master, merged (DBSIZE, KEYS, SCAN, RANDOMKEY, FLUSHALL, FLUSHDB, SCRIPT, FUNCTION).
    AllMasters,
    /// MULTI, EXEC, DISCARD, WATCH, UNWATCH.
    Transaction,
    /// A blocking command on a dedicated connection; `None` for keyless ones (WAIT).
    Blocking(Option<u16>),
    /// SUBSCRIBE and friends.
    PubSub,
    /// The master holding the proxy's channel subscriptions (PUBLISH, PUBSUB ...), so that
    /// counts and channel lists describe the proxy's subscribers.
    PubSubHome,
}

/// Commands the proxy answers itself.
const LOCAL: &[&str] = &[
    "ping",
    "echo",
    "quit",
    "reset",
    "hello",
    "auth",
    "select",
    "client",
    "command",
    "config",
    "info",
    "cluster",
    "readonly",
    "readwrite",
    "asking",
];
const SPLIT_KEYS: &[&str] = &["mget", "mset", "del", "unlink", "exists", "touch"];
const ALL_MASTERS: &[&str] = &["dbsize", "keys", "scan", "randomkey", "flushall", "flushdb"];
const TRANSACTION: &[&str] = &["multi", "exec", "discard", "watch", "unwatch"];
const PUBSUB: &[&str] = &[
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ssubscribe",
    "sunsubscribe",
];
/// Commands that make no sense through a proxy (node administration, replication,
/// connection-level state of a shared backend connection).
const UNSUPPORTED: &[&str] = &[
    "monitor",
    "sync",
    "psync",
    "replconf",
    "shutdown",
    "debug",
    "slaveof",
    "replicaof",
    "failover",
    "move",
    "swapdb",
    "save",
    "bgsave",
    "bgrewriteaof",
    "acl",
    "latency",
    "module",
    "slowlog",
    "migrate",
    "restore-asking",
    "pfdebug",
    "pfselftest",
    "lastsave",
];

fn is_one_of(name: &str, list: &[&str]) -> bool {
    list.contains(&name)
}

/// The error for a command a client may not run through the proxy.
pub fn unsupported(name: &str) -> String {
    format!("ERR slotproxy: '{name}' is not supported through the proxy")
}

/// Looks a request up in the command table, checking existence and arity exactly as Redis
/// does (same error texts, from the shared core).
pub fn lookup(args: &[Bytes]) -> Result<&'static CommandSpec, String> {
    crate::protocol::lookup(args)
}

/// Whether the proxy serves a command at all (`COMMAND` lists only those).
pub fn served(spec: &CommandSpec) -> bool {
    class_of(spec) != Class::Unsupported
}

/// The one slot all keys of a request hash to, `Ok(None)` if it has no keys, or CROSSSLOT.
pub fn single_slot(spec: &CommandSpec, args: &[Bytes]) -> Result<Option<u16>, String> {
    let Ok(indexes) = spec.key_indexes(args) else {
        // Malformed key counts: let the node answer with its own error.
        return Ok(None);
    };
    let mut slot = None;
    for i in indexes {
        let s = key_slot(&args[i]);
        match slot {
            None => slot = Some(s),
            Some(first) if first != s => return Err(CROSSSLOT.to_string()),
            _ => {}
        }
    }
    Ok(slot)
}

fn has_block_option(args: &[Bytes]) -> bool {
    args.iter().any(|a| a.eq_ignore_ascii_case(b"block"))
}

/// What a command is, from its name alone: decided once per command-table entry, so the
/// request path does one array index instead of string comparisons against the lists above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Local,
    Transaction,
    PubSub,
    SplitKeys,
    AllMasters,
    Unsupported,
    ShardPublish,
    PubSubHome,
    Wait,
    /// Routed by its keys; XREAD/XREADGROUP block only with a BLOCK option.
    Keyed {
        xread: bool,
    },
}

fn classify(spec: &CommandSpec) -> Class {
    let top = spec.name.split('|').next().unwrap_or(&spec.name);
    if is_one_of(top, LOCAL) {
        return Class::Local;
    }
    if is_one_of(top, TRANSACTION) {
        return Class::Transaction;
    }
    if is_one_of(top, PUBSUB) {
        return Class::PubSub;
    }
    if is_one_of(top, SPLIT_KEYS) {
        return Class::SplitKeys;
    }
    if is_one_of(top, ALL_MASTERS) {
        return Class::AllMasters;
    }
    if is_one_of(top, UNSUPPORTED) {
        return Class::Unsupported;
    }
    match spec.name.as_str() {
        "script|load" | "script|flush" | "script|exists" | "function|load" | "function|delete"
        | "function|flush" | "function|restore" => Class::AllMasters,
        "script|kill" | "function|kill" => Class::Unsupported,
        "spublish" => Class::ShardPublish,
        "publish" | "pubsub|channels" | "pubsub|numsub" | "pubsub|numpat" => Class::PubSubHome,
        "wait" => Class::Wait,
        _ => Class::Keyed {
            xread: matches!(top, "xread" | "xreadgroup"),
        },
    }
}

fn class_of(spec: &CommandSpec) -> Class {
    static CLASSES: OnceLock<Vec<Class>> = OnceLock::new();
    let classes = CLASSES.get_or_init(|| {
        let table = CommandTable::get();
        let mut classes = vec![Class::Keyed { xread: false }; table.spec_count()];
        for spec in table.all_specs() {
            if let Some(class) = classes.get_mut(spec.id) {
                *class = classify(spec);
            }
        }
        classes
    });
    classes
        .get(spec.id)
        .copied()
        .unwrap_or_else(|| classify(spec))
}

/// Decides the route of a request outside MULTI.
pub fn route(spec: &CommandSpec, args: &[Bytes]) -> Route {
    let keyed_xread = match class_of(spec) {
        Class::Local => return Route::Local,
        Class::Transaction => return Route::Transaction,
        Class::PubSub => return Route::PubSub,
        Class::SplitKeys => return Route::SplitKeys,
        Class::AllMasters => return Route::AllMasters,
        Class::Unsupported => {
            let top = spec.name.split('|').next().unwrap_or(&spec.name);
            let shown = if spec.name.starts_with("script|") || spec.name.starts_with("function|") {
                spec.name.as_str()
            } else {
                top
            };
            return Route::Reject(unsupported(shown));
        }
        Class::ShardPublish => return Route::Slot(key_slot(&args[1])),
        Class::PubSubHome => return Route::PubSubHome,
        Class::Wait => return Route::Blocking(None),
        Class::Keyed { xread } => xread,
    };
    let blocking =
        spec.flags.contains(CommandFlags::BLOCKING) && (!keyed_xread || has_block_option(args));
    match single_slot(spec, args) {
        Err(e) => Route::Reject(e),
        Ok(slot) if blocking => Route::Blocking(slot),
        Ok(Some(slot)) => Route::Slot(slot),
        Ok(None) if spec.flags.contains(CommandFlags::ADMIN) => {
            Route::Reject(unsupported(&spec.name))
        }
        Ok(None) => Route::AnyMaster,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_of(words: &[&str]) -> Route {
        let args: Vec<Bytes> = words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        match lookup(&args) {
            Ok(spec) => route(spec, &args),
            Err(e) => Route::Reject(e),
        }
    }

    #[test]
    fn routes() {
        assert_eq!(route_of(&["GET", "foo"]), Route::Slot(12182));
        assert_eq!(route_of(&["MGET", "a", "b"]), Route::SplitKeys);
        assert_eq!(
            route_of(&["RENAME", "a", "b"]),
            Route::Reject(CROSSSLOT.into())
        );
        assert_eq!(
            route_of(&["RENAME", "{a}1", "{a}2"]),
            Route::Slot(key_slot(b"a"))
        );
        assert_eq!(route_of(&["EVAL", "return 1", "0"]), Route::AnyMaster);
        assert_eq!(
            route_of(&["EVAL", "x", "2", "a", "b"]),
            Route::Reject(CROSSSLOT.into())
        );
        assert_eq!(
            route_of(&["BLPOP", "a", "0"]),
            Route::Blocking(Some(key_slot(b"a")))
        );
        assert_eq!(
            route_of(&["XREAD", "STREAMS", "s", "0"]),
            Route::Slot(key_slot(b"s"))
        );
        assert_eq!(
            route_of(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]),
            Route::Blocking(Some(key_slot(b"s")))
        );
        assert_eq!(route_of(&["SCRIPT", "LOAD", "return 1"]), Route::AllMasters);
        assert_eq!(route_of(&["PING"]), Route::Local);
        assert_eq!(route_of(&["MULTI"]), Route::Transaction);
        assert!(matches!(route_of(&["SHUTDOWN"]), Route::Reject(_)));
        assert!(matches!(
            route_of(&["CONFIG", "SET", "a", "b"]),
            Route::Local
        ));
        assert_eq!(
            route_of(&["GET"]),
            Route::Reject("ERR wrong number of arguments for 'get' command".into())
        );
    }
}
