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
/// the command itself.
pub fn is_allowed(target: Target, command: &str, difference: Difference) -> bool {
    if let (Difference::Unimplemented, Some((_, inner))) = (difference, command.split_once('/')) {
        if is_allowed(target, inner, difference) {
            return true;
        }
    }
    entries().iter().any(|e| {
        (e.target == "any" || e.target == target.name())
            && (e.command == command || is_part_of(command, &e.command))
            && e.difference == difference.name()
    })
}
