//! `COMMAND` and its subcommands, answered from the shared command table by both servers.
//!
//! - `COMMAND` → the `COMMAND INFO` entry of every command the server serves.
//! - `COMMAND COUNT` → how many top-level commands it serves.
//! - `COMMAND INFO [name ...]` → one entry per name (`container|sub` names too), null for a
//!   name it does not serve; without names, like `COMMAND`. A container's nested entries
//!   list only the subcommands served.
//! - `COMMAND DOCS [name ...]` → a map from name to documentation; unknown names are left
//!   out; without names, every command served. A container's `subcommands` map holds only
//!   the subcommands served.
//! - `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]` → names served,
//!   subcommands (`config|get`) included; MODULE lists the commands of that module (the
//!   node's RedisBloom commands are module `bf`), its name compared ignoring case.
//! - `COMMAND GETKEYS command [arg ...]` → the key arguments of a full command;
//!   `COMMAND GETKEYSANDFLAGS command [arg ...]` → `[key, [flag ...]]` pairs. Both work for
//!   every Redis 7.0 command, served or not. Errors: `ERR Invalid command specified`, `ERR
//!   The command has no key arguments`, `ERR Invalid number of arguments specified for
//!   command`, `ERR Invalid arguments specified for command`.
//! - `COMMAND HELP` → the subcommands above.
//!
//! Which commands a server "serves" is the caller's `served` predicate: the node lists what
//! it implements, the proxy what it does not refuse.

use bytes::Bytes;

use super::errors::{unknown_subcommand, SYNTAX};
use crate::cluster::{CommandFlags, CommandSpec, CommandTable};
use crate::resp::{Frame, ReplyBuf};

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
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
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

/// Which commands a server serves.
pub type Served<'a> = &'a dyn Fn(&CommandSpec) -> bool;

fn served_commands<'a>(served: Served<'a>) -> impl Iterator<Item = &'static CommandSpec> + 'a {
    CommandTable::get()
        .commands()
        .iter()
        .filter(move |spec| served(spec))
}

/// Answers a `COMMAND` request (arity already checked by the table look-up).
pub fn reply(out: &mut ReplyBuf<'_>, args: &[Bytes], served: Served<'_>) -> Result<(), String> {
    let Some(sub) = args.get(1) else {
        info(out, &[], served);
        return Ok(());
    };
    let rest = args.get(2..).unwrap_or(&[]);
    match sub.to_ascii_lowercase().as_slice() {
        b"count" => out.integer(served_commands(served).count() as i64),
        b"info" => info(out, rest, served),
        b"docs" => docs(out, rest, served),
        b"list" => list(out, rest, served)?,
        b"getkeys" => getkeys(out, rest, false)?,
        b"getkeysandflags" => getkeys(out, rest, true)?,
        b"help" => write_help(out, "COMMAND", HELP),
        _ => return Err(unknown_subcommand(args)),
    }
    Ok(())
}

fn info(out: &mut ReplyBuf<'_>, names: &[Bytes], served: Served<'_>) {
    if names.is_empty() {
        let all: Vec<&CommandSpec> = served_commands(served).collect();
        out.array(all.len());
        for spec in all {
            write_info(out, spec, served);
        }
        return;
    }
    out.array(names.len());
    for name in names {
        match CommandTable::get().by_full_name(name) {
            Some(spec) if served(spec) => write_info(out, spec, served),
            _ => out.null(),
        }
    }
}

fn docs(out: &mut ReplyBuf<'_>, names: &[Bytes], served: Served<'_>) {
    let found: Vec<&CommandSpec> = if names.is_empty() {
        served_commands(served).collect()
    } else {
        names
            .iter()
            .filter_map(|name| CommandTable::get().by_full_name(name))
            .filter(|spec| served(spec))
            .collect()
    };
    out.map(found.len());
    for spec in found {
        out.bulk(spec.name.as_bytes());
        let docs = spec.docs().unwrap_or_else(|| Frame::Map(Vec::new()));
        if all_subcommands_served(spec, served) {
            docs.write(out);
        } else {
            let mut docs = docs;
            if let Frame::Map(fields) = &mut docs {
                for (field, value) in fields.iter_mut() {
                    if let (Some(b"subcommands"), Frame::Map(subs)) = (field.as_bytes(), value) {
                        subs.retain(|(name, _)| served_name(name, served));
                    }
                }
            }
            docs.write(out);
        }
    }
}

