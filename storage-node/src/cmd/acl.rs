//! `ACL`: users and their permissions (see `crate::acl`).
//!
//! - `ACL SETUSER name [rule ...]` → `+OK`; creates the user (off, no permissions) if
//!   needed and applies every rule, or none when one is wrong: `ERR Error in ACL SETUSER
//!   modifier '<rule>': <why>`. A selector may be split over several arguments.
//! - `ACL GETUSER name` → a map of `flags`, `passwords` (hashes), `commands`, `keys`,
//!   `channels` and `selectors` (each a map of the last three), or nil.
//! - `ACL DELUSER name [name ...]` → how many existed; their clients are disconnected.
//!   `default` cannot be deleted.
//! - `ACL USERS` → the names; `ACL LIST` → `user <name> <rules>` for each, in name order.
//! - `ACL WHOAMI` → the connection's user.
//! - `ACL CAT [category]` → the categories, or the commands of one.
//! - `ACL GENPASS [bits]` → `bits` (256 by default, up to 4096) random bits in hex.
//! - `ACL LOG [count | RESET]` → the newest `count` (10) refusals, each a map of `count`,
//!   `reason`, `context`, `object`, `username`, `age-seconds` and `client-info`.
//! - `ACL DRYRUN name command [arg ...]` → `+OK` if the user may run it, else the reason.
//! - `ACL LOAD` / `ACL SAVE` → `+OK`: the users from / to the `aclfile`.
//! - `ACL HELP`.

use bytes::Bytes;
use slotproxy::cluster::{CommandTable, LookupError};

use super::args::{int, is};
use super::object::reply_help;
use super::{CmdResult, Ctx, Handler};
use crate::acl::selector::{has_spaces, Selector};
use crate::acl::user::merge_selector_arguments;
use crate::acl::{categories, file, Denial, Reason, User};

pub const COMMANDS: &[(&str, Handler)] = &[("acl", acl)];

const HELP: &[&str] = &[
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
];

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You \
     may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE \
     (assuming you have a Redis configuration file set) in order to store users in the Redis \
     configuration.";

const GENPASS_MAX_BITS: i64 = 4096;

fn acl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    // CAT, GENPASS and LOG take at most one argument, which the command table (arity -2)
    // leaves to the command, as Redis does.
    let one_argument_at_most = is(sub, "cat") || is(sub, "genpass") || is(sub, "log");
    if one_argument_at_most && args.len() > 3 {
        return Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into());
    }
    if is(sub, "setuser") {
        setuser(ctx, args)
    } else if is(sub, "deluser") {
        deluser(ctx, &args[2..])
    } else if is(sub, "getuser") {
        getuser(ctx, &args[2]);
        Ok(())
    } else if is(sub, "list") || is(sub, "users") {
        list(ctx, is(sub, "users"));
        Ok(())
    } else if is(sub, "whoami") {
        let user = ctx.client.handle.user();
        ctx.out.bulk(&user);
        Ok(())
    } else if (is(sub, "load") || is(sub, "save")) && ctx.shared.config().acl.file.is_empty() {
        Err(NO_ACL_FILE.into())
    } else if is(sub, "load") {
        load(ctx)
    } else if is(sub, "save") {
        save(ctx)
    } else if is(sub, "cat") {
        cat(ctx, args.get(2))
    } else if is(sub, "genpass") {
        genpass(ctx, args.get(2))
    } else if is(sub, "log") {
        log(ctx, args.get(2))
    } else if is(sub, "dryrun") {
        dryrun(ctx, &args[2], &args[3..])
    } else if is(sub, "help") {
        reply_help(&mut ctx.out, &args[0], HELP);
        Ok(())
    } else {
        Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into())
    }
}

/// An argument as Redis prints it with `%s`: a C string, so it ends at the first NUL.
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(c_string(bytes))
}

/// The part of an argument Redis's C-string functions see (up to the first NUL).
fn c_string(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

fn setuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = &args[2];
    if has_spaces(name) {
        return Err("ERR Usernames can't contain spaces or null characters".into());
    }
    let rules = &args[3..];
    let merged = merge_selector_arguments(rules).map_err(|start| {
        format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            text(&rules[start])
        )
    })?;
    let all_channels = ctx.shared.config().acl.pubsub_all_channels;
    let mut users = ctx.shared.acl.users_mut();
    let before = users.get(name.as_ref()).cloned();
    let mut user = before
        .clone()
        .unwrap_or_else(|| User::new(name, all_channels));
    for rule in &merged {
        user.apply(rule, all_channels).map_err(|e| {
            format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                text(rule),
                e.message()
            )
        })?;
    }
    users.insert(name.to_vec(), user.clone());
    drop(users);
    if let Some(before) = before {
        disconnect_lost_subscribers(ctx, &before, &user);
    }
    ctx.out.ok();
    Ok(())
}

