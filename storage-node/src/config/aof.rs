//! The append-only file's settings (`appendonly` itself is in [`super::Config`]), with
//! Redis 7.0's names, defaults and value syntax. `crate::persistence::aof` honours them.

use super::params::{param, Access, Kind, Param};

/// When the AOF is fsynced (`appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// Before the replies of the writes leave.
    Always,
    /// Once a second, in the background.
    EverySec,
    /// When the kernel decides.
    No,
}

impl Fsync {
    /// In Redis 7.0's order, which its CONFIG SET error lists.
    pub const NAMES: &'static [&'static str] = &["everysec", "always", "no"];

    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }

    fn from_name(name: &str) -> Option<Fsync> {
        match name {
            "always" => Some(Fsync::Always),
            "everysec" => Some(Fsync::EverySec),
            "no" => Some(Fsync::No),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct AofSettings {
    /// The base name of the files in the AOF directory (a name, never a path).
    pub filename: String,
    /// The AOF directory, inside `dir`.
    pub dirname: String,
    pub fsync: Fsync,
    /// `no-appendfsync-on-rewrite`: skip fsyncs while a rewrite runs.
    pub no_fsync_on_rewrite: bool,
    /// `aof-use-rdb-preamble`: the rewrite's base file is an RDB file.
    pub use_rdb_preamble: bool,
    /// `auto-aof-rewrite-percentage` (0: never) and `auto-aof-rewrite-min-size`.
    pub auto_rewrite_percentage: u64,
    pub auto_rewrite_min_size: u64,
    /// `aof-load-truncated`: a torn last command is cut off at load instead of refused.
    pub load_truncated: bool,
    /// `aof-timestamp-enabled`: `#TS:<unix seconds>` annotations in the AOF.
    pub timestamps: bool,
}

impl Default for AofSettings {
    fn default() -> Self {
        AofSettings {
            filename: "appendonly.aof".into(),
            dirname: "appendonlydir".into(),
            fsync: Fsync::EverySec,
            no_fsync_on_rewrite: false,
            use_rdb_preamble: true,
            auto_rewrite_percentage: 100,
            auto_rewrite_min_size: 64 * 1024 * 1024,
            load_truncated: true,
            timestamps: false,
        }
    }
}

pub const PARAMS: &[Param] = &[
    param("appendfilename", Kind::Text, Access::Immutable),
    param("appenddirname", Kind::Text, Access::Immutable),
    param("appendfsync", Kind::Enum(Fsync::NAMES), Access::Mutable),
    param("no-appendfsync-on-rewrite", Kind::Bool, Access::Mutable),
    param("aof-use-rdb-preamble", Kind::Bool, Access::Mutable),
    param(
        "auto-aof-rewrite-percentage",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        Access::Mutable,
    ),
    param(
        "auto-aof-rewrite-min-size",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param("aof-load-truncated", Kind::Bool, Access::Mutable),
    param("aof-timestamp-enabled", Kind::Bool, Access::Mutable),
];

/// A file or directory name Redis accepts (`isValidAOFfilename` / `isValidAOFdirname`).
fn plain_name(value: &str, what: &str) -> Result<String, String> {
    if value.is_empty() || value.contains(['/', '\\']) || value == "." || value == ".." {
        return Err(format!("{what} can't be a path, just a filename"));
    }
    Ok(value.to_string())
}

/// Applies one AOF setting whose value was already checked against its [`Kind`]
/// (`value` in the checked form: a number, `yes`/`no`, an option).
pub fn apply(settings: &mut AofSettings, name: &str, value: &str) -> Result<(), String> {
    let yes = value == "yes";
    match name {
        "appendfilename" => settings.filename = plain_name(value, "appendfilename")?,
        "appenddirname" => settings.dirname = plain_name(value, "appenddirname")?,
        "appendfsync" => {
            settings.fsync = Fsync::from_name(value)
                .ok_or("argument(s) must be one of the following: always, everysec, no")?
        }
        "no-appendfsync-on-rewrite" => settings.no_fsync_on_rewrite = yes,
        "aof-use-rdb-preamble" => settings.use_rdb_preamble = yes,
        "auto-aof-rewrite-percentage" => {
            settings.auto_rewrite_percentage = value.parse().map_err(|_| "bad number")?
        }
        "auto-aof-rewrite-min-size" => {
            settings.auto_rewrite_min_size = value.parse().map_err(|_| "bad number")?
        }
        "aof-load-truncated" => settings.load_truncated = yes,
        "aof-timestamp-enabled" => settings.timestamps = yes,
        _ => return Err(format!("unknown setting '{name}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows.
pub fn get(settings: &AofSettings, name: &str) -> Option<String> {
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    Some(match name {
        "appendfilename" => settings.filename.clone(),
        "appenddirname" => settings.dirname.clone(),
        "appendfsync" => settings.fsync.name().to_string(),
        "no-appendfsync-on-rewrite" => yes_no(settings.no_fsync_on_rewrite),
        "aof-use-rdb-preamble" => yes_no(settings.use_rdb_preamble),
        "auto-aof-rewrite-percentage" => settings.auto_rewrite_percentage.to_string(),
        "auto-aof-rewrite-min-size" => settings.auto_rewrite_min_size.to_string(),
        "aof-load-truncated" => yes_no(settings.load_truncated),
        "aof-timestamp-enabled" => yes_no(settings.timestamps),
        _ => return None,
    })
}
