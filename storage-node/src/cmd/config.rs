//! `CONFIG` subcommands.
//!
//! - `CONFIG GET pattern [pattern ...]` → a map from setting name to value for every setting
//!   matching a glob pattern (case-insensitive); a pattern without glob characters is looked
//!   up directly and answered under the name as given. Unknown names are left out.
//! - `CONFIG SET name value [name value ...]` → `+OK`, all settings changed or none.
//!   Errors, as Redis 7.0 words them: `ERR Unknown option or number of arguments for CONFIG
//!   SET - 'name'`, `ERR CONFIG SET failed (possibly related to argument 'name') - reason`
//!   (reasons: a bad value, `can't set immutable config`, `can't set protected config`,
//!   `duplicate parameter`), `ERR syntax error` for an odd number of arguments.
//! - `CONFIG RESETSTAT` → `+OK`; zeroes the INFO counters.
//! - `CONFIG REWRITE` → `+OK` after rewriting the config file the node was started with;
//!   `ERR The server is running without a config file` without one.
//! - `CONFIG HELP` → the subcommands above.

use bytes::Bytes;

use super::args::{is, text};
use super::command::write_help;
use super::errors::SYNTAX;
use super::{CmdResult, Ctx, Handler};
use crate::config::params::{self, Access};

pub const COMMANDS: &[(&str, Handler)] = &[("config", config)];

const HELP: &[&str] = &[
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
];

fn config(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "get") {
        get(ctx, &args[2..]);
    } else if is(sub, "set") {
        set(ctx, args)?;
    } else if is(sub, "resetstat") {
        crate::server::stats::reset_all(ctx.shared, ctx.keyspace);
        ctx.out.ok();
    } else if is(sub, "rewrite") {
        let config = ctx.shared.config().clone();
        let user_lines: Vec<String> = if config.acl.file.is_empty() {
            let users = ctx.shared.acl.users();
            users
                .values()
                .map(|user| String::from_utf8_lossy(&crate::acl::file::user_line(user)).into())
                .collect()
        } else {
            Vec::new()
        };
        crate::config::rewrite(&config, &user_lines).map_err(|e| format!("ERR {e}"))?;
        ctx.out.ok();
    } else if is(sub, "help") {
        write_help(&mut ctx.out, "CONFIG", HELP);
    } else {
        return Err(super::unknown_subcommand(args));
    }
    Ok(())
}

fn has_glob(pattern: &[u8]) -> bool {
    pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

fn get(ctx: &mut Ctx<'_>, patterns: &[Bytes]) {
    // (name as shown, canonical name), first match first, no repeats. An alias and the
    // name it stands for are separate entries, as in Redis.
    let mut matches: Vec<(String, &'static str)> = Vec::new();
    let shown_already = |matches: &[(String, &str)], name: &str| {
        matches
            .iter()
            .any(|(shown, _)| shown.eq_ignore_ascii_case(name))
    };
    for pattern in patterns {
        if !has_glob(pattern) {
            let given = text(pattern);
            if let Some(param) = params::find(&given) {
                if !shown_already(&matches, &given) {
                    matches.push((given, param.name));
                }
            }
            continue;
        }
        for name in params::names() {
            if !shown_already(&matches, name)
                && slotproxy::glob::glob_match(pattern, name.as_bytes(), true)
            {
                let canonical = params::find(name).map_or(name, |p| p.name);
                matches.push((name.to_string(), canonical));
            }
        }
    }
    let config = ctx.shared.config().clone();
    ctx.out.map(matches.len());
    for (shown, name) in matches {
        ctx.out.bulk(shown.as_bytes());
        ctx.out
            .bulk(params::get(&config, name).unwrap_or_default().as_bytes());
    }
}

/// Applies every pair to a copy of the settings and installs the copy only if all of them
/// were valid, so a failed CONFIG SET changes nothing.
fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() % 2 == 1 {
        return Err(SYNTAX.into());
    }
    let pairs: Vec<(String, String)> = args[2..]
        .chunks(2)
        .map(|pair| (text(&pair[0]), text(&pair[1])))
        .collect();
    // First every name, as Redis checks them all before setting anything.
    let mut seen: Vec<&'static str> = Vec::new();
    // Duplicates are judged by the name given: an alias and its setting may both appear
    // (the later wins), as Redis allows.
    let mut given_names: Vec<String> = Vec::new();
    let mut refusal: Option<String> = None;
    for (given, _) in &pairs {
        let Some(param) = params::find(given) else {
            // An earlier refusal wins over a later unknown name, as in Redis.
            if refusal.is_some() {
                continue;
            }
            return Err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{given}'"
            )
            .into());
        };
        if refusal.is_some() {
            continue;
        }
        let reason = match param.access {
            Access::Immutable => Some("can't set immutable config"),
            Access::Protected => Some("can't set protected config"),
            Access::Mutable if given_names.contains(&given.to_ascii_lowercase()) => {
                Some("duplicate parameter")
            }
            Access::Mutable => None,
        };
        if let Some(reason) = reason {
            refusal = Some(failed(given, reason));
        }
        seen.push(param.name);
        given_names.push(given.to_ascii_lowercase());
    }
    if let Some(refusal) = refusal {
        return Err(refusal.into());
    }
    let mut updated = ctx.shared.config().clone();
    for ((given, value), name) in pairs.iter().zip(&seen) {
        // The error names the setting as the client did (an alias stays an alias).
        params::apply(&mut updated, name, std::slice::from_ref(value))
            .map_err(|reason| failed(given, &reason))?;
    }
    for name in &seen {
        if crate::config::inert::find(name).is_some() {
            let value = params::get(&updated, name).unwrap_or_default();
            crate::config::inert::report(name, &value);
        }
    }
    ctx.keyspace.apply_settings(&updated);
    crate::server::busy_poll::set_budget_usecs(updated.busy_poll_usecs);
    crate::log::set_level(updated.log_level());
    ctx.shared.aof.apply_settings(&updated);
    ctx.shared.client_memory.apply_settings(&updated);
    ctx.shared
        .replication
        .resize_backlog(updated.repl.backlog_size);
    // `requirepass` is the default user's password: setting it replaces the user's
    // passwords (or makes it `nopass` when empty), as Redis's setter does.
    if seen.contains(&"requirepass") {
        ctx.shared
            .acl
            .set_default_password(updated.requirepass.as_deref());
    }
    let appendonly = updated.appendonly;
    *ctx.shared.config_mut() = updated;
    switch_aof(ctx, appendonly)?;
    ctx.out.ok();
    Ok(())
}

/// `appendonly` changed: logging starts from a fresh rewrite of the current data, or
/// stops, as in Redis.
fn switch_aof(ctx: &mut Ctx<'_>, appendonly: bool) -> CmdResult {
    use crate::persistence::aof::files;
    if appendonly == ctx.shared.aof.is_on() {
        return Ok(());
    }
    if !appendonly {
        files::stop(ctx.shared, ctx.keyspace);
        return Ok(());
    }
    if files::start(ctx.shared, ctx.keyspace, false).is_err() {
        ctx.shared.config_mut().appendonly = false;
        return Err(failed("appendonly", "Unable to turn on AOF. Check server logs.").into());
    }
    Ok(())
}

fn failed(name: &str, reason: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
}