/// A user's channels were narrowed: its subscribed clients whose channels or patterns are
/// no longer all allowed are disconnected, as Redis's `ACLKillPubsubClientsIfNeeded`
/// does. Nothing happens when a selector allows every channel or every old pattern is
/// still listed.
fn disconnect_lost_subscribers(ctx: &mut Ctx<'_>, before: &User, after: &User) {
    if after.selectors.iter().any(|s| s.all_channels) {
        return;
    }
    let allowed: Vec<&Vec<u8>> = after.selectors.iter().flat_map(|s| &s.channels).collect();
    let kept = before
        .selectors
        .iter()
        .flat_map(|s| &s.channels)
        .all(|old| allowed.contains(&old));
    if kept {
        return;
    }
    let mut upcoming = Selector::new(false);
    upcoming.channels = allowed.into_iter().cloned().collect();
    let me = ctx.client.id();
    for handle in ctx.shared.clients.snapshot() {
        if handle.user() != after.name.as_slice() {
            continue;
        }
        let (channels, patterns) = ctx.keyspace.pubsub.subscriptions_of(&handle);
        let lost = patterns.iter().any(|p| !upcoming.channel_allowed(p, true))
            || channels.iter().any(|c| !upcoming.channel_allowed(c, false));
        if lost {
            close_client(ctx, &handle, me);
        }
    }
}

fn close_client(ctx: &mut Ctx<'_>, handle: &crate::server::clients::ClientHandle, me: u64) {
    if handle.id == me {
        ctx.client.close_after_reply = true;
        ctx.client.authenticated = false;
        ctx.client.acl_unrestricted_at = 0;
        *crate::server::clients::lock(&handle.user) = Bytes::from_static(b"default");
    } else {
        handle.request_kill();
    }
}

fn deluser(ctx: &mut Ctx<'_>, names: &[Bytes]) -> CmdResult {
    if names.iter().any(|n| n.as_ref() == b"default") {
        return Err("ERR The 'default' user cannot be removed".into());
    }
    let mut deleted = 0;
    let mut users = ctx.shared.acl.users_mut();
    let removed: Vec<Bytes> = names
        .iter()
        .filter(|name| users.remove(name.as_ref()).is_some())
        .cloned()
        .collect();
    drop(users);
    let me = ctx.client.id();
    for name in &removed {
        deleted += 1;
        for handle in ctx.shared.clients.snapshot() {
            if handle.user() == name {
                close_client(ctx, &handle, me);
            }
        }
    }
    ctx.out.integer(deleted);
    Ok(())
}

