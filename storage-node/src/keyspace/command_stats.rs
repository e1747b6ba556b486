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

use slotproxy::cluster::CommandSpec;

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

/// A command of the command table, compared and hashed by address: each command is one
/// static entry there, so the lookups after every command hash a pointer instead of the
/// name's bytes.
#[derive(Clone, Copy, Debug)]
struct TableCommand(&'static CommandSpec);

impl TableCommand {
    fn name(self) -> &'static str {
        self.0.name.as_str()
    }
}

impl PartialEq for TableCommand {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for TableCommand {}

impl std::hash::Hash for TableCommand {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state);
    }
}

#[derive(Default, Debug)]
pub struct CommandStats {
    by_command: HashMap<TableCommand, CommandStat>,
    /// INFO `latencystats`, filled while `latency-tracking` is on.
    latency: HashMap<TableCommand, Histogram>,
    /// `latency-tracking`, copied from the settings.
    pub latency_tracking: bool,
}

impl CommandStats {
    /// A command ran for `took`, failing or not.
    pub fn ran(&mut self, command: &'static CommandSpec, took: Duration, failed: bool) {
        let stat = self.by_command.entry(TableCommand(command)).or_default();
        stat.calls += 1;
        stat.nanos += took.as_nanos() as u64;
        stat.failed_calls += failed as u64;
        if self.latency_tracking {
            // Redis times calls in whole microseconds and records them in nanoseconds.
            let nanos = took.as_micros() as u64 * 1000;
            self.latency
                .entry(TableCommand(command))
                .or_default()
                .record(nanos);
        }
    }

    /// A command was refused before running.
    pub fn rejected(&mut self, command: &'static CommandSpec) {
        self.by_command
            .entry(TableCommand(command))
            .or_default()
            .rejected_calls += 1;
    }

    /// Forgets everything (CONFIG RESETSTAT).
    pub fn reset(&mut self) {
        self.by_command.clear();
        self.latency.clear();
    }

    /// Every command with a latency histogram, by name.
    pub fn latencies(&self) -> impl Iterator<Item = (&'static str, &Histogram)> + '_ {
        self.latency.iter().map(|(command, h)| (command.name(), h))
    }

    /// The latency histogram of one command (a subcommand's is its own), with its name
    /// (`container|sub` for a subcommand).
    pub fn latency_of(&self, command: &'static CommandSpec) -> Option<(&'static str, &Histogram)> {
        self.latency
            .get(&TableCommand(command))
            .map(|h| (command.name.as_str(), h))
    }

    /// Every command with a count, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, CommandStat)> + '_ {
        self.by_command
            .iter()
            .map(|(command, stat)| (command.name(), *stat))
    }
}
