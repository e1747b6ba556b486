//! Every keyless command of the Redis 7.0 command table, classified by hand.
//!
//! A command without keys has no slot to route by, and many describe the one server that
//! runs them (SLOWLOG, MEMORY STATS, ROLE...). Through the proxy the client sees one server
//! made of several nodes, so each such command either merges every master's answer in a
//! stated way ([`Merge`]), is answered by the proxy, is node-independent (help texts,
//! scripts without keys), or is refused. Nothing falls through to "one arbitrary master":
//! the unit test `every_keyless_command_is_classified` fails for a keyless command missing
//! here. The README's compatibility table is the user-facing copy of this table.

/// How the replies of every master become one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Integers added (DBSIZE, SLOWLOG LEN, LATENCY RESET).
    Sum,
    /// Arrays concatenated (KEYS).
    Concat,
    /// Arrays concatenated without repeats (PUBSUB SHARDCHANNELS).
    Union,
    /// SCAN: the cursor names the master.
    Scan,
    /// One of the masters' keys, at random (RANDOMKEY).
    RandomKey,
    /// A change every master must make; the first reply stands for all, the first error
    /// wins (FLUSHALL, SCRIPT LOAD, MEMORY PURGE, SLOWLOG RESET...).
    Everywhere,
    /// Replies that must be identical on every master (FUNCTION LIST, FUNCTION DUMP); when
    /// they are not, an error says so rather than showing one node's view.
    Identical,
    /// Flags ANDed position by position (SCRIPT EXISTS: loaded on every master).
    And,
    /// `name count` pairs, counts added per name (PUBSUB SHARDNUMSUB).
    SumPairs,
    /// Slow log entries of every master, newest first, cut to the requested count.
    SlowlogGet,
    /// The smallest integer (LASTSAVE: every master has saved since then).
    Min,
    /// The latest `[seconds, microseconds]` (TIME).
    Latest,
    /// SCRIPT KILL / FUNCTION KILL: `+OK` if some master stopped its script, otherwise the
    /// most telling error (UNKILLABLE before NOTBUSY). Sent on fresh connections, since the
    /// shared one may be queued behind the very script to stop.
    Kill,
}

/// What a keyless command is through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyless {
    /// Answered by the proxy itself (`answered_here.rs`).
    Local,
    /// CONFIG GET / SET / RESETSTAT (`config_command.rs`).
    Config,
    /// MULTI, EXEC, DISCARD, UNWATCH.
    Transaction,
    /// SUBSCRIBE and friends.
    PubSub,
    /// SPUBLISH: to the master of the shard channel's slot.
    ShardPublish,
    /// On the master holding the proxy's channel subscriptions.
    PubSubHome,
    /// Sent to every master and merged.
    AllMasters(Merge),
    /// The same answer from any node: help texts, LOLWUT (the software's version art).
    AnyNode,
    /// WAIT: counted on the masters the client wrote to (see `super::super::wait`).
    Wait,
    /// Administration of one node, or a figure that only makes sense per node: refused.
    OneNode,
    /// Makes no sense through a proxy (replication, connection-level state of shared
    /// connections, node-wide destructive operations): refused.
    Unsupported,
}

use Keyless::*;
use Merge::*;

