//! The allow-list: reply differences that are known and not yet fixed, so that only new
//! ones fail the CI profile. Crashes and hangs can never be listed.
//!
//! A second kind of line, `pending-crash <script name> <reason>`, names a script of the
//! alphabet that is known to crash the node and is being fixed elsewhere: the generator
//! leaves it out (it is not allowed to crash; it is not run) until the line is removed.
//!
//! Format of `allow-list.txt`, one entry a line (`#` starts a comment):
//! `<target> <command> <kind|value> <reason>`, where target is `node`, `proxy` or `any`,
//! and command is the table name (`object|encoding`), with `/inner` appended for a command
//! run through a script (`eval/get`). An entry for a container covers its subcommands
//! (`acl` covers `acl|cat`) and one for a script command all commands run through it.

use super::compare::Difference;
use super::servers::Target;

const ALLOW_LIST: &str = include_str!("allow-list.txt");

const PENDING: &str = "pending-crash ";

/// Names of alphabet scripts the generator leaves out while their crash is being fixed.
pub fn pending_crashes() -> Vec<String> {
    ALLOW_LIST
        .lines()
        .filter_map(|l| l.trim().strip_prefix(PENDING))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// One allowed difference.
#[derive(Clone, Debug)]
pub struct Allowed {
    pub target: String,
    pub command: String,
    pub difference: String,
    pub reason: String,
}

/// The parsed allow-list.
pub fn entries() -> Vec<Allowed> {
    ALLOW_LIST
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(PENDING))
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            Some(Allowed {
                target: parts.next()?.to_string(),
                command: parts.next()?.to_string(),
                difference: parts.next()?.to_string(),
                reason: parts.collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

/// Whether `command` is a subcommand of `container` (`acl|cat` of `acl`), or a command run
/// through it (`eval/get` of `eval`).
fn is_part_of(command: &str, container: &str) -> bool {
    command
        .strip_prefix(container)
        .is_some_and(|rest| rest.starts_with('|') || rest.starts_with('/'))
}

/// Whether a difference of `command` is allowed for `target`. A command a script runs
/// (`eval/xadd`) that the subject does not implement is allowed by the entry that allows
/// the command itself; so is a known wrong answer of the node's own command (a `node` or
/// `any` entry: `eval/command|docs` by `command`), since a script runs the node's command.
/// Entries for the proxy do not carry over: the node, not the proxy, runs a script's
/// commands. A transaction's EXEC is named the same way (`exec/command|count`) when a
/// command it ran has the difference listed.
pub fn is_allowed(target: Target, command: &str, difference: Difference) -> bool {
    if let Some((_, inner)) = command.split_once('/') {
        let by_inner = match difference {
            Difference::Unimplemented => is_allowed(target, inner, difference),
            _ => listed(&["any", "node"], inner, difference),
        };
        if by_inner {
            return true;
        }
    }
    listed(&["any", target.name()], command, difference)
}

/// Whether an entry for one of `targets` allows `difference` of `command`.
fn listed(targets: &[&str], command: &str, difference: Difference) -> bool {
    entries().iter().any(|e| {
        targets.contains(&e.target.as_str())
            && (e.command == command || is_part_of(command, &e.command))
            && e.difference == difference.name()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_entry_covers_its_command_run_by_exec() {
        assert!(is_allowed(
            Target::Node,
            "exec/command|count",
            Difference::Value
        ));
        assert!(!is_allowed(Target::Node, "exec/get", Difference::Value));
    }

    #[test]
    fn a_node_entry_covers_its_command_run_by_a_script() {
        // `node command value`: COMMAND covers only the implemented commands.
        assert!(is_allowed(Target::Node, "command|docs", Difference::Value));
        assert!(is_allowed(
            Target::Node,
            "eval/command|docs",
            Difference::Value
        ));
        assert!(is_allowed(
            Target::Proxy,
            "fcall/command|count",
            Difference::Value
        ));
        assert!(!is_allowed(
            Target::Node,
            "eval/command|docs",
            Difference::Kind
        ));
        assert!(!is_allowed(Target::Node, "eval/get", Difference::Value));
    }

    #[test]
    fn a_proxy_entry_does_not_cover_a_script_the_node_runs() {
        // `proxy scan kind` describes the proxy's cursor, not the node's SCAN.
        assert!(is_allowed(Target::Proxy, "scan", Difference::Kind));
        assert!(!is_allowed(Target::Proxy, "eval/scan", Difference::Kind));
    }
}