fn all_subcommands_served(spec: &CommandSpec, served: Served<'_>) -> bool {
    spec.subcommands.iter().all(served)
}

/// Whether the command named by a frame of the table's own entries is served.
fn served_name(name: &Frame, served: Served<'_>) -> bool {
    name.as_bytes()
        .and_then(|name| CommandTable::get().by_full_name(name))
        .is_some_and(served)
}

/// A command's `COMMAND INFO` entry. Its nested subcommand entries (the tenth field) list
/// only the subcommands the server serves, as `COMMAND LIST` does.
fn write_info(out: &mut ReplyBuf<'_>, spec: &CommandSpec, served: Served<'_>) {
    let mut entry = spec.info();
    if all_subcommands_served(spec, served) {
        entry.write(out);
        return;
    }
    if let Frame::Array(fields) = &mut entry {
        if let Some(Frame::Array(subs)) = fields.get_mut(9) {
            subs.retain(|sub| {
                sub.as_array()
                    .and_then(|fields| fields.first())
                    .is_some_and(|name| served_name(name, served))
            });
        }
    }
    entry.write(out);
}

/// `COMMAND LIST`; `options` are the arguments after `LIST`.
fn list(out: &mut ReplyBuf<'_>, options: &[Bytes], served: Served<'_>) -> Result<(), String> {
    enum Filter<'a> {
        All,
        Module(&'a [u8]),
        Category(&'a [u8]),
        Pattern(&'a [u8]),
    }
    let filter = match options {
        [] => Filter::All,
        [filterby, kind, value] if filterby.eq_ignore_ascii_case(b"filterby") => {
            match kind.to_ascii_lowercase().as_slice() {
                b"module" => Filter::Module(value),
                b"aclcat" => Filter::Category(value),
                b"pattern" => Filter::Pattern(value),
                _ => return Err(SYNTAX.into()),
            }
        }
        _ => return Err(SYNTAX.into()),
    };
    let mut names: Vec<&str> = Vec::new();
    for spec in served_commands(served) {
        let family = std::iter::once(spec).chain(spec.subcommands.iter().filter(|s| served(s)));
        for member in family {
            let keep = match filter {
                Filter::All => true,
                Filter::Module(wanted) => member
                    .module()
                    .is_some_and(|m| m.as_bytes().eq_ignore_ascii_case(wanted)),
                Filter::Category(wanted) => member.acl_categories().iter().any(|category| {
                    category
                        .strip_prefix(b"@")
                        .is_some_and(|c| c.eq_ignore_ascii_case(wanted))
                }),
                Filter::Pattern(pattern) => {
                    crate::glob::glob_match(pattern, member.name.as_bytes(), true)
                }
            };
            if keep {
                names.push(&member.name);
            }
        }
    }
    out.array(names.len());
    for name in names {
        out.bulk(name.as_bytes());
    }
    Ok(())
}

/// `COMMAND GETKEYS` and `GETKEYSANDFLAGS`, as Redis's `getKeysSubcommandImpl`: find the
/// command (or subcommand), check it has keys and that the argument count fits its arity,
/// then find the keys.
fn getkeys(out: &mut ReplyBuf<'_>, full: &[Bytes], with_flags: bool) -> Result<(), String> {
    let spec = CommandTable::get()
        .lookup(full)
        .map_err(|_| "ERR Invalid command specified".to_string())?;
    if !spec.has_keys() {
        return Err("ERR The command has no key arguments".into());
    }
    if !spec.arity_ok(full.len()) {
        return Err("ERR Invalid number of arguments specified for command".into());
    }
    let keys = spec.keys_and_flags(full).unwrap_or_default();
    if keys.is_empty() && !spec.flags.contains(CommandFlags::NO_MANDATORY_KEYS) {
        return Err("ERR Invalid arguments specified for command".into());
    }
    out.array(keys.len());
    for (index, flags) in keys {
        let key = full.get(index).map_or(&b""[..], |k| k);
        if !with_flags {
            out.bulk(key);
            continue;
        }
        out.array(2);
        out.bulk(key);
        out.set(flags.len());
        for flag in flags {
            out.simple(flag);
        }
    }
    Ok(())
}