/// Full names (`container|sub`) first; a bare container name covers all its subcommands
/// not listed by full name.
pub const KEYLESS: &[(&str, Keyless)] = &[
    // The proxy answers these (see local.rs for the exact subcommands it serves).
    ("ping", Local),
    ("echo", Local),
    ("quit", Local),
    ("reset", Local),
    ("hello", Local),
    ("auth", Local),
    ("select", Local),
    // CLIENT and CLUSTER: the subcommands the proxy answers; the others are refused
    // (CLIENT TRACKING needs invalidations from every node, which the proxy does not relay;
    // CLUSTER administration belongs to the nodes), so COMMAND does not list them.
    ("client|id", Local),
    ("client|setname", Local),
    ("client|getname", Local),
    ("client|info", Local),
    ("client|list", Local),
    ("client|kill", Local),
    ("client|reply", Local),
    ("client|no-evict", Local),
    ("client", Unsupported),
    ("command", Local),
    ("info", Local),
    ("cluster|keyslot", Local),
    ("cluster|info", Local),
    ("cluster|slots", Local),
    ("cluster|shards", Local),
    ("cluster|nodes", Local),
    ("cluster|myid", Local),
    ("cluster|countkeysinslot", Local),
    ("cluster|getkeysinslot", Local),
    ("cluster", Unsupported),
    ("readonly", Local),
    ("readwrite", Local),
    ("asking", Local),
    ("config|get", Config),
    ("config|set", Config),
    ("config|resetstat", Config),
    ("config|help", AnyNode),
    ("config|rewrite", OneNode),
    ("multi", Transaction),
    ("exec", Transaction),
    ("discard", Transaction),
    ("unwatch", Transaction),
    ("subscribe", PubSub),
    ("unsubscribe", PubSub),
    ("psubscribe", PubSub),
    ("punsubscribe", PubSub),
    ("ssubscribe", PubSub),
    ("sunsubscribe", PubSub),
    ("spublish", ShardPublish),
    ("publish", PubSubHome),
    ("pubsub|channels", PubSubHome),
    ("pubsub|numsub", PubSubHome),
    ("pubsub|numpat", PubSubHome),
    ("pubsub|shardchannels", AllMasters(Union)),
    ("pubsub|shardnumsub", AllMasters(SumPairs)),
    ("pubsub|help", AnyNode),
    ("dbsize", AllMasters(Sum)),
    ("keys", AllMasters(Concat)),
    ("scan", AllMasters(Scan)),
    ("randomkey", AllMasters(RandomKey)),
    ("flushall", AllMasters(Everywhere)),
    ("flushdb", AllMasters(Everywhere)),
    ("script|load", AllMasters(Everywhere)),
    ("script|flush", AllMasters(Everywhere)),
    ("script|exists", AllMasters(And)),
    ("script|kill", AllMasters(Kill)),
    ("script|help", AnyNode),
    ("script|debug", Unsupported),
    ("function|load", AllMasters(Everywhere)),
    ("function|delete", AllMasters(Everywhere)),
    ("function|flush", AllMasters(Everywhere)),
    ("function|restore", AllMasters(Everywhere)),
    ("function|list", AllMasters(Identical)),
    ("function|dump", AllMasters(Identical)),
    ("function|kill", AllMasters(Kill)),
    ("function|stats", OneNode),
    ("function|help", AnyNode),
    ("slowlog|get", AllMasters(SlowlogGet)),
    ("slowlog|len", AllMasters(Sum)),
    ("slowlog|reset", AllMasters(Everywhere)),
    ("slowlog|help", AnyNode),
    ("latency|reset", AllMasters(Sum)),
    ("latency|help", AnyNode),
    ("latency", OneNode),
    ("memory|purge", AllMasters(Everywhere)),
    ("memory|help", AnyNode),
    ("memory", OneNode),
    ("lastsave", AllMasters(Min)),
    ("time", AllMasters(Latest)),
    ("role", OneNode),
    ("debug", OneNode),
    ("module|help", AnyNode),
    ("module", OneNode),
    ("acl|help", AnyNode),
    ("acl", Unsupported),
    ("object|help", AnyNode),
    ("xgroup|help", AnyNode),
    ("xinfo|help", AnyNode),
    ("lolwut", AnyNode),
    ("wait", Wait),
    ("pfselftest", OneNode),
    ("monitor", Unsupported),
    ("sync", Unsupported),
    ("psync", Unsupported),
    ("replconf", Unsupported),
    ("shutdown", Unsupported),
    ("slaveof", Unsupported),
    ("replicaof", Unsupported),
    ("failover", Unsupported),
    ("swapdb", Unsupported),
    ("save", Unsupported),
    ("bgsave", Unsupported),
    ("bgrewriteaof", Unsupported),
];

/// The class of a keyless command by its full table name, if listed.
pub fn keyless_class(full_name: &str) -> Option<Keyless> {
    let top = full_name.split('|').next().unwrap_or(full_name);
    [full_name, top]
        .iter()
        .find_map(|name| KEYLESS.iter().find(|(n, _)| n == name).map(|&(_, k)| k))
}
