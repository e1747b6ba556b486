//! Deciding where a request goes, from the command table alone.

use std::sync::OnceLock;

use bytes::Bytes;

use crate::cluster::{key_slot, CommandFlags, CommandSpec, CommandTable};

/// The error Redis Cluster gives for keys in different slots.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

mod keyless;
pub use keyless::{keyless_class, Keyless, Merge, KEYLESS};

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The proxy answers it itself.
    Local,
    /// An error reply, without contacting any node.
    Reject(String),
    /// The master of one slot.
    Slot(u16),
    /// Any master (commands whose answer does not depend on the node: no keys given to a
    /// command that may take some, help texts).
    AnyMaster,
    /// Split by slot and merged (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH).
    SplitKeys,
    /// Every master, merged as stated (DBSIZE, KEYS, SCAN, FLUSHALL, SLOWLOG, SCRIPT ...).
    AllMasters(Merge),
    /// CONFIG GET / SET / RESETSTAT: every node and the proxy's own settings.
    Config,
    /// MULTI, EXEC, DISCARD, WATCH, UNWATCH.
    Transaction,
    /// A blocking command on a dedicated connection; `None` for keyless ones.
    Blocking(Option<u16>),
    /// WAIT: on dedicated connections to the masters this client wrote to.
    Wait,
    /// SUBSCRIBE and friends.
    PubSub,
    /// The master holding the proxy's channel subscriptions (PUBLISH, PUBSUB ...), so that
    /// counts and channel lists describe the proxy's subscribers.
    PubSubHome,
}

const SPLIT_KEYS: &[&str] = &["mget", "mset", "del", "unlink", "exists", "touch"];

fn is_one_of(name: &str, list: &[&str]) -> bool {
    list.contains(&name)
}

/// The error for a command a client may not run through the proxy.
pub fn unsupported(name: &str) -> String {
    format!("ERR slotproxy: '{name}' is not supported through the proxy")
}

/// The error for a command that describes or administers one node, where the client sees
/// a whole cluster as one server.
pub fn one_node_only(name: &str) -> String {
    format!(
        "ERR slotproxy: '{name}' describes a single node, not the cluster behind the proxy; \
         ask the nodes directly"
    )
}

/// The error for a command the configuration's `deny_commands` refuses.
pub fn denied(name: &[u8]) -> String {
    format!(
        "ERR slotproxy: command '{}' is denied by configuration",
        String::from_utf8_lossy(name).to_ascii_lowercase()
    )
}

/// Looks a request up in the command table, checking existence and arity exactly as Redis
/// does (same error texts, from the shared core).
pub fn lookup(args: &[Bytes]) -> Result<&'static CommandSpec, String> {
    crate::protocol::lookup(args)
}

/// Whether the proxy serves a command at all (`COMMAND` lists only those). A container
/// (CLIENT, CLUSTER, CONFIG...) is served when one of its subcommands is.
pub fn served(spec: &CommandSpec) -> bool {
    if !spec.subcommands.is_empty() {
        return spec.subcommands.iter().any(served);
    }
    !matches!(
        class_of(spec),
        Class::Keyless(Keyless::Unsupported | Keyless::OneNode)
    )
}

