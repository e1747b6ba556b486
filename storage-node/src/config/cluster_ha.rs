//! Cluster mode's high-availability settings, with Redis 7.0's names, defaults and value
//! syntax. `crate::cluster` honours them (failure detection, elections, redirects, replica
//! migration).

use super::params::{param, Access, Kind, Param};

const INT_MAX: i64 = i32::MAX as i64;

#[derive(Clone, Debug)]
pub struct ClusterHaSettings {
    /// `cluster-allow-reads-when-down`: reads are served while the cluster is down.
    pub allow_reads_when_down: bool,
    /// `cluster-replica-no-failover`: this replica never starts an automatic failover
    /// (a manual `CLUSTER FAILOVER` still works).
    pub replica_no_failover: bool,
    /// `cluster-replica-validity-factor`: a replica whose link to its master has been down
    /// longer than `repl-ping-replica-period + node-timeout × factor` does not start a
    /// failover (0: no limit).
    pub replica_validity_factor: u64,
    /// `cluster-allow-replica-migration`: a master that lost all its slots becomes a
    /// replica of the node that took them, and a replica may move to an orphaned master
    /// (`crate::cluster::replica_migration`).
    pub allow_replica_migration: bool,
    /// `cluster-migration-barrier`: a replica moves to an orphaned master only if its own
    /// master keeps more than this many working replicas.
    pub migration_barrier: u64,
}

impl Default for ClusterHaSettings {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        ClusterHaSettings {
            allow_reads_when_down: false,
            replica_no_failover: false,
            replica_validity_factor: 10,
            allow_replica_migration: true,
            migration_barrier: 1,
        }
    }
}

pub const PARAMS: &[Param] = &[
    param("cluster-allow-reads-when-down", Kind::Bool, Access::Mutable),
    param("cluster-replica-no-failover", Kind::Bool, Access::Mutable),
    param(
        "cluster-replica-validity-factor",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param(
        "cluster-allow-replica-migration",
        Kind::Bool,
        Access::Mutable,
    ),
    param(
        "cluster-migration-barrier",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
];

/// Old names Redis 7.0 still accepts for these settings.
pub const ALIASES: &[(&str, &str)] = &[
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
];

/// Applies one setting whose value was already checked against its [`Kind`] (`value`
/// in the checked form: a number, `yes`/`no`).
pub fn apply(settings: &mut ClusterHaSettings, name: &str, value: &str) -> Result<(), String> {
    let number = || value.parse::<u64>().map_err(|_| "bad number".to_string());
    let yes = value == "yes";
    match name {
        "cluster-allow-reads-when-down" => settings.allow_reads_when_down = yes,
        "cluster-replica-no-failover" => settings.replica_no_failover = yes,
        "cluster-replica-validity-factor" => settings.replica_validity_factor = number()?,
        "cluster-allow-replica-migration" => settings.allow_replica_migration = yes,
        "cluster-migration-barrier" => settings.migration_barrier = number()?,
        _ => return Err(format!("unknown setting '{name}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows.
pub fn get(settings: &ClusterHaSettings, name: &str) -> Option<String> {
    let yes_no = |on: bool| if on { "yes" } else { "no" }.to_string();
    Some(match name {
        "cluster-allow-reads-when-down" => yes_no(settings.allow_reads_when_down),
        "cluster-replica-no-failover" => yes_no(settings.replica_no_failover),
        "cluster-replica-validity-factor" => settings.replica_validity_factor.to_string(),
        "cluster-allow-replica-migration" => yes_no(settings.allow_replica_migration),
        "cluster-migration-barrier" => settings.migration_barrier.to_string(),
        _ => return None,
    })
}
