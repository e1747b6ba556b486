//! Which commands the fuzzer runs, and how their replies are compared.
//!
//! Every list here is a decision with a reason; a command missing from all lists is run and
//! compared byte for byte (after [`Comparison::Unordered`] sorting where that applies).

/// Commands never generated, with why. Names are command-table names (`container|sub`); a
/// container name excludes all its subcommands.
pub const EXCLUDED: &[(&str, &str)] = &[
    ("shutdown", "stops the server by design"),
    ("debug", "redis-server 7.0 refuses it by default (enable-debug-command no); its subcommands crash, sleep, reload or restart the server by design"),
    ("monitor", "turns the connection into an endless event stream"),
    ("subscribe", "turns the connection into a push-only stream"),
    ("psubscribe", "turns the connection into a push-only stream"),
    ("ssubscribe", "turns the connection into a push-only stream"),
    ("sync", "turns the connection into a replication stream"),
    ("psync", "turns the connection into a replication stream"),
    ("replconf", "replication handshake; meaningless without a replica"),
    ("replicaof", "makes the server a replica of a host from the alphabet, wiping its data"),
    ("slaveof", "makes the server a replica of a host from the alphabet, wiping its data"),
    ("failover", "starts a replication failover"),
    ("client|pause", "pauses every client, the fuzzer's PING included"),
    ("client|unpause", "only meaningful after CLIENT PAUSE, which is excluded"),
    ("client|kill", "can kill the fuzzer's own connections"),
    ("client|reply", "OFF/SKIP suppress replies, which the fuzzer would take for a hang"),
    ("quit", "closes the fuzzer's own connection by design"),
    ("unsubscribe", "one reply per channel argument (pushes in RESP3); pubsub has its own tests"),
    ("punsubscribe", "one reply per pattern argument (pushes in RESP3); pubsub has its own tests"),
    ("sunsubscribe", "one reply per channel argument (pushes in RESP3); pubsub has its own tests"),
    ("migrate", "opens connections to hosts and ports from the alphabet, with huge timeouts"),
    ("save", "writes an RDB file into the server's working directory"),
    ("bgsave", "writes an RDB file in the background; the reply depends on timing"),
    ("bgrewriteaof", "writes an AOF in the background; the reply depends on timing"),
    ("config|set", "changes server settings that would outlive the case (maxmemory, dir, ...)"),
    ("config|rewrite", "writes the configuration file"),
    ("acl|setuser", "changes users, which outlives the case (the default user could be disabled)"),
    ("acl|deluser", "changes users, which outlives the case"),
    ("acl|load", "reads an ACL file"),
    ("acl|save", "writes an ACL file"),
    ("module", "loads native code into the server"),
    ("pfselftest", "a long self-test of redis-server internals, not a data command"),
    ("bf.reserve", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.add", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.madd", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.insert", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.exists", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.mexists", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.info", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.card", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.scandump", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
    ("bf.loadchunk", "RedisBloom module command: the reference redis-server has no RedisBloom loaded (storage-node/tests/bloom.rs covers it)"),
];

/// Commands excluded only when the fuzzer runs through slotproxy, because the proxy answers
/// them itself or refuses them by design (see `src/proxy/router.rs`), so a standalone
/// redis-server is no reference for them.
pub const EXCLUDED_THROUGH_PROXY: &[(&str, &str)] = &[
    (
        "cluster",
        "the proxy answers CLUSTER itself; a standalone server has cluster mode off",
    ),
    ("readonly", "cluster-mode command, answered by the proxy"),
    ("readwrite", "cluster-mode command, answered by the proxy"),
    ("asking", "cluster-mode command, answered by the proxy"),
    ("config", "the proxy answers CONFIG itself"),
    ("client", "the proxy answers CLIENT itself"),
    ("command", "the proxy answers COMMAND itself"),
    ("select", "a cluster has only database 0"),
    (
        "swapdb",
        "refused by the proxy: a cluster has only database 0",
    ),
    (
        "move",
        "refused by the proxy: a cluster has only database 0",
    ),
    ("acl", "refused by the proxy: node administration"),
    ("latency", "refused by the proxy: node administration"),
    ("slowlog", "refused by the proxy: node administration"),
    ("pfdebug", "refused by the proxy: node administration"),
    ("lastsave", "refused by the proxy: node administration"),
    ("script|kill", "refused by the proxy"),
    ("function|kill", "refused by the proxy"),
    (
        "dbsize",
        "the proxy sums all masters; the prepared keys live in one slot only",
    ),
    ("restore-asking", "refused by the proxy: cluster-internal"),
    (
        "copy",
        "a cluster has only database 0 (COPY ... DB n is refused in cluster mode)",
    ),
    (
        "wait",
        "the proxy's WAIT waits on its backends, a different question",
    ),
    ("role", "the proxy answers for a cluster, not one server"),
    ("info", "the proxy answers INFO itself"),
    ("hello", "the proxy answers HELLO itself"),
    ("reset", "the proxy answers RESET itself"),
];

/// How a reply is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Byte for byte.
    Exact,
    /// Kind only (error or not): the value is random, or depends on time or the instance.
    KindOnly,
    /// The top-level elements are compared as a multiset: the order of hash-table backed
    /// collections depends on a per-process hash seed in redis-server.
    Unordered,
    /// Only the number of top-level elements is compared: which elements a LIMIT keeps out
    /// of an order Redis does not define is itself undefined.
    Length,
}

