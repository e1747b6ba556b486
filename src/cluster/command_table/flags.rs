//! Command flags as Redis names them in `COMMAND INFO`.

/// A set of command flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandFlags(u32);

macro_rules! command_flags {
    ($($konst:ident = $bit:expr, $name:literal;)*) => {
        impl CommandFlags {
            $(pub const $konst: CommandFlags = CommandFlags(1 << $bit);)*

            fn from_name(name: &str) -> CommandFlags {
                match name {
                    $($name => CommandFlags::$konst,)*
                    _ => CommandFlags(0),
                }
            }
        }
    };
}

command_flags! {
    WRITE = 0, "write";
    READONLY = 1, "readonly";
    DENYOOM = 2, "denyoom";
    ADMIN = 3, "admin";
    PUBSUB = 4, "pubsub";
    NOSCRIPT = 5, "noscript";
    BLOCKING = 6, "blocking";
    LOADING = 7, "loading";
    STALE = 8, "stale";
    SKIP_MONITOR = 9, "skip_monitor";
    SKIP_SLOWLOG = 10, "skip_slowlog";
    FAST = 11, "fast";
    NO_AUTH = 12, "no_auth";
    MAY_REPLICATE = 13, "may_replicate";
    NO_MANDATORY_KEYS = 14, "no_mandatory_keys";
    NO_MULTI = 15, "no_multi";
    ALLOW_BUSY = 16, "allow_busy";
    MOVABLEKEYS = 17, "movablekeys";
    NO_ASYNC_LOADING = 18, "no_async_loading";
    ASKING = 19, "asking";
}

/// Commands Redis 7.0 flags `may_replicate` although `COMMAND INFO` does not show it (its
/// `addReplyCommandFlags` hides the flag on purpose), so the captured table lacks it. A
/// read-only script refuses them as writes. The list is what redis-server 7.0 refuses from
/// `EVAL_RO` among commands scripts may call, and the `noscript` ones a `CLIENT PAUSE
/// WRITE` holds in redis-server 7.0 (EVAL, EVALSHA, FCALL; not their `_RO` forms).
pub const HIDDEN_MAY_REPLICATE: &[&str] =
    &["publish", "spublish", "pfcount", "eval", "evalsha", "fcall"];

impl CommandFlags {
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> CommandFlags {
        names.into_iter().fold(CommandFlags(0), |acc, name| {
            acc | CommandFlags::from_name(name)
        })
    }

    pub fn contains(self, other: CommandFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for CommandFlags {
    type Output = CommandFlags;
    fn bitor(self, rhs: CommandFlags) -> CommandFlags {
        CommandFlags(self.0 | rhs.0)
    }
}
