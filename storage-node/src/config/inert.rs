//! Redis 7.0 settings the node accepts but that change nothing here: documented no-ops.
//!
//! Clients and tools send these (redis.conf lines, `CONFIG SET jemalloc-bg-thread ...`, a test suite
//! tuning `list-compress-depth`), and Redis 7.0 accepts them, so refusing them would break
//! those clients. Each is checked exactly as Redis checks it (its kind, range and whether
//! CONFIG SET may change it, taken from a real redis-server 7.0), CONFIG GET shows what was
//! set (or Redis's default, in Redis's format), and every time one is set the node logs
//! that it has no effect, so nobody is misled into thinking it works. Why each is inert:
//!
//! - persistence, replication, TLS, syslog, process and OS tuning, active
//!   defragmentation, lazy freeing: the node has none of these mechanisms
//!   (`latency-tracking` and its percentiles, for INFO latencystats, are honoured, and so
//!   is `lazyfree-lazy-expire`, which logs expired keys as UNLINK; so are the replica
//!   side's settings, in `super::replica`);
//! - `replica-ignore-maxmemory`: a replica never evicts on its own (the `yes` default);
//!   the memory settings themselves are honoured (`super::memory`);
//! - `list-compress-depth`: the node never compresses list nodes; OBJECT ENCODING is
//!   `quicklist` whatever the depth, as in Redis 7.0;
//! - `cluster-announce-*`, `cluster-allow-pubsubshard-when-down`, `cluster-link-sendbuf-limit`,
//!   `cluster-preferred-endpoint-type`: the node's cluster bus does not use them (the
//!   failover and replica migration settings are honoured, in `super::cluster_ha`).
//!
//! Settings the node does honour are in [`super::params::PARAMS`]; a setting moves there
//! when the node starts to honour it.

use super::params::{Access, Kind, Param};

const INT_MAX: i64 = i32::MAX as i64;

const fn inert(name: &'static str, kind: Kind, access: Access, default: &'static str) -> Inert {
    Inert {
        param: Param { name, kind, access },
        default,
    }
}

/// A setting accepted as a no-op, with the value Redis 7.0 starts with.
#[derive(Debug)]
pub struct Inert {
    pub param: Param,
    /// As CONFIG GET shows it.
    pub default: &'static str,
}

