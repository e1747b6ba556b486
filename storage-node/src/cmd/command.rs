//! `COMMAND` and its subcommands: answered by the shared core
//! ([`slotproxy::protocol::command`], the same code the proxy uses), listing only what this
//! node implements. See that module for the syntax and replies.

use bytes::Bytes;
use slotproxy::cluster::CommandSpec;

use super::{CmdResult, Ctx, Handler};
use crate::server::Shared;

pub use slotproxy::protocol::command::write_help;

pub const COMMANDS: &[(&str, Handler)] = &[("command", command)];

/// Subcommands of the containers implemented in this crate that no handler serves. Any other
/// subcommand of an implemented container counts as implemented.
const UNIMPLEMENTED_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("client", super::client::UNIMPLEMENTED),
    ("script", super::scripting::SCRIPT_UNIMPLEMENTED),
];

/// Whether the node serves a command or a `container|sub` subcommand.
pub fn implemented(shared: &Shared, spec: &CommandSpec) -> bool {
    match spec.name.split_once('|') {
        None => shared.dispatch.implements(&spec.name),
        Some((container, sub)) => {
            shared.dispatch.implements(container)
                && !UNIMPLEMENTED_SUBCOMMANDS
                    .iter()
                    .any(|(c, subs)| *c == container && subs.contains(&sub))
        }
    }
}

fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let shared = ctx.shared;
    let served = |spec: &CommandSpec| implemented(shared, spec);
    slotproxy::protocol::command::reply(&mut ctx.out, args, &served).map_err(Into::into)
}
