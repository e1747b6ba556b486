//! The table of settings: each setting's name, whether CONFIG SET may change it, how its
//! value is read and how CONFIG GET shows it.
//!
//! Value syntax and error texts are Redis 7.0's (`config.c`): integers are read as strictly as
//! `string2ll`, memory sizes accept `b`/`k`/`kb`/`m`/`mb`/`g`/`gb`, and out-of-range values say
//! `argument must be between MIN and MAX inclusive`. The config file reader, the command line
//! and CONFIG SET all go through [`apply`], so they cannot disagree.

pub use super::values::parse_memory;
pub(super) use super::values::{boolean, number, one, strtoll_whole, words};
use super::values::{choice, db_filename, memory_or_percent, percentiles, save_points};
use super::{aof, checks, cluster_ha, inert, memory, repl, replica, Config};
use crate::server::protection::ProtectedAction;

/// Whether CONFIG SET may change a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Mutable,
    /// Only at startup (`can't set immutable config`).
    Immutable,
    /// Redis refuses these unless `enable-protected-configs` allows it, which is off by
    /// default; the node does not offer that switch (`can't set protected config`).
    Protected,
}

/// How a setting's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    Memory {
        min: i64,
        max: i64,
    },
    /// A memory size Redis keeps unsigned (`maxmemory`): up to 2^64-1, huge values saturate.
    UnsignedMemory,
    /// A memory size, or a percentage (`5%`) up to `max_percent` (`maxmemory-clients`).
    MemoryOrPercent {
        max_percent: i64,
    },
    Bool,
    Enum(&'static [&'static str]),
    Text,
    /// Several words: `save` and `bind`.
    Words,
}

/// One setting.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub access: Access,
}

const INT_MAX: i64 = i32::MAX as i64;
const MB: i64 = 1024 * 1024;
const SUPERVISORS: &[&str] = &["upstart", "systemd", "auto", "no"];
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];

/// A table entry; every settings module's table is written with this.
pub(super) const fn param(name: &'static str, kind: Kind, access: Access) -> Param {
    Param { name, kind, access }
}