/// Every inert setting, by its Redis 7.0 name.
pub const INERT: &[Inert] = &[
    inert(
        "active-defrag-cycle-max",
        Kind::Int { min: 1, max: 99 },
        Access::Mutable,
        "25",
    ),
    inert(
        "active-defrag-cycle-min",
        Kind::Int { min: 1, max: 99 },
        Access::Mutable,
        "1",
    ),
    inert(
        "active-defrag-ignore-bytes",
        Kind::Memory {
            min: 1,
            max: i64::MAX,
        },
        Access::Mutable,
        "104857600",
    ),
    inert(
        "active-defrag-max-scan-fields",
        Kind::Int {
            min: 1,
            max: i64::MAX,
        },
        Access::Mutable,
        "1000",
    ),
    inert(
        "active-defrag-threshold-lower",
        Kind::Int { min: 0, max: 1000 },
        Access::Mutable,
        "10",
    ),
    inert(
        "active-defrag-threshold-upper",
        Kind::Int { min: 0, max: 1000 },
        Access::Mutable,
        "100",
    ),
    inert(
        "active-expire-effort",
        Kind::Int { min: 1, max: 10 },
        Access::Mutable,
        "1",
    ),
    inert("activedefrag", Kind::Bool, Access::Mutable, "no"),
    inert("activerehashing", Kind::Bool, Access::Mutable, "yes"),
    inert("always-show-logo", Kind::Bool, Access::Immutable, "no"),
    inert("aof-disable-auto-gc", Kind::Bool, Access::Mutable, "no"),
    inert(
        "aof-rewrite-incremental-fsync",
        Kind::Bool,
        Access::Mutable,
        "yes",
    ),
    inert("aof_rewrite_cpulist", Kind::Text, Access::Immutable, ""),
    inert("bgsave_cpulist", Kind::Text, Access::Immutable, ""),
    inert("bind-source-addr", Kind::Text, Access::Mutable, ""),
    inert("bio_cpulist", Kind::Text, Access::Immutable, ""),
    inert(
        "cluster-allow-pubsubshard-when-down",
        Kind::Bool,
        Access::Mutable,
        "yes",
    ),
    inert(
        "cluster-announce-bus-port",
        Kind::Int { min: 0, max: 65535 },
        Access::Mutable,
        "0",
    ),
    inert("cluster-announce-hostname", Kind::Text, Access::Mutable, ""),
    inert("cluster-announce-ip", Kind::Text, Access::Mutable, ""),
    inert(
        "cluster-announce-port",
        Kind::Int { min: 0, max: 65535 },
        Access::Mutable,
        "0",
    ),
    inert(
        "cluster-announce-tls-port",
        Kind::Int { min: 0, max: 65535 },
        Access::Mutable,
        "0",
    ),
    inert(
        "cluster-link-sendbuf-limit",
        Kind::UnsignedMemory,
        Access::Mutable,
        "0",
    ),
    inert(
        "cluster-preferred-endpoint-type",
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        Access::Mutable,
        "ip",
    ),
    inert("crash-log-enabled", Kind::Bool, Access::Mutable, "yes"),
    inert("crash-memcheck-enabled", Kind::Bool, Access::Mutable, "yes"),
    inert("disable-thp", Kind::Bool, Access::Immutable, "yes"),
    inert("dynamic-hz", Kind::Bool, Access::Mutable, "yes"),
    inert("enable-module-command", Kind::Bool, Access::Immutable, "no"),
    inert(
        "enable-protected-configs",
        Kind::Bool,
        Access::Immutable,
        "no",
    ),
    inert("ignore-warnings", Kind::Text, Access::Mutable, ""),
    inert("io-threads-do-reads", Kind::Bool, Access::Immutable, "no"),
    inert("jemalloc-bg-thread", Kind::Bool, Access::Mutable, "yes"),
    inert(
        "lazyfree-lazy-server-del",
        Kind::Bool,
        Access::Mutable,
        "no",
    ),
    inert("lazyfree-lazy-user-del", Kind::Bool, Access::Mutable, "no"),
    inert(
        "lazyfree-lazy-user-flush",
        Kind::Bool,
        Access::Mutable,
        "no",
    ),
    inert(
        "list-compress-depth",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
        "0",
    ),
    inert(
        "oom-score-adj",
        Kind::Enum(&["no", "yes", "relative", "absolute"]),
        Access::Mutable,
        "no",
    ),
    inert(
        "oom-score-adj-values",
        Kind::Words,
        Access::Mutable,
        "0 200 800",
    ),
    inert(
        "proc-title-template",
        Kind::Text,
        Access::Mutable,
        "{title} {listen-addr} {server-mode}",
    ),
    inert(
        "propagation-error-behavior",
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        Access::Mutable,
        "ignore",
    ),
    inert("rdb-del-sync-files", Kind::Bool, Access::Mutable, "no"),
    inert(
        "rdb-save-incremental-fsync",
        Kind::Bool,
        Access::Mutable,
        "yes",
    ),
    inert(
        "repl-disable-tcp-nodelay",
        Kind::Bool,
        Access::Mutable,
        "no",
    ),
    inert(
        "replica-ignore-disk-write-errors",
        Kind::Bool,
        Access::Mutable,
        "no",
    ),
    inert(
        "replica-ignore-maxmemory",
        Kind::Bool,
        Access::Mutable,
        "yes",
    ),
    inert("replica-lazy-flush", Kind::Bool, Access::Mutable, "no"),
    inert(
        "sanitize-dump-payload",
        Kind::Enum(&["no", "yes", "clients"]),
        Access::Mutable,
        "no",
    ),
    inert("server_cpulist", Kind::Text, Access::Immutable, ""),
    inert("set-proc-title", Kind::Bool, Access::Immutable, "yes"),
    inert(
        "shutdown-on-sigint",
        Kind::Enum(&["default", "save", "nosave", "now", "force"]),
        Access::Mutable,
        "default",
    ),
    inert(
        "shutdown-on-sigterm",
        Kind::Enum(&["default", "save", "nosave", "now", "force"]),
        Access::Mutable,
        "default",
    ),
    inert(
        "shutdown-timeout",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
        "10",
    ),
    inert(
        "socket-mark-id",
        Kind::Int {
            min: i64::MIN,
            max: i64::MAX,
        },
        Access::Immutable,
        "0",
    ),
    inert("syslog-enabled", Kind::Bool, Access::Immutable, "no"),
    inert(
        "syslog-facility",
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
        ]),
        Access::Immutable,
        "local0",
    ),
    inert("syslog-ident", Kind::Text, Access::Immutable, "redis"),
    inert(
        "tls-auth-clients",
        Kind::Enum(&["no", "yes", "optional"]),
        Access::Mutable,
        "yes",
    ),
    inert("tls-ca-cert-dir", Kind::Text, Access::Mutable, ""),
    inert("tls-ca-cert-file", Kind::Text, Access::Mutable, ""),
    inert("tls-cert-file", Kind::Text, Access::Mutable, ""),
    inert("tls-ciphers", Kind::Text, Access::Mutable, ""),
    inert("tls-ciphersuites", Kind::Text, Access::Mutable, ""),
    inert("tls-client-cert-file", Kind::Text, Access::Mutable, ""),
    inert("tls-client-key-file", Kind::Text, Access::Mutable, ""),
    inert("tls-client-key-file-pass", Kind::Text, Access::Mutable, ""),
    inert("tls-cluster", Kind::Bool, Access::Mutable, "no"),
    inert("tls-dh-params-file", Kind::Text, Access::Mutable, ""),
    inert("tls-key-file", Kind::Text, Access::Mutable, ""),
    inert("tls-key-file-pass", Kind::Text, Access::Mutable, ""),
    inert(
        "tls-port",
        Kind::Int { min: 0, max: 65535 },
        Access::Mutable,
        "0",
    ),
    inert(
        "tls-prefer-server-ciphers",
        Kind::Bool,
        Access::Mutable,
        "no",
    ),
    inert("tls-protocols", Kind::Text, Access::Mutable, ""),
    inert("tls-replication", Kind::Bool, Access::Mutable, "no"),
    inert(
        "tls-session-cache-size",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
        "20480",
    ),
    inert(
        "tls-session-cache-timeout",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
        "300",
    ),
    inert("tls-session-caching", Kind::Bool, Access::Mutable, "yes"),
    inert("unixsocket", Kind::Text, Access::Immutable, ""),
    inert("unixsocketperm", Kind::Text, Access::Immutable, "0"),
];

/// Old names of inert settings that Redis 7.0 still accepts, with the setting each stands
/// for; CONFIG GET with a pattern lists them too.
pub const INERT_ALIASES: &[(&str, &str)] = &[
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-priority", "replica-priority"),
    ("slave-read-only", "replica-read-only"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slaveof", "replicaof"),
];

/// An inert setting by its canonical name, ignoring ASCII case.
pub fn find(name: &str) -> Option<&'static Inert> {
    INERT
        .iter()
        .find(|i| i.param.name.eq_ignore_ascii_case(name))
}

/// Logs that a setting was accepted but does nothing here (once per setting at start, and
/// at every CONFIG SET of it).
pub fn report(name: &str, value: &str) {
    crate::log::warning!(
        "setting '{name}' '{value}' accepted, has no effect here (kept for compatibility with Redis 7.0)"
    );
}

/// Reports every inert setting the configuration set, once each, at start.
pub fn report_all(config: &super::Config) {
    for (name, value) in &config.inert {
        report(name, value);
    }
}
