//! The ACL settings, with Redis 7.0's names, defaults and value syntax; `crate::acl`
//! honours them. `user` lines of the config file are kept here too, to be loaded at start.

use super::params::{param, Access, Kind, Param};

#[derive(Clone, Debug, Default)]
pub struct AclSettings {
    /// `aclfile`: where users are loaded from at start and by ACL LOAD, saved by ACL
    /// SAVE (empty: no file).
    pub file: String,
    /// `acllog-max-len`: entries the ACL log keeps.
    pub log_max_len: u64,
    /// `acl-pubsub-default allchannels`: new users may use every channel.
    pub pubsub_all_channels: bool,
    /// The `user <name> <rule> ...` lines of the config file (name first, then rules,
    /// selectors merged), in order.
    pub users: Vec<Vec<Vec<u8>>>,
}

impl AclSettings {
    /// Redis 7.0's defaults.
    pub fn redis_defaults() -> AclSettings {
        AclSettings {
            log_max_len: 128,
            ..AclSettings::default()
        }
    }
}

const PUBSUB_DEFAULTS: &[&str] = &["allchannels", "resetchannels"];

pub const PARAMS: &[Param] = &[
    param("aclfile", Kind::Text, Access::Immutable),
    param(
        "acllog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        Access::Mutable,
    ),
    param(
        "acl-pubsub-default",
        Kind::Enum(PUBSUB_DEFAULTS),
        Access::Mutable,
    ),
];

/// Applies one setting whose value was already checked against its [`Kind`].
pub fn apply(settings: &mut AclSettings, name: &str, value: &str) -> Result<(), String> {
    match name {
        "aclfile" => settings.file = value.to_string(),
        "acllog-max-len" => {
            settings.log_max_len = value.parse().map_err(|_| "bad number".to_string())?
        }
        "acl-pubsub-default" => settings.pubsub_all_channels = value == "allchannels",
        _ => return Err(format!("unknown setting '{name}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows.
pub fn get(settings: &AclSettings, name: &str) -> Option<String> {
    Some(match name {
        "aclfile" => settings.file.clone(),
        "acllog-max-len" => settings.log_max_len.to_string(),
        "acl-pubsub-default" => if settings.pubsub_all_channels {
            "allchannels"
        } else {
            "resetchannels"
        }
        .to_string(),
        _ => return None,
    })
}

/// A `user <name> <rule> ...` line of the config file: checked as Redis checks it before
/// keeping it (a rule naming an unknown command is let through, as Redis defers it), and
/// kept for [`crate::acl::load_at_start`].
pub fn add_user_line(settings: &mut AclSettings, words: &[String]) -> Result<(), String> {
    let Some((name, rules)) = words.split_first() else {
        return Err("wrong number of arguments".into());
    };
    if settings.users.iter().any(|line| line[0] == name.as_bytes()) {
        return Err(
            "Error in user declaration: Duplicate user found. A user can only be defined once \
             in config files"
                .into(),
        );
    }
    let rules: Vec<bytes::Bytes> = rules
        .iter()
        .map(|r| bytes::Bytes::copy_from_slice(r.as_bytes()))
        .collect();
    let merged = crate::acl::user::merge_selector_arguments(&rules)
        .map_err(|_| "Error in user declaration: Unmatched parenthesis".to_string())?;
    let mut probe = crate::acl::User::new(name.as_bytes(), settings.pubsub_all_channels);
    for rule in &merged {
        match probe.apply(rule, settings.pubsub_all_channels) {
            Ok(()) | Err(crate::acl::RuleError::UnknownName) => {}
            Err(e) => return Err(format!("Error in user declaration: {}", e.message())),
        }
    }
    let mut line = vec![name.as_bytes().to_vec()];
    line.extend(merged);
    settings.users.push(line);
    Ok(())
}