fn getuser(ctx: &mut Ctx<'_>, name: &[u8]) {
    let users = ctx.shared.acl.users();
    let Some(user) = users.get(name) else {
        ctx.out.null();
        return;
    };
    let out = &mut ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = user.flags();
    out.set(flags.len());
    for flag in flags {
        out.bulk(flag.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(user.passwords.len());
    for password in &user.passwords {
        out.bulk(password.as_bytes());
    }
    describe_selector(out, user.root());
    out.bulk(b"selectors");
    out.array(user.selectors.len() - 1);
    for selector in &user.selectors[1..] {
        out.map(3);
        describe_selector(out, selector);
    }
}

fn describe_selector(out: &mut slotproxy::resp::ReplyBuf<'_>, selector: &Selector) {
    out.bulk(b"commands");
    out.bulk(selector.describe_commands().as_bytes());
    out.bulk(b"keys");
    out.bulk(&selector.describe_keys());
    out.bulk(b"channels");
    out.bulk(&selector.describe_channels());
}

fn list(ctx: &mut Ctx<'_>, names_only: bool) {
    let users = ctx.shared.acl.users();
    ctx.out.array(users.len());
    for user in users.values() {
        if names_only {
            ctx.out.bulk(&user.name);
        } else {
            let line = crate::acl::file::user_line(user);
            ctx.out.bulk(&line);
        }
    }
}

/// ACL LOAD: every user is replaced, so every client logged in as another user than
/// `default` is disconnected, as Redis frees all the old users.
fn load(ctx: &mut Ctx<'_>) -> CmdResult {
    let config = ctx.shared.config().clone();
    let Some(path) = crate::acl::file_path(&config) else {
        return Err(NO_ACL_FILE.into());
    };
    let loaded =
        file::load(&path, config.acl.pubsub_all_channels).map_err(|e| format!("ERR {e}"))?;
    *ctx.shared.acl.users_mut() = loaded;
    let me = ctx.client.id();
    for handle in ctx.shared.clients.snapshot() {
        if handle.user().as_ref() != b"default" {
            close_client(ctx, &handle, me);
        }
    }
    ctx.out.ok();
    Ok(())
}

fn save(ctx: &mut Ctx<'_>) -> CmdResult {
    let config = ctx.shared.config().clone();
    let Some(path) = crate::acl::file_path(&config) else {
        return Err(NO_ACL_FILE.into());
    };
    let users = ctx.shared.acl.users();
    if let Err(e) = file::save(&path, &users) {
        crate::log::warning!("Saving the ACL file {}: {e}", path.display());
        return Err(
            "ERR There was an error trying to save the ACLs. Please check the server \
                    logs for more information"
                .into(),
        );
    }
    drop(users);
    ctx.out.ok();
    Ok(())
}

fn cat(ctx: &mut Ctx<'_>, category: Option<&Bytes>) -> CmdResult {
    let Some(category) = category else {
        ctx.out.array(categories::CATEGORIES.len());
        for name in categories::CATEGORIES {
            ctx.out.bulk(name.as_bytes());
        }
        return Ok(());
    };
    // Redis compares and prints the name as a C string (`strcasecmp`, `%.128s`).
    let category = c_string(category);
    let Some(bit) = categories::by_name(category) else {
        let shown = &category[..category.len().min(128)];
        return Err(format!("ERR Unknown category '{}'", text(shown)).into());
    };
    let names = categories::commands_in(bit);
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

fn genpass(ctx: &mut Ctx<'_>, bits: Option<&Bytes>) -> CmdResult {
    let bits = match bits {
        Some(arg) => int(arg)?,
        None => 256,
    };
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(format!(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a \
             positive number up to {GENPASS_MAX_BITS}"
        )
        .into());
    }
    let chars = ((bits + 3) / 4) as usize;
    let password: String = {
        use rand::Rng;
        let mut rng = rand::thread_rng();
        (0..chars)
            .map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)]))
            .collect()
    };
    ctx.out.bulk(password.as_bytes());
    Ok(())
}

fn log(ctx: &mut Ctx<'_>, argument: Option<&Bytes>) -> CmdResult {
    let mut count = 10;
    if let Some(argument) = argument {
        if is(argument, "reset") {
            crate::server::clients::lock(&ctx.shared.acl.log).clear();
            ctx.out.ok();
            return Ok(());
        }
        count = usize::try_from(int(argument)?.max(0)).unwrap_or(usize::MAX);
    }
    let now = crate::keyspace::unix_time_ms();
    let log = crate::server::clients::lock(&ctx.shared.acl.log);
    let count = count.min(log.len());
    let out = &mut ctx.out;
    out.array(count);
    for entry in log.newest(count) {
        out.map(7);
        out.bulk(b"count");
        out.integer(i64::try_from(entry.count).unwrap_or(i64::MAX));
        out.bulk(b"reason");
        out.bulk(entry.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(entry.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(&entry.object);
        out.bulk(b"username");
        out.bulk(&entry.username);
        out.bulk(b"age-seconds");
        out.double(now.saturating_sub(entry.updated_ms) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(entry.client_info.as_bytes());
    }
    Ok(())
}

/// Whether `name` could run `command`: checked as if it ran (keys and channels included),
/// nothing run and nothing logged.
fn dryrun(ctx: &mut Ctx<'_>, name: &[u8], command: &[Bytes]) -> CmdResult {
    let users = ctx.shared.acl.users();
    let Some(user) = users.get(name) else {
        return Err(format!("ERR User '{}' not found", text(name)).into());
    };
    let spec = match CommandTable::get().lookup(command) {
        Ok(spec) => spec,
        Err(LookupError::UnknownCommand | LookupError::UnknownSubcommand) => {
            return Err(format!("ERR Command '{}' not found", text(&command[0])).into());
        }
    };
    if !spec.arity_ok(command.len()) {
        return Err(super::errors::wrong_arity(&spec.name));
    }
    match user.check(spec, command) {
        Ok(()) => ctx.out.ok(),
        Err(Denial { reason, position }) => {
            let shown = command.get(position).map_or(&[][..], |arg| &arg[..]);
            let reply = match reason {
                Reason::Command => format!(
                    "This user has no permissions to run the '{}' command",
                    spec.name
                ),
                Reason::Key => format!(
                    "This user has no permissions to access the '{}' key",
                    text(shown)
                ),
                _ => format!(
                    "This user has no permissions to access the '{}' channel",
                    text(shown)
                ),
            };
            ctx.out.bulk(reply.as_bytes());
        }
    }
    Ok(())
}
