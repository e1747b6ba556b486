//! `COMMAND` and its subcommands, answered from the shared command table (Redis 7.0's own
//! `COMMAND` output) but only for what this node implements.
//!
//! - `COMMAND` → the `COMMAND INFO` entry of every implemented command.
//! - `COMMAND COUNT` → how many commands the node implements.
//! - `COMMAND INFO [name ...]` → one entry per name (`container|sub` names too), null for a
//!   name the node does not implement; without names, like `COMMAND`.
//! - `COMMAND DOCS [name ...]` → a map from command name to its documentation; unknown names
//!   are left out; without names, every implemented command.
//! - `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]` → implemented
//!   command names, subcommands (`config|get`) included.
//! - `COMMAND GETKEYS command [arg ...]` → the key arguments of a full command, for every
//!   Redis 7.0 command (implemented here or not). Errors: `ERR Invalid command specified`,
//!   `ERR The command has no key arguments`, `ERR Invalid number of arguments specified for
//!   command`, `ERR Invalid arguments specified for command`.
//! - `COMMAND HELP` → the subcommands above.
//!
//! Not implemented: `COMMAND GETKEYSANDFLAGS` (answers `unknown subcommand`).

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};
use slotproxy::resp::{Frame, ReplyBuf};

use super::args::is;
use super::errors::SYNTAX;
use super::{CmdResult, Ctx, Handler};
use crate::server::Shared;

pub const COMMANDS: &[(&str, Handler)] = &[("command", command)];

/// Subcommands of the containers implemented in this crate that no handler serves. Any other
/// subcommand of an implemented container counts as implemented.
const UNIMPLEMENTED_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("client", super::client::UNIMPLEMENTED),
    ("command", &["getkeysandflags"]),
    ("script", super::scripting::SCRIPT_UNIMPLEMENTED),
];

const HELP: &[&str] = &[
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
];

/// Writes a `HELP` reply as Redis's `addReplyHelp` does: a header line, the given lines,
/// and the `HELP` entry, all as simple strings.
pub fn write_help(out: &mut ReplyBuf<'_>, container: &str, lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for line in lines {
        out.simple(line);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}

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

/// The top-level commands the node implements, sorted by name.
fn implemented_commands(shared: &Shared) -> impl Iterator<Item = &'static CommandSpec> + '_ {
    CommandTable::get()
        .commands()
        .iter()
        .filter(move |spec| implemented(shared, spec))
}

fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(sub) = args.get(1) else {
        return info(ctx, &[]);
    };
    if is(sub, "count") {
        let count = implemented_commands(ctx.shared).count();
        ctx.out.integer(count as i64);
    } else if is(sub, "info") {
        info(ctx, &args[2..])?;
    } else if is(sub, "docs") {
        docs(ctx, &args[2..]);
    } else if is(sub, "list") {
        list(ctx, args)?;
    } else if is(sub, "getkeys") {
        getkeys(ctx, &args[2..])?;
    } else if is(sub, "help") {
        write_help(&mut ctx.out, "COMMAND", HELP);
    } else {
        return Err(super::unknown_subcommand(args));
    }
    Ok(())
}

fn info(ctx: &mut Ctx<'_>, names: &[Bytes]) -> CmdResult {
    if names.is_empty() {
        let all: Vec<&CommandSpec> = implemented_commands(ctx.shared).collect();
        ctx.out.array(all.len());
        for spec in all {
            spec.info.write(&mut ctx.out);
        }
        return Ok(());
    }
    ctx.out.array(names.len());
    for name in names {
        match CommandTable::get().by_full_name(name) {
            Some(spec) if implemented(ctx.shared, spec) => spec.info.write(&mut ctx.out),
            _ => ctx.out.null(),
        }
    }
    Ok(())
}

fn docs(ctx: &mut Ctx<'_>, names: &[Bytes]) {
    let found: Vec<&CommandSpec> = if names.is_empty() {
        implemented_commands(ctx.shared).collect()
    } else {
        names
            .iter()
            .filter_map(|name| CommandTable::get().by_full_name(name))
            .filter(|spec| implemented(ctx.shared, spec))
            .collect()
    };
    let empty = Frame::Map(Vec::new());
    ctx.out.map(found.len());
    for spec in found {
        ctx.out.bulk(spec.name.as_bytes());
        spec.docs.as_ref().unwrap_or(&empty).write(&mut ctx.out);
    }
}

/// The ACL categories of a command, from its `COMMAND INFO` entry (`@read`, `@fast`, ...).
fn categories(spec: &CommandSpec) -> impl Iterator<Item = &[u8]> {
    spec.info
        .as_array()
        .and_then(|fields| fields.get(6))
        .and_then(Frame::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Frame::as_bytes)
}

fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    enum Filter<'a> {
        All,
        Module,
        Category(&'a [u8]),
        Pattern(&'a [u8]),
    }
    let filter = match args {
        [_, _] => Filter::All,
        [_, _, filterby, kind, value] if is(filterby, "filterby") => {
            if is(kind, "module") {
                Filter::Module
            } else if is(kind, "aclcat") {
                Filter::Category(value)
            } else if is(kind, "pattern") {
                Filter::Pattern(value)
            } else {
                return Err(SYNTAX.into());
            }
        }
        _ => return Err(SYNTAX.into()),
    };
    let mut names: Vec<&str> = Vec::new();
    for spec in implemented_commands(ctx.shared) {
        let family = std::iter::once(spec).chain(
            spec.subcommands
                .iter()
                .filter(|sub| implemented(ctx.shared, sub)),
        );
        for member in family {
            let keep = match filter {
                Filter::All => true,
                // No modules can be loaded.
                Filter::Module => false,
                Filter::Category(wanted) => categories(member).any(|category| {
                    category
                        .strip_prefix(b"@")
                        .is_some_and(|c| c.eq_ignore_ascii_case(wanted))
                }),
                Filter::Pattern(pattern) => {
                    slotproxy::glob::glob_match(pattern, member.name.as_bytes(), true)
                }
            };
            if keep {
                names.push(&member.name);
            }
        }
    }
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

/// `COMMAND GETKEYS`, as Redis's `getKeysSubcommandImpl`: find the command (or subcommand),
/// check it has keys and that the argument count fits its arity, then find the keys.
fn getkeys(ctx: &mut Ctx<'_>, full: &[Bytes]) -> CmdResult {
    let spec = CommandTable::get()
        .lookup(full)
        .map_err(|_| "ERR Invalid command specified")?;
    if !spec.has_keys() {
        return Err("ERR The command has no key arguments".into());
    }
    if !spec.arity_ok(full.len()) {
        return Err("ERR Invalid number of arguments specified for command".into());
    }
    let keys = spec.key_indexes(full).unwrap_or_default();
    if keys.is_empty() && !spec.flags.contains(CommandFlags::NO_MANDATORY_KEYS) {
        return Err("ERR Invalid arguments specified for command".into());
    }
    ctx.out.array(keys.len());
    for index in keys {
        ctx.out.bulk(&full[index]);
    }
    Ok(())
}
