//! The master side's replication settings, with Redis 7.0's names, defaults and value
//! syntax. `crate::replication` honours them.

use super::params::{param, Access, Kind, Param};

const INT_MAX: i64 = i32::MAX as i64;

/// The smallest backlog Redis keeps, whatever `repl-backlog-size` says.
const MIN_BACKLOG_SIZE: u64 = 16 * 1024;

#[derive(Clone, Debug)]
pub struct ReplSettings {
    /// `repl-backlog-size`: bytes of the stream kept for partial resyncs.
    pub backlog_size: u64,
    /// `repl-backlog-ttl`: seconds without replicas before the backlog is freed (0: never).
    pub backlog_ttl: u64,
    /// `repl-diskless-sync`: a full sync streams the snapshot to the replica's socket
    /// instead of writing the RDB file first.
    pub diskless_sync: bool,
    /// `repl-diskless-sync-delay`: seconds a diskless sync waits for more replicas.
    pub diskless_sync_delay: u64,
    /// `repl-diskless-sync-max-replicas`: it starts at once when that many wait (0: no
    /// such limit).
    pub diskless_sync_max_replicas: u64,
    /// `repl-ping-replica-period`: seconds between the PINGs the master feeds.
    pub ping_replica_period: u64,
    /// `repl-timeout`: seconds of silence after which a replica is dropped (on a replica:
    /// after which its master link is, `crate::replication::replica`).
    pub timeout: u64,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (0 in either: no check).
    pub min_replicas_to_write: u64,
    pub min_replicas_max_lag: u64,
}

impl Default for ReplSettings {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        ReplSettings {
            backlog_size: crate::replication::DEFAULT_BACKLOG_SIZE,
            backlog_ttl: 3600,
            diskless_sync: true,
            diskless_sync_delay: 5,
            diskless_sync_max_replicas: 0,
            ping_replica_period: 10,
            timeout: 60,
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
        }
    }
}

const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}

pub const PARAMS: &[Param] = &[
    param(
        "repl-backlog-size",
        Kind::Memory {
            min: 1,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param("repl-backlog-ttl", int(0, i64::MAX), Access::Mutable),
    param("repl-diskless-sync", Kind::Bool, Access::Mutable),
    param("repl-diskless-sync-delay", int(0, INT_MAX), Access::Mutable),
    param(
        "repl-diskless-sync-max-replicas",
        int(0, INT_MAX),
        Access::Mutable,
    ),
    param("repl-ping-replica-period", int(1, INT_MAX), Access::Mutable),
    param("repl-timeout", int(1, INT_MAX), Access::Mutable),
    param("min-replicas-to-write", int(0, INT_MAX), Access::Mutable),
    param("min-replicas-max-lag", int(0, INT_MAX), Access::Mutable),
];

/// Applies one setting whose value was already checked against its [`Kind`] (`value`
/// in the checked form: a number, `yes`/`no`).
pub fn apply(settings: &mut ReplSettings, name: &str, value: &str) -> Result<(), String> {
    let number = || value.parse::<u64>().map_err(|_| "bad number".to_string());
    match name {
        // Redis raises a smaller size to its minimum (`CONFIG_REPL_BACKLOG_MIN_SIZE`).
        "repl-backlog-size" => settings.backlog_size = number()?.max(MIN_BACKLOG_SIZE),
        "repl-backlog-ttl" => settings.backlog_ttl = number()?,
        "repl-diskless-sync" => settings.diskless_sync = value == "yes",
        "repl-diskless-sync-delay" => settings.diskless_sync_delay = number()?,
        "repl-diskless-sync-max-replicas" => settings.diskless_sync_max_replicas = number()?,
        "repl-ping-replica-period" => settings.ping_replica_period = number()?,
        "repl-timeout" => settings.timeout = number()?,
        "min-replicas-to-write" => settings.min_replicas_to_write = number()?,
        "min-replicas-max-lag" => settings.min_replicas_max_lag = number()?,
        _ => return Err(format!("unknown setting '{name}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows.
pub fn get(settings: &ReplSettings, name: &str) -> Option<String> {
    Some(match name {
        "repl-backlog-size" => settings.backlog_size.to_string(),
        "repl-backlog-ttl" => settings.backlog_ttl.to_string(),
        "repl-diskless-sync" => if settings.diskless_sync { "yes" } else { "no" }.to_string(),
        "repl-diskless-sync-delay" => settings.diskless_sync_delay.to_string(),
        "repl-diskless-sync-max-replicas" => settings.diskless_sync_max_replicas.to_string(),
        "repl-ping-replica-period" => settings.ping_replica_period.to_string(),
        "repl-timeout" => settings.timeout.to_string(),
        "min-replicas-to-write" => settings.min_replicas_to_write.to_string(),
        "min-replicas-max-lag" => settings.min_replicas_max_lag.to_string(),
        _ => return None,
    })
}