/// The one slot all keys of a request hash to, `Ok(None)` if it has no keys, or CROSSSLOT.
pub fn single_slot(spec: &CommandSpec, args: &[Bytes]) -> Result<Option<u16>, String> {
    let Ok(indexes) = spec.routing_key_indexes(args) else {
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
/// request path does one array index instead of string comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Keyless(Keyless),
    SplitKeys,
    /// Routed by its keys; XREAD/XREADGROUP block only with a BLOCK option.
    Keyed {
        xread: bool,
    },
}

fn classify(spec: &CommandSpec) -> Class {
    let top = spec.name.split('|').next().unwrap_or(&spec.name);
    if !spec.has_keys() {
        if let Some(class) = keyless_class(&spec.name) {
            return Class::Keyless(class);
        }
    }
    if is_one_of(top, SPLIT_KEYS) {
        return Class::SplitKeys;
    }
    match top {
        // WATCH has keys, and is a transaction command all the same.
        "watch" => Class::Keyless(Keyless::Transaction),
        // MIGRATE moves keys between nodes behind the clients' back; RESTORE-ASKING and
        // PFDEBUG are for node internals and tests.
        "migrate" | "restore-asking" | "pfdebug" => Class::Keyless(Keyless::Unsupported),
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
        Class::Keyless(keyless) => return keyless_route(spec, keyless, args),
        Class::SplitKeys => return Route::SplitKeys,
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

fn keyless_route(spec: &CommandSpec, keyless: Keyless, args: &[Bytes]) -> Route {
    match keyless {
        Keyless::Local => Route::Local,
        Keyless::Config => Route::Config,
        Keyless::Transaction => Route::Transaction,
        Keyless::PubSub => Route::PubSub,
        Keyless::PubSubHome => Route::PubSubHome,
        Keyless::AllMasters(merge) => Route::AllMasters(merge),
        Keyless::AnyNode => Route::AnyMaster,
        Keyless::Wait => Route::Wait,
        Keyless::ShardPublish => Route::Slot(key_slot(&args[1])),
        Keyless::OneNode => Route::Reject(one_node_only(&spec.name)),
        Keyless::Unsupported => {
            let top = spec.name.split('|').next().unwrap_or(&spec.name);
            // Containers where only some subcommands are refused name the subcommand.
            let shown = if matches!(top, "script" | "function" | "client" | "cluster") {
                spec.name.as_str()
            } else {
                top
            };
            Route::Reject(unsupported(shown))
        }
    }
}

/// Why a command may not be queued in MULTI through the proxy, beyond what Redis itself
/// checks. A transaction runs on one master's connection in one go, so a command fits if
/// the node gives the same answer the proxy would outside MULTI: keyed commands of the
/// transaction's slot, node-independent ones, blocking commands (which never block inside
/// MULTI), PING, ECHO and TIME (the transaction's own node's clock). Everything else would
/// either show one node's view as the whole (DBSIZE, PUBLISH's receiver count), change state
/// on the transaction's private connection instead of the client's (CLIENT SETNAME, AUTH,
/// SUBSCRIBE), or need every node (FLUSHALL, CONFIG SET): refused with its reason.
pub fn multi_refusal(spec: &CommandSpec, route: &Route) -> Option<String> {
    let name = spec.name.as_str();
    let shown = name.replace('|', " ").to_uppercase();
    match route {
        Route::Reject(e) if e == CROSSSLOT => None,
        Route::Reject(e) => Some(e.clone()),
        Route::Slot(_) | Route::AnyMaster | Route::SplitKeys | Route::Blocking(_) => None,
        // Runs inside EXEC on the transaction's master (see `super::wait::check_multi`).
        Route::Wait => None,
        Route::Transaction => None,
        // TIME: the transaction node's clock is a true time for the transaction.
        Route::AllMasters(Merge::Latest) => None,
        // The transaction's master answers these as the proxy would (SELECT 0 is the only
        // database either has; COMMAND comes from the same Redis 7.0 table).
        Route::Local
            if matches!(name, "ping" | "echo" | "select") || name.starts_with("command") =>
        {
            None
        }
        Route::Local => Some(format!(
            "ERR slotproxy: {shown} is answered by the proxy itself and cannot be part of a \
             transaction"
        )),
        Route::AllMasters(_) | Route::Config => Some(format!(
            "ERR slotproxy: {shown} runs on every node and cannot be part of a transaction, \
             which runs on one node"
        )),
        Route::PubSub | Route::PubSubHome => Some(format!(
            "ERR slotproxy: {shown} cannot be part of a transaction through the proxy \
             (subscriptions and channel counts live on the proxy's pub/sub connections)"
        )),
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
        assert_eq!(
            route_of(&["SCRIPT", "LOAD", "return 1"]),
            Route::AllMasters(Merge::Everywhere)
        );
        assert_eq!(
            route_of(&["SCRIPT", "KILL"]),
            Route::AllMasters(Merge::Kill)
        );
        assert_eq!(route_of(&["SLOWLOG", "LEN"]), Route::AllMasters(Merge::Sum));
        assert_eq!(
            route_of(&["MEMORY", "STATS"]),
            Route::Reject(one_node_only("memory|stats"))
        );
        assert_eq!(
            route_of(&["MEMORY", "USAGE", "k"]),
            Route::Slot(key_slot(b"k"))
        );
        assert_eq!(route_of(&["ROLE"]), Route::Reject(one_node_only("role")));
        assert_eq!(route_of(&["OBJECT", "HELP"]), Route::AnyMaster);
        assert_eq!(route_of(&["WAIT", "0", "0"]), Route::Wait);
        assert_eq!(route_of(&["PING"]), Route::Local);
        assert_eq!(route_of(&["MULTI"]), Route::Transaction);
        assert!(matches!(route_of(&["SHUTDOWN"]), Route::Reject(_)));
        assert_eq!(route_of(&["CONFIG", "SET", "a", "b"]), Route::Config);
        assert_eq!(
            route_of(&["CONFIG", "REWRITE"]),
            Route::Reject(one_node_only("config|rewrite"))
        );
        assert_eq!(
            route_of(&["GET"]),
            Route::Reject("ERR wrong number of arguments for 'get' command".into())
        );
    }

    /// A keyless command added to the table must be classified by hand, not fall through to
    /// "any master".
    #[test]
    fn every_keyless_command_is_classified() {
        let table = CommandTable::get();
        let missing: Vec<&str> = table
            .all_specs()
            .filter(|spec| spec.subcommands.is_empty() && !spec.has_keys())
            .filter(|spec| keyless_class(&spec.name).is_none())
            .map(|spec| spec.name.as_str())
            .collect();
        assert!(
            missing.is_empty(),
            "unclassified keyless commands: {missing:?}"
        );
        for (name, _) in KEYLESS {
            assert!(
                table.all_specs().any(|spec| spec.name == *name),
                "{name} is not in the command table"
            );
        }
    }

    #[test]
    fn multi_refuses_what_a_transaction_cannot_carry() {
        let refused = |words: &[&str]| {
            let args: Vec<Bytes> = words
                .iter()
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect();
            let spec = lookup(&args).unwrap();
            multi_refusal(spec, &route(spec, &args))
        };
        assert_eq!(refused(&["GET", "a"]), None);
        assert_eq!(refused(&["PING"]), None);
        assert_eq!(refused(&["TIME"]), None);
        assert_eq!(refused(&["BLPOP", "a", "0"]), None);
        assert_eq!(refused(&["WAIT", "1", "0"]), None);
        assert_eq!(refused(&["SET", "a", "1", "GET"]), None);
        assert!(refused(&["DBSIZE"]).unwrap().contains("every node"));
        assert!(refused(&["CONFIG", "SET", "a", "b"])
            .unwrap()
            .contains("every node"));
        assert!(refused(&["CLIENT", "SETNAME", "x"])
            .unwrap()
            .contains("proxy itself"));
        assert!(refused(&["SUBSCRIBE", "c"]).is_some());
        assert!(refused(&["PUBLISH", "c", "m"]).is_some());
        assert_eq!(refused(&["SHUTDOWN"]), Some(unsupported("shutdown")));
    }
}
