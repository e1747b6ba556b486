//! INFO `commandstats` and `latencystats`: per command (subcommands as `container|sub`), the calls, the time
//! spent in them, and the calls refused before running or failing with an error, as Redis
//! counts them in `call()` and `rejectCommand`. Kept beside the keyspace because every
//! command runs under its lock.

use std::time::Duration;

// hashbrown's default hasher, not std's SipHash: both maps are looked up by command name
// after every command (twice with `latency-tracking`, Redis's default), and SipHash made
// those lookups a sixth of a cheap command's instructions. The names are the command
// table's, not client data, so a DoS-resistant hash buys nothing here.
use hashbrown::HashMap;

use super::latency::Histogram;

#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandStat {
    pub calls: u64,
    /// Time spent running the command, in nanoseconds (INFO shows microseconds).
    pub nanos: u64,
    /// Refused before running (wrong arity, not allowed here, redirected, ...).
    pub rejected_calls: u64,
    /// Ran and answered an error.
    pub failed_calls: u64,
}

/// A command's name from the command table, compared and hashed by address: each name is
/// one static string there, so the lookups after every command hash a pointer instead of
/// the name's bytes.
#[derive(Clone, Copy, Debug)]
struct TableName(&'static str);

impl PartialEq for TableName {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for TableName {}

impl std::hash::Hash for TableName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.as_ptr() as usize);
    }
}

#[derive(Default, Debug)]
pub struct CommandStats {
    /// Keyed by the command table's names (`CommandSpec::name`), never by other strings.
    by_name: HashMap<TableName, CommandStat>,
    /// INFO `latencystats`, filled while `latency-tracking` is on.
    latency: HashMap<TableName, Histogram>,
    /// `latency-tracking`, copied from the settings.
    pub latency_tracking: bool,
}

impl CommandStats {
    /// A command ran for `took`, failing or not.
    pub fn ran(&mut self, name: &'static str, took: Duration, failed: bool) {
        let stat = self.by_name.entry(TableName(name)).or_default();
        stat.calls += 1;
        stat.nanos += took.as_nanos() as u64;
        stat.failed_calls += failed as u64;
        if self.latency_tracking {
            // Redis times calls in whole microseconds and records them in nanoseconds.
            let nanos = took.as_micros() as u64 * 1000;
            self.latency
                .entry(TableName(name))
                .or_default()
                .record(nanos);
        }
    }

    /// A command was refused before running.
    pub fn rejected(&mut self, name: &'static str) {
        self.by_name
            .entry(TableName(name))
            .or_default()
            .rejected_calls += 1;
    }

    /// Forgets everything (CONFIG RESETSTAT).
    pub fn reset(&mut self) {
        self.by_name.clear();
        self.latency.clear();
    }

    /// Every command with a latency histogram, by name.
    pub fn latencies(&self) -> impl Iterator<Item = (&'static str, &Histogram)> + '_ {
        self.latency.iter().map(|(name, h)| (name.0, h))
    }

    /// The latency histogram of one command (`container|sub` for a subcommand), with the
    /// command's name as kept.
    pub fn latency_of(&self, name: &'static str) -> Option<(&'static str, &Histogram)> {
        self.latency
            .get_key_value(&TableName(name))
            .map(|(name, h)| (name.0, h))
    }

    /// Every command with a count, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, CommandStat)> + '_ {
        self.by_name.iter().map(|(name, stat)| (name.0, *stat))
    }
}
