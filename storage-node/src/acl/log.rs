//! The ACL log (`ACL LOG`): refused commands, keys, channels and logins, newest first.
//! A refusal like a recent one (same reason, context, object and user, within a minute)
//! bumps that entry's count and moves it to the front instead of adding a new one, as
//! Redis 7.0 groups them; only the 10 newest entries are compared.

use std::collections::VecDeque;

use super::Reason;

/// Where the refused command came from (the entry's `context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    TopLevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::TopLevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key or channel refused, or the command that failed to log in.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// Unix milliseconds of the latest occurrence.
    pub updated_ms: u64,
    /// CLIENT LIST's line for the latest client refused.
    pub client_info: String,
}

/// Refusals within this many milliseconds of each other share an entry.
const GROUPING_WINDOW_MS: u64 = 60_000;

/// How many of the newest entries a refusal is compared with.
const GROUPING_SCAN: usize = 10;

#[derive(Debug, Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
}

impl AclLog {
    /// Records a refusal, keeping at most `max_len` entries (`acllog-max-len`).
    pub fn add(&mut self, entry: Entry, max_len: usize) {
        let similar = self.entries.iter().take(GROUPING_SCAN).position(|old| {
            old.reason == entry.reason
                && old.context == entry.context
                && old.updated_ms.abs_diff(entry.updated_ms) <= GROUPING_WINDOW_MS
                && old.object == entry.object
                && old.username == entry.username
        });
        if let Some(position) = similar {
            if let Some(mut old) = self.entries.remove(position) {
                old.count += 1;
                old.updated_ms = entry.updated_ms;
                old.client_info = entry.client_info;
                self.entries.push_front(old);
            }
            return;
        }
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> impl Iterator<Item = &Entry> {
        self.entries.iter().take(count)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}