/// Commands whose reply value is not compared, with why.
pub const KIND_ONLY: &[(&str, &str)] = &[
    ("randomkey", "random"),
    ("spop", "random member"),
    ("srandmember", "random members"),
    ("hrandfield", "random fields"),
    ("zrandmember", "random members"),
    ("info", "instance statistics"),
    ("client", "connection ids, addresses and ages"),
    ("hello", "carries the connection id and server version"),
    ("time", "the clock"),
    ("lastsave", "the clock"),
    ("object|freq", "access history"),
    ("object|idletime", "the clock"),
    ("memory", "allocator-dependent sizes"),
    ("latency", "measured latencies"),
    ("slowlog", "measured durations"),
    (
        "config|get",
        "the two servers are configured differently (port, dir, ...)",
    ),
    ("acl|log", "timestamps"),
    ("acl|genpass", "random"),
    (
        "pttl",
        "milliseconds left depend on when each server ran the step",
    ),
    (
        "pexpiretime",
        "absolute time in milliseconds of each server's clock",
    ),
    ("expiretime", "absolute time of each server's clock"),
    ("scan", "cursor and page layout depend on the hash table"),
    ("hscan", "cursor and page layout depend on the encoding"),
    ("sscan", "cursor and page layout depend on the encoding"),
    ("zscan", "cursor and page layout depend on the encoding"),
    ("xinfo", "idle and seen times"),
    ("xpending", "idle times"),
    ("xautoclaim", "idle times decide which entries are claimed"),
    ("lolwut", "version-dependent art"),
    (
        "function|stats",
        "running-script state and engine statistics",
    ),
    (
        "dump",
        "the serialized encoding is an implementation detail (RESTORE is compared)",
    ),
];

/// Commands whose reply is a collection in hash-table order.
pub const UNORDERED: &[&str] = &[
    "smembers", "sinter", "sunion", "sdiff", "hkeys", "hvals", "hgetall", "keys", "command",
    "acl|cat",
];

/// Commands after which the two servers' data may legitimately differ (a random member was
/// removed), so the rest of the case compares nothing but liveness.
pub const DIVERGING: &[&str] = &["spop"];

fn matches(name: &str, entry: &str) -> bool {
    name == entry
        || name
            .strip_prefix(entry)
            .is_some_and(|rest| rest.starts_with('|'))
}

fn listed<'a>(name: &str, list: &'a [(&'a str, &'a str)]) -> Option<&'a str> {
    list.iter()
        .find(|(entry, _)| matches(name, entry))
        .map(|(_, reason)| *reason)
}

/// Why `name` is never generated, or None if it is.
pub fn exclusion(name: &str, through_proxy: bool) -> Option<&'static str> {
    listed(name, EXCLUDED).or_else(|| {
        through_proxy
            .then(|| listed(name, EXCLUDED_THROUGH_PROXY))
            .flatten()
    })
}

/// How the reply of command `name` (table name, `container|sub`) with arguments `args` is
/// compared.
pub fn comparison(name: &str, args: &[Vec<u8>]) -> Comparison {
    if listed(name, KIND_ONLY).is_some() || takes_id_from_clock(name, args) {
        Comparison::KindOnly
    } else if UNORDERED.iter().any(|entry| matches(name, entry)) {
        Comparison::Unordered
    } else if matches!(name, "sort" | "sort_ro") {
        SortOptions::of(args).comparison()
    } else {
        Comparison::Exact
    }
}

/// The SORT options that decide whether its order is defined, read from the words of a
/// request (of a script's request too, so only as a hint: any `BY` word counts).
struct SortOptions {
    /// The last `BY` pattern.
    by: Option<Vec<u8>>,
    alpha: bool,
    limit: bool,
    store: bool,
}

