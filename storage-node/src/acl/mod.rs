//! Access control lists, Redis 7.0's model: named users with passwords and permissions,
//! checked before every command runs (`cmd::check_acl`).
//!
//! - [`user`]: a user and the rules (`on`, `>password`, `+@read`, `~app:*`, `(...)`, ...)
//!   that change it;
//! - [`selector`]: one set of command, key and channel permissions;
//! - [`categories`]: command categories, from the shared command table;
//! - [`log`]: the ACL log of refusals;
//! - [`file`]: the ACL file (`aclfile`, ACL LOAD and SAVE);
//! - [`sha256`]: password hashing.
//!
//! Every connection starts as the `default` user, logged in when that user has `nopass`
//! (Redis's `requirepass` sets its password). Users live in one registry shared by all
//! connections; a connection names its user, so a changed user's rules apply to its
//! connections at their next command, and a deleted user's connections are closed.

pub mod categories;
pub mod file;
pub mod log;
pub mod selector;
pub mod sha256;
pub mod user;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use bytes::Bytes;
use slotproxy::cluster::CommandSpec;

pub use log::{AclLog, Context, Entry};
pub use user::User;

/// Why a command was refused, in the order Redis ranks them when selectors disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    Command,
    Key,
    Auth,
    Channel,
}

impl Reason {
    /// The ACL LOG `reason` field.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Auth => "auth",
            Reason::Channel => "channel",
        }
    }
}

/// A refusal and the argument it is about (the key or channel; 0 for the command).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Denial {
    pub reason: Reason,
    pub position: usize,
}

impl Denial {
    pub fn new(reason: Reason, position: usize) -> Denial {
        Denial { reason, position }
    }
}

/// Why a rule could not be applied, with Redis's words for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    UnknownName,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list of \
                 channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// The users, by name (in byte order, as ACL LIST and USERS show them), and the log.
#[derive(Debug)]
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, User>>,
    /// Bumped whenever the users may change, so a connection can remember "my user may run
    /// anything" until then (`cmd::acl_gate`) instead of looking its user up per command.
    version: AtomicU64,
    pub log: Mutex<AclLog>,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

impl Acl {
    /// Only the `default` user, allowed everything, with no password.
    pub fn new() -> Acl {
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), User::default_user());
        Acl {
            users: RwLock::new(users),
            version: AtomicU64::new(1),
            log: Mutex::new(AclLog::default()),
        }
    }

    /// Reads the users.
    pub fn users(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Vec<u8>, User>> {
        self.users
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Changes the users. The version moves while the lock is held: whoever reads the new
    /// version then waits for the changed users.
    pub fn users_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Vec<u8>, User>> {
        let guard = self
            .users
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.version.fetch_add(1, Ordering::SeqCst);
        guard
    }

    /// The users' version (see [`users_mut`](Self::users_mut)); never 0.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Whether `user` exists and its root selector allows every command, key and channel.
    pub fn is_unrestricted(&self, user: &[u8]) -> bool {
        self.users().get(user).is_some_and(User::allows_everything)
    }

    /// Whether a new connection starts logged in: the default user is on and has `nopass`.
    pub fn default_needs_no_password(&self) -> bool {
        self.users()
            .get(&b"default"[..])
            .is_some_and(|user| user.enabled && user.nopass)
    }

    /// Whether the default user has `nopass` (protected mode's condition, whether or not
    /// the user is on).
    pub fn default_has_nopass(&self) -> bool {
        self.users()
            .get(&b"default"[..])
            .is_some_and(|user| user.nopass)
    }

    /// Whether `user` exists, is on, and accepts `password`.
    pub fn credentials_valid(&self, user: &[u8], password: &[u8]) -> bool {
        self.users()
            .get(user)
            .is_some_and(|found| found.accepts(password))
    }

    /// `requirepass`: the default user's only password, or `nopass` when empty.
    pub fn set_default_password(&self, password: Option<&[u8]>) {
        let mut users = self.users_mut();
        if let Some(default) = users.get_mut(&b"default"[..]) {
            let _ = default.apply(b"resetpass", false);
            let rule = match password {
                Some(password) => [b">", password].concat(),
                None => b"nopass".to_vec(),
            };
            let _ = default.apply(&rule, false);
        }
    }

    /// Whether `user` may run `args` as `spec`. A user deleted meanwhile may run nothing.
    pub fn check(&self, user: &[u8], spec: &CommandSpec, args: &[Bytes]) -> Result<(), Denial> {
        match self.users().get(user) {
            Some(found) if found.allows_everything() => Ok(()),
            Some(found) => found.check(spec, args),
            None => Err(Denial::new(Reason::Command, 0)),
        }
    }

    /// Records a refusal in the ACL log.
    pub fn log_refusal(&self, entry: Entry, max_len: usize) {
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .add(entry, max_len);
    }
}

/// `aclfile` as a path: relative to `dir`, where Redis (which changes into `dir`) opens
/// it. `None` when no file is configured.
pub fn file_path(config: &crate::config::Config) -> Option<std::path::PathBuf> {
    let file = &config.acl.file;
    (!file.is_empty()).then(|| config.dir.join(file))
}

/// Loads the users at start: the `user` lines of the config file, or the ACL file (not
/// both, as Redis refuses). `Err` is why the node must not start.
pub fn load_at_start(acl: &Acl, config: &crate::config::Config) -> Result<(), String> {
    let all_channels = config.acl.pubsub_all_channels;
    if !config.acl.file.is_empty() && !config.acl.users.is_empty() {
        return Err(
            "Configuring Redis with users defined in redis.conf and at the same setting \
                    an ACL file path is invalid. This setup is very likely to lead to \
                    configuration errors and security holes, please define either an ACL file \
                    or declare users directly in your redis.conf, but not both."
                .into(),
        );
    }
    let mut users = acl.users_mut();
    for line in &config.acl.users {
        let name = &line[0];
        let user = users
            .entry(name.clone())
            .or_insert_with(|| User::new(name, all_channels));
        if name.as_slice() == b"default" {
            let _ = user.apply(b"reset", all_channels);
        }
        for rule in &line[1..] {
            user.apply(rule, all_channels).map_err(|e| {
                format!(
                    "Error loading ACL rule '{}' for the user named '{}': {}",
                    String::from_utf8_lossy(rule),
                    String::from_utf8_lossy(name),
                    e.message()
                )
            })?;
        }
    }
    if let Some(path) = file_path(config) {
        *users = file::load(&path, all_channels)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}