/// Every setting the node honours. Settings the node would only pretend to honour are left
/// out, so CONFIG GET answers nothing for them rather than a misleading value.
pub const PARAMS: &[Param] = &[
    param("port", Kind::Int { min: 0, max: 65535 }, Access::Immutable),
    param("bind", Kind::Words, Access::Immutable),
    param("requirepass", Kind::Text, Access::Mutable),
    param("protected-mode", Kind::Bool, Access::Mutable),
    param(
        "enable-debug-command",
        Kind::Enum(ProtectedAction::NAMES),
        Access::Immutable,
    ),
    param("dir", Kind::Text, Access::Protected),
    param("dbfilename", Kind::Text, Access::Protected),
    param("rdbcompression", Kind::Bool, Access::Mutable),
    param("rdbchecksum", Kind::Bool, Access::Immutable),
    param("stop-writes-on-bgsave-error", Kind::Bool, Access::Mutable),
    param("lazyfree-lazy-expire", Kind::Bool, Access::Mutable),
    param(
        "databases",
        Kind::Int {
            min: 1,
            max: INT_MAX,
        },
        Access::Immutable,
    ),
    param(
        "maxclients",
        Kind::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        Access::Mutable,
    ),
    param(
        "proto-max-bulk-len",
        Kind::Memory {
            min: MB,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "client-query-buffer-limit",
        Kind::Memory {
            min: MB,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "hz",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param(
        "timeout",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param(
        "tcp-backlog",
        Kind::Int {
            min: i64::MIN,
            max: i64::MAX,
        },
        Access::Immutable,
    ),
    param(
        "tcp-keepalive",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param("logfile", Kind::Text, Access::Immutable),
    param("loglevel", Kind::Enum(LOGLEVELS), Access::Mutable),
    param("daemonize", Kind::Bool, Access::Immutable),
    param("pidfile", Kind::Text, Access::Immutable),
    param("supervised", Kind::Enum(SUPERVISORS), Access::Immutable),
    param(
        "io-threads",
        Kind::Int { min: 1, max: 128 },
        Access::Immutable,
    ),
    // Not a Redis setting: the node's busy polling (`server::busy_poll`), 0 to turn it off.
    param(
        "busy-poll-usecs",
        Kind::Int {
            min: 0,
            max: 1_000_000,
        },
        Access::Mutable,
    ),
    param("save", Kind::Words, Access::Mutable),
    param(
        "busy-reply-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "lua-time-limit",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param("appendonly", Kind::Bool, Access::Mutable),
    param("notify-keyspace-events", Kind::Text, Access::Mutable),
    param("client-output-buffer-limit", Kind::Words, Access::Mutable),
    param("cluster-enabled", Kind::Bool, Access::Immutable),
    param("cluster-config-file", Kind::Text, Access::Immutable),
    param(
        "cluster-port",
        Kind::Int { min: 0, max: 65535 },
        Access::Immutable,
    ),
    param(
        "cluster-node-timeout",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param("cluster-require-full-coverage", Kind::Bool, Access::Mutable),
    param(
        "set-max-intset-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "hll-sparse-max-bytes",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "zset-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "zset-max-listpack-value",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "hash-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "hash-max-listpack-value",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "stream-node-max-bytes",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "stream-node-max-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param("latency-tracking", Kind::Bool, Access::Mutable),
    param(
        "slowlog-log-slower-than",
        Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "latency-monitor-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "slowlog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "tracking-table-max-keys",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "latency-tracking-info-percentiles",
        Kind::Words,
        Access::Mutable,
    ),
    param(
        "list-max-listpack-size",
        Kind::Int {
            min: i32::MIN as i64,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
];

/// Old names Redis 7.0 still accepts (from before listpacks replaced ziplists), each with
/// the setting it stands for. CONFIG GET with a pattern lists them beside the real names,
/// as Redis does.
pub const ALIASES: &[(&str, &str)] = &[
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
];

/// The setting an old name stands for (or the name itself).
fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .chain(inert::INERT_ALIASES)
        .chain(cluster_ha::ALIASES)
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |(_, target)| target)
}

/// Names of every setting, as CONFIG GET matches patterns against them (aliases and the
/// accepted no-ops of `config::inert` included).
pub fn names() -> impl Iterator<Item = &'static str> {
    PARAMS
        .iter()
        .map(|p| p.name)
        .chain(ALIASES.iter().map(|&(alias, _)| alias))
        .chain(aof::PARAMS.iter().map(|p| p.name))
        .chain(memory::PARAMS.iter().map(|p| p.name))
        .chain(repl::PARAMS.iter().map(|p| p.name))
        .chain(replica::PARAMS.iter().map(|p| p.name))
        .chain(super::acl::PARAMS.iter().map(|p| p.name))
        .chain(cluster_ha::PARAMS.iter().map(|p| p.name))
        .chain(cluster_ha::ALIASES.iter().map(|&(alias, _)| alias))
        .chain(inert::INERT.iter().map(|i| i.param.name))
        .chain(inert::INERT_ALIASES.iter().map(|&(alias, _)| alias))
}

/// Every setting once, by its canonical name: the honoured ones first, then the inert.
pub fn all() -> impl Iterator<Item = &'static Param> {
    PARAMS
        .iter()
        .chain(aof::PARAMS)
        .chain(memory::PARAMS)
        .chain(repl::PARAMS)
        .chain(replica::PARAMS)
        .chain(super::acl::PARAMS)
        .chain(cluster_ha::PARAMS)
        .chain(inert::INERT.iter().map(|i| &i.param))
}

/// A setting by name or alias, ignoring ASCII case.
pub fn find(name: &str) -> Option<&'static Param> {
    let name = canonical(name);
    all().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Checks a value for an inert setting as Redis would and stores it in the form CONFIG GET
/// shows. Saying that it has no effect is left to the caller ([`inert::report`]): at start
/// the log is not open yet while the file is read.
fn apply_inert(config: &mut Config, param: &Param, values: &[String]) -> Result<(), String> {
    let shown = checked_value(param, values)?;
    config.inert.insert(param.name, shown);
    Ok(())
}

/// A value checked against its setting's kind, in the form CONFIG GET shows.
fn checked_value(param: &Param, values: &[String]) -> Result<String, String> {
    Ok(match param.kind {
        _ if checks::applies(param.name) => checks::check(param, values)?,
        Kind::Int { .. } | Kind::Memory { .. } => number(param.kind, values)?.to_string(),
        Kind::MemoryOrPercent { max_percent } => memory_or_percent(max_percent, values)?,
        Kind::UnsignedMemory => parse_memory(one(values)?)
            .ok_or("argument must be a memory value")?
            .to_string(),
        Kind::Bool => yes_no(boolean(values)?),
        Kind::Enum(options) => choice(options, values)?,
        Kind::Text => one(values)?.to_string(),
        Kind::Words => words(values).join(" "),
    })
}

/// Applies one setting by name. The error says what is wrong with the value, in Redis's
/// words, without the setting's name.
pub fn apply(config: &mut Config, name: &str, values: &[String]) -> Result<(), String> {
    let Some(param) = find(name) else {
        return Err(format!("unknown setting '{}'", name.to_ascii_lowercase()));
    };
    if inert::find(param.name).is_some() {
        return apply_inert(config, param, values);
    }
    if aof::PARAMS.iter().any(|p| p.name == param.name) {
        let checked = checked_value(param, values)?;
        return aof::apply(&mut config.aof, param.name, &checked);
    }
    if memory::PARAMS.iter().any(|p| p.name == param.name) {
        let checked = checked_value(param, values)?;
        return memory::apply(&mut config.memory, param.name, &checked);
    }
    if repl::PARAMS.iter().any(|p| p.name == param.name) {
        let checked = checked_value(param, values)?;
        return repl::apply(&mut config.repl, param.name, &checked);
    }
    if super::acl::PARAMS.iter().any(|p| p.name == param.name) {
        let checked = checked_value(param, values)?;
        return super::acl::apply(&mut config.acl, param.name, &checked);
    }
    if replica::PARAMS.iter().any(|p| p.name == param.name) {
        let checked = checked_value(param, values)?;
        return replica::apply(&mut config.replica, param.name, &checked);
    }
    if cluster_ha::PARAMS.iter().any(|p| p.name == param.name) {
        let checked = checked_value(param, values)?;
        return cluster_ha::apply(&mut config.cluster_ha, param.name, &checked);
    }
    let kind = param.kind;
    match canonical(param.name) {
        "port" => config.port = number(kind, values)? as u16,
        "bind" => {
            config.bind = words(values)
                .into_iter()
                .filter(|w| !w.is_empty())
                .collect()
        }
        "requirepass" => {
            let pass = one(values)?;
            config.requirepass = (!pass.is_empty()).then(|| pass.as_bytes().to_vec());
        }
        "protected-mode" => config.protected_mode = boolean(values)?,
        "enable-debug-command" => {
            let name = choice(ProtectedAction::NAMES, values)?;
            config.enable_debug_command =
                ProtectedAction::from_name(&name).ok_or("unknown protected action")?
        }
        "dir" => config.dir = one(values)?.into(),
        "dbfilename" => config.dbfilename = db_filename(one(values)?)?,
        "rdbcompression" => config.rdbcompression = boolean(values)?,
        "rdbchecksum" => config.rdbchecksum = boolean(values)?,
        "stop-writes-on-bgsave-error" => config.stop_writes_on_bgsave_error = boolean(values)?,
        "lazyfree-lazy-expire" => config.lazyfree_lazy_expire = boolean(values)?,
        "databases" => config.databases = number(kind, values)? as usize,
        "maxclients" => config.maxclients = number(kind, values)? as usize,
        "proto-max-bulk-len" => config.proto_max_bulk_len = number(kind, values)? as usize,
        "client-query-buffer-limit" => {
            config.client_query_buffer_limit = number(kind, values)? as usize
        }
        // Redis accepts any hz and then keeps it within 1..=500.
        "hz" => config.hz = number(kind, values)?.clamp(1, 500) as u32,
        "timeout" => config.timeout = number(kind, values)? as u64,
        "tcp-backlog" => config.tcp_backlog = number(kind, values)?,
        "tcp-keepalive" => config.tcp_keepalive = number(kind, values)? as u64,
        "logfile" => config.logfile = one(values)?.to_string(),
        "loglevel" => config.loglevel = choice(LOGLEVELS, values)?,
        "daemonize" => config.daemonize = boolean(values)?,
        "pidfile" => config.pidfile = one(values)?.to_string(),
        "supervised" => config.supervised = choice(SUPERVISORS, values)?,
        "io-threads" => config.io_threads = number(kind, values)? as usize,
        "busy-poll-usecs" => config.busy_poll_usecs = number(kind, values)? as u64,
        "save" => config.save = save_points(values)?,
        "busy-reply-threshold" | "lua-time-limit" => {
            config.busy_reply_threshold_ms = number(kind, values)? as u64
        }
        "appendonly" => config.appendonly = boolean(values)?,
        "notify-keyspace-events" => {
            config.notify_keyspace_events = crate::pubsub::notify::parse_flags(one(values)?)?
        }
        "client-output-buffer-limit" => {
            let words: Vec<String> = words(values)
                .into_iter()
                .filter(|w| !w.is_empty())
                .collect();
            config.client_output_buffer_limit.apply(&words)?
        }
        "cluster-enabled" => config.cluster_enabled = boolean(values)?,
        "cluster-config-file" => config.cluster_config_file = one(values)?.to_string(),
        "cluster-port" => config.cluster_port = number(kind, values)? as u16,
        "cluster-node-timeout" => config.cluster_node_timeout = number(kind, values)? as u64,
        "cluster-require-full-coverage" => config.cluster_require_full_coverage = boolean(values)?,
        "set-max-intset-entries" => config.set_max_intset_entries = number(kind, values)? as usize,
        "hll-sparse-max-bytes" => config.hll_sparse_max_bytes = number(kind, values)? as usize,
        "zset-max-listpack-entries" => {
            config.zset_max_listpack_entries = number(kind, values)? as usize
        }
        "zset-max-listpack-value" => {
            config.zset_max_listpack_value = number(kind, values)? as usize
        }
        "hash-max-listpack-entries" => {
            config.hash_max_listpack_entries = number(kind, values)? as usize
        }
        "hash-max-listpack-value" => {
            config.hash_max_listpack_value = number(kind, values)? as usize
        }
        "stream-node-max-bytes" => config.stream_node_max_bytes = number(kind, values)? as usize,
        "stream-node-max-entries" => config.stream_node_max_entries = number(kind, values)? as u64,
        "list-max-listpack-size" => config.list_max_listpack_size = number(kind, values)?,
        "latency-tracking" => config.latency_tracking = boolean(values)?,
        "slowlog-log-slower-than" => config.slowlog_log_slower_than = number(kind, values)?,
        "slowlog-max-len" => config.slowlog_max_len = number(kind, values)? as u64,
        "tracking-table-max-keys" => config.tracking_table_max_keys = number(kind, values)? as u64,
        "latency-monitor-threshold" => {
            config.latency_monitor_threshold = number(kind, values)? as u64
        }
        "latency-tracking-info-percentiles" => {
            config.latency_tracking_info_percentiles = percentiles(values)?
        }
        other => return Err(format!("unknown setting '{other}'")),
    }
    Ok(())
}

pub(super) fn yes_no(on: bool) -> String {
    if on { "yes" } else { "no" }.to_string()
}

/// The value CONFIG GET shows for a setting (by its canonical name).
pub fn get(config: &Config, name: &str) -> Option<String> {
    Some(match canonical(name) {
        "port" => config.port.to_string(),
        "bind" => config.bind.join(" "),
        "requirepass" => config
            .requirepass
            .as_deref()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default(),
        "protected-mode" => yes_no(config.protected_mode),
        "enable-debug-command" => config.enable_debug_command.name().to_string(),
        "dir" => std::fs::canonicalize(&config.dir)
            .unwrap_or_else(|_| config.dir.clone())
            .display()
            .to_string(),
        "dbfilename" => config.dbfilename.clone(),
        "rdbcompression" => yes_no(config.rdbcompression),
        "rdbchecksum" => yes_no(config.rdbchecksum),
        "stop-writes-on-bgsave-error" => yes_no(config.stop_writes_on_bgsave_error),
        "lazyfree-lazy-expire" => yes_no(config.lazyfree_lazy_expire),
        "databases" => config.databases.to_string(),
        "maxclients" => config.maxclients.to_string(),
        "proto-max-bulk-len" => config.proto_max_bulk_len.to_string(),
        "client-query-buffer-limit" => config.client_query_buffer_limit.to_string(),
        "hz" => config.hz.to_string(),
        "timeout" => config.timeout.to_string(),
        "tcp-backlog" => config.tcp_backlog.to_string(),
        "tcp-keepalive" => config.tcp_keepalive.to_string(),
        "logfile" => config.logfile.clone(),
        "loglevel" => config.loglevel.clone(),
        "daemonize" => yes_no(config.daemonize),
        "pidfile" => config.pidfile.clone(),
        "supervised" => config.supervised.clone(),
        "io-threads" => config.io_threads.to_string(),
        "busy-poll-usecs" => config.busy_poll_usecs.to_string(),
        "busy-reply-threshold" | "lua-time-limit" => config.busy_reply_threshold_ms.to_string(),
        "save" => config
            .save
            .iter()
            .map(|(seconds, changes)| format!("{seconds} {changes}"))
            .collect::<Vec<_>>()
            .join(" "),
        "appendonly" => if config.appendonly { "yes" } else { "no" }.to_string(),
        "notify-keyspace-events" => {
            crate::pubsub::notify::show_flags(config.notify_keyspace_events)
        }
        "client-output-buffer-limit" => config.client_output_buffer_limit.show(),
        "cluster-enabled" => yes_no(config.cluster_enabled),
        "cluster-config-file" => config.cluster_config_file.clone(),
        "cluster-port" => config.cluster_port.to_string(),
        "cluster-node-timeout" => config.cluster_node_timeout.to_string(),
        "cluster-require-full-coverage" => yes_no(config.cluster_require_full_coverage),
        "set-max-intset-entries" => config.set_max_intset_entries.to_string(),
        "hll-sparse-max-bytes" => config.hll_sparse_max_bytes.to_string(),
        "zset-max-listpack-entries" => config.zset_max_listpack_entries.to_string(),
        "zset-max-listpack-value" => config.zset_max_listpack_value.to_string(),
        "hash-max-listpack-entries" => config.hash_max_listpack_entries.to_string(),
        "hash-max-listpack-value" => config.hash_max_listpack_value.to_string(),
        "stream-node-max-bytes" => config.stream_node_max_bytes.to_string(),
        "stream-node-max-entries" => config.stream_node_max_entries.to_string(),
        "list-max-listpack-size" => config.list_max_listpack_size.to_string(),
        "latency-tracking" => yes_no(config.latency_tracking),
        "slowlog-log-slower-than" => config.slowlog_log_slower_than.to_string(),
        "slowlog-max-len" => config.slowlog_max_len.to_string(),
        "tracking-table-max-keys" => config.tracking_table_max_keys.to_string(),
        "latency-monitor-threshold" => config.latency_monitor_threshold.to_string(),
        "latency-tracking-info-percentiles" => config
            .latency_tracking_info_percentiles
            .iter()
            .map(f64::to_string)
            .collect::<Vec<_>>()
            .join(" "),
        other if aof::PARAMS.iter().any(|p| p.name == other) => aof::get(&config.aof, other)?,
        other if memory::PARAMS.iter().any(|p| p.name == other) => {
            memory::get(&config.memory, other)?
        }
        other if repl::PARAMS.iter().any(|p| p.name == other) => repl::get(&config.repl, other)?,
        other if super::acl::PARAMS.iter().any(|p| p.name == other) => {
            super::acl::get(&config.acl, other)?
        }
        other if replica::PARAMS.iter().any(|p| p.name == other) => {
            replica::get(&config.replica, other)?
        }
        other if cluster_ha::PARAMS.iter().any(|p| p.name == other) => {
            cluster_ha::get(&config.cluster_ha, other)?
        }
        other => {
            let inert = inert::find(other)?;
            config
                .inert
                .get(inert.param.name)
                .cloned()
                .unwrap_or_else(|| inert.default.to_string())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, value: &str) -> Result<Config, String> {
        let mut config = Config::default();
        apply(&mut config, name, &[value.to_string()]).map(|()| config)
    }

    #[test]
    fn memory_values_follow_memtoull() {
        assert_eq!(parse_memory("1mb"), Some(1024 * 1024));
        assert_eq!(parse_memory("1MB"), Some(1024 * 1024));
        assert_eq!(parse_memory("2k"), Some(2000));
        assert_eq!(parse_memory("mb"), Some(0));
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("1.5mb"), None);
        assert_eq!(parse_memory("99999999999999999999999"), Some(u64::MAX));
    }

    #[test]
    fn range_and_parse_errors_use_redis_words() {
        assert_eq!(
            set("maxclients", "0").unwrap_err(),
            "argument must be between 1 and 4294967295 inclusive"
        );
        assert_eq!(
            set("timeout", "05").unwrap_err(),
            "argument couldn't be parsed into an integer"
        );
        assert_eq!(
            set("proto-max-bulk-len", "99999999999999999999999").unwrap_err(),
            "argument must be between 1048576 and 9223372036854775807 inclusive"
        );
        assert_eq!(set("hz", "1000").map(|c| c.hz), Ok(500));
    }

    #[test]
    fn save_points_round_trip() {
        let config = set("save", "3600 1 300 100").unwrap();
        assert_eq!(get(&config, "save").unwrap(), "3600 1 300 100");
        assert_eq!(get(&set("save", "").unwrap(), "save").unwrap(), "");
        assert!(set("save", "abc").is_err());
        assert!(set("save", "0 1").is_err());
        assert!(set("save", "1").is_err());
    }
}
