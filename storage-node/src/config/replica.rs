//! The replica side's settings, with Redis 7.0's names, defaults and value syntax.
//! `crate::replication::replica` honours them: the link reads them at every connection
//! attempt, the command gates at every command.

use super::params::{param, Access, Kind, Param};

/// `repl-diskless-load`: how a full sync's snapshot is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisklessLoad {
    /// Written to a file in `dir` first, then loaded from it (the file becomes `dbfilename`).
    Disabled,
    /// Loaded from the connection when the dataset is empty, else as `Disabled`.
    OnEmptyDb,
    /// Loaded from the connection, the current dataset kept until the new one is complete.
    Swapdb,
}

impl DisklessLoad {
    pub const NAMES: &'static [&'static str] = &["disabled", "on-empty-db", "swapdb"];

    pub fn name(self) -> &'static str {
        match self {
            DisklessLoad::Disabled => "disabled",
            DisklessLoad::OnEmptyDb => "on-empty-db",
            DisklessLoad::Swapdb => "swapdb",
        }
    }

    fn from_name(name: &str) -> Option<DisklessLoad> {
        match name {
            "disabled" => Some(DisklessLoad::Disabled),
            "on-empty-db" => Some(DisklessLoad::OnEmptyDb),
            "swapdb" => Some(DisklessLoad::Swapdb),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct ReplicaSettings {
    /// `replicaof host port`, as read from the config file or command line (the node
    /// starts as a replica of it). REPLICAOF keeps it current, so CONFIG GET and CONFIG
    /// REWRITE show the master the node follows now, as in Redis.
    pub replicaof: Option<(String, u16)>,
    /// `masterauth` / `masteruser`: the credentials the link sends with AUTH.
    pub masterauth: String,
    pub masteruser: String,
    pub diskless_load: DisklessLoad,
    /// `replica-announce-ip` / `replica-announce-port` (0: the listening port): what the
    /// link tells the master with REPLCONF.
    pub announce_ip: String,
    pub announce_port: u16,
    /// `replica-read-only`: normal clients may not write.
    pub read_only: bool,
    /// `replica-serve-stale-data`: serve data while the link is down.
    pub serve_stale_data: bool,
    /// `replica-priority` and `replica-announced`, reported in INFO replication.
    pub priority: u64,
    pub announced: bool,
}

impl Default for ReplicaSettings {
    fn default() -> Self {
        ReplicaSettings {
            replicaof: None,
            masterauth: String::new(),
            masteruser: String::new(),
            diskless_load: DisklessLoad::Disabled,
            announce_ip: String::new(),
            announce_port: 0,
            read_only: true,
            serve_stale_data: true,
            priority: 100,
            announced: true,
        }
    }
}

const INT_MAX: i64 = i32::MAX as i64;

pub const PARAMS: &[Param] = &[
    param("replicaof", Kind::Words, Access::Immutable),
    param("masterauth", Kind::Text, Access::Mutable),
    param("masteruser", Kind::Text, Access::Mutable),
    param(
        "repl-diskless-load",
        Kind::Enum(DisklessLoad::NAMES),
        Access::Mutable,
    ),
    param("replica-announce-ip", Kind::Text, Access::Mutable),
    param(
        "replica-announce-port",
        Kind::Int { min: 0, max: 65535 },
        Access::Mutable,
    ),
    param("replica-read-only", Kind::Bool, Access::Mutable),
    param("replica-serve-stale-data", Kind::Bool, Access::Mutable),
    param(
        "replica-priority",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param("replica-announced", Kind::Bool, Access::Mutable),
];

/// Applies one setting whose value was already checked against its [`Kind`] (`value` in
/// the checked form; `replicaof` as `host port`, or empty for no master).
pub fn apply(settings: &mut ReplicaSettings, name: &str, value: &str) -> Result<(), String> {
    let yes = value == "yes";
    let number = |value: &str| value.parse::<u64>().map_err(|_| "bad number".to_string());
    match name {
        "replicaof" => {
            settings.replicaof = match value.rsplit_once(' ') {
                None => None,
                Some((host, port)) => Some((
                    host.to_string(),
                    port.parse().map_err(|_| "Invalid master port")?,
                )),
            }
        }
        "masterauth" => settings.masterauth = value.to_string(),
        "masteruser" => settings.masteruser = value.to_string(),
        "repl-diskless-load" => {
            settings.diskless_load = DisklessLoad::from_name(value)
                .ok_or("argument(s) must be one of the following: disabled, on-empty-db, swapdb")?
        }
        "replica-announce-ip" => settings.announce_ip = value.to_string(),
        "replica-announce-port" => {
            settings.announce_port = value.parse().map_err(|_| "bad number")?
        }
        "replica-read-only" => settings.read_only = yes,
        "replica-serve-stale-data" => settings.serve_stale_data = yes,
        "replica-priority" => settings.priority = number(value)?,
        "replica-announced" => settings.announced = yes,
        _ => return Err(format!("unknown setting '{name}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows.
pub fn get(settings: &ReplicaSettings, name: &str) -> Option<String> {
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    Some(match name {
        "replicaof" => settings
            .replicaof
            .as_ref()
            .map_or_else(String::new, |(host, port)| format!("{host} {port}")),
        "masterauth" => settings.masterauth.clone(),
        "masteruser" => settings.masteruser.clone(),
        "repl-diskless-load" => settings.diskless_load.name().to_string(),
        "replica-announce-ip" => settings.announce_ip.clone(),
        "replica-announce-port" => settings.announce_port.to_string(),
        "replica-read-only" => yes_no(settings.read_only),
        "replica-serve-stale-data" => yes_no(settings.serve_stale_data),
        "replica-priority" => settings.priority.to_string(),
        "replica-announced" => yes_no(settings.announced),
        _ => return None,
    })
}