impl SortOptions {
    fn of(args: &[Vec<u8>]) -> SortOptions {
        let word = |w: &[u8]| args.iter().any(|a| a.eq_ignore_ascii_case(w));
        let by = args
            .windows(2)
            .rfind(|pair| pair[0].eq_ignore_ascii_case(b"by"))
            .map(|pair| pair[1].clone());
        SortOptions {
            by,
            alpha: word(b"alpha"),
            limit: word(b"limit"),
            store: word(b"store"),
        }
    }

    /// Redis's SORT leaves two orders undefined. A BY pattern without `*` means no sorting:
    /// a set comes in its hash table's order (seeded per process). BY a pattern with ALPHA
    /// compares the looked-up values only, so elements whose values are equal (or all
    /// missing) are tied and stay where its quicksort (`pqsort` under LIMIT) leaves them.
    /// Every other SORT is deterministic (numeric ties fall back to the elements' bytes)
    /// and compared byte for byte.
    fn undefined_order(&self) -> bool {
        self.by
            .as_ref()
            .is_some_and(|pattern| !pattern.contains(&b'*') || self.alpha)
    }

    fn comparison(&self) -> Comparison {
        match (self.undefined_order(), self.limit) {
            (false, _) => Comparison::Exact,
            (true, false) => Comparison::Unordered,
            (true, true) => Comparison::Length,
        }
    }

    /// STORE of tied elements writes a list whose order differs between the servers. (A set
    /// that is not sorted is sorted ALPHA for STORE, so only ties under BY ... ALPHA count.)
    fn stores_undefined_order(&self) -> bool {
        self.store && self.alpha && self.by.as_ref().is_some_and(|p| p.contains(&b'*'))
    }
}

/// XADD with `*` takes its id from the clock: each server picks another one (they differ by
/// the milliseconds between the two servers' steps), so the reply is compared by kind and
/// the streams differ from there on.
fn takes_id_from_clock(name: &str, args: &[Vec<u8>]) -> bool {
    name == "xadd" && args.iter().any(|a| a == b"*")
}

/// Whether running `name` ends value comparison for the rest of the case.
pub fn diverges(name: &str, args: &[Vec<u8>]) -> bool {
    let clock_id = takes_id_from_clock(name, args);
    let sort_store = name == "sort" && SortOptions::of(args).stores_undefined_order();
    clock_id || sort_store || DIVERGING.iter().any(|entry| matches(name, entry))
}

/// The command family a difference is reported under: the docs group when the table has
/// one (string, list, sorted-set, scripting, ...), else the command name.
pub fn family(spec: &slotproxy::cluster::CommandSpec) -> String {
    spec.docs()
        .as_ref()
        .and_then(|d| d.map_get("group"))
        .and_then(|g| g.as_bytes())
        .map(|g| String::from_utf8_lossy(g).into_owned())
        .unwrap_or_else(|| spec.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(words: &[&str]) -> Comparison {
        let args: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        comparison(&words[0].to_ascii_lowercase(), &args)
    }

    #[test]
    fn sort_orders_redis_defines_are_compared_byte_for_byte() {
        assert_eq!(how(&["SORT", "k"]), Comparison::Exact);
        assert_eq!(
            how(&["SORT", "k", "ALPHA", "LIMIT", "0", "2"]),
            Comparison::Exact
        );
        // Numeric weights: ties fall back to the elements' bytes.
        assert_eq!(
            how(&["SORT_RO", "k", "BY", "w_*", "LIMIT", "0", "2"]),
            Comparison::Exact
        );
    }

    #[test]
    fn sort_orders_redis_leaves_undefined_are_compared_as_far_as_defined() {
        assert_eq!(how(&["SORT", "k", "BY", "nosort"]), Comparison::Unordered);
        assert_eq!(
            how(&["SORT", "k", "BY", "w_*", "ALPHA"]),
            Comparison::Unordered
        );
        assert_eq!(
            how(&["SORT", "k", "BY", "w_*", "LIMIT", "0", "2", "ALPHA"]),
            Comparison::Length
        );
        assert_eq!(
            how(&["SORT_RO", "k", "by", "", "limit", "1", "1"]),
            Comparison::Length
        );
    }

    #[test]
    fn only_a_stored_sort_of_ties_ends_the_comparison() {
        let args = |words: &[&str]| -> Vec<Vec<u8>> {
            words.iter().map(|w| w.as_bytes().to_vec()).collect()
        };
        assert!(diverges(
            "sort",
            &args(&["SORT", "k", "BY", "w_*", "ALPHA", "STORE", "d"])
        ));
        assert!(!diverges(
            "sort",
            &args(&["SORT", "k", "BY", "nosort", "STORE", "d"])
        ));
        assert!(!diverges(
            "sort",
            &args(&["SORT", "k", "BY", "w_*", "STORE", "d"])
        ));
    }
}
