//! Functions.
//!
//! - `FUNCTION LOAD [REPLACE] code` → the library name. `code` starts with
//!   `#!lua name=<library>` and registers functions with `redis.register_function`. Errors:
//!   `ERR Missing library metadata`, `ERR Library 'x' already exists`, `ERR No functions
//!   registered`, `ERR Function f already exists`, `ERR Error compiling function: ...`,
//!   `ERR Error registering functions: ...`, `ERR Unknown option given: x`.
//! - `FUNCTION DELETE library` → `+OK`, or `ERR Library not found`.
//! - `FUNCTION FLUSH [ASYNC|SYNC]` → `+OK`.
//! - `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]` → per library a map of
//!   `library_name`, `engine`, `functions` (maps of `name`, `description`, `flags`) and, with
//!   WITHCODE, `library_code`.
//! - `FUNCTION STATS` → `running_script` and `engines` (libraries and functions counts).
//!   Here `running_script` is nil: a running function holds the keyspace. While one is
//!   busy, `scripting::busy` answers with its name, command and `duration_ms`.
//! - `FUNCTION DUMP` → a payload of every library; `FUNCTION RESTORE payload
//!   [FLUSH|APPEND|REPLACE]` → `+OK`.
//! - `FUNCTION KILL` → `NOTBUSY ...` here; a running function is killed by the connection's
//!   busy path (see `scripting::busy`).
//! - `FUNCTION HELP` → the subcommands.
//! - `FCALL function numkeys [key ...] [arg ...]` / `FCALL_RO ...` → the function's result
//!   (`ERR Function not found`, checked before numkeys; `ERR Bad number of keys provided`;
//!   FCALL_RO of a function not flagged `no-writes`: `ERR Can not
//!   execute a script with write flag using *_ro command.`).

use bytes::Bytes;
use slotproxy::glob::glob_match;

use super::args::is;
use super::{CmdResult, Ctx, Handler};
use crate::scripting::functions::RestorePolicy;
use crate::scripting::{self, busy};
use crate::server::clients::lock;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("function", function),
    ("fcall", fcall),
    ("fcall_ro", fcall_ro),
];

const HELP: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
];

fn function(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "load") {
        load(ctx, args)
    } else if is(sub, "delete") {
        lock(&ctx.shared.scripting.functions).delete(&args[2])?;
        ctx.out.ok();
        Ok(())
    } else if is(sub, "flush") {
        if args.len() > 3 {
            return Err(subcommand_syntax_error(args));
        }
        if let Some(mode) = args.get(2) {
            if !is(mode, "sync") && !is(mode, "async") {
                return Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into());
            }
        }
        lock(&ctx.shared.scripting.functions).flush();
        ctx.out.ok();
        Ok(())
    } else if is(sub, "list") {
        list(ctx, args)
    } else if is(sub, "stats") {
        stats(ctx)
    } else if is(sub, "dump") {
        let compress = ctx.shared.config().rdbcompression;
        let payload = lock(&ctx.shared.scripting.functions).dump(compress);
        ctx.out.bulk(&payload);
        Ok(())
    } else if is(sub, "restore") {
        restore(ctx, args)
    } else if is(sub, "kill") {
        Err(busy::NOTBUSY.into())
    } else if is(sub, "help") {
        super::command::write_help(&mut ctx.out, "FUNCTION", HELP);
        Ok(())
    } else {
        Err(super::unknown_subcommand(args))
    }
}

/// Redis's `addReplySubcommandSyntaxError`.
fn subcommand_syntax_error(args: &[Bytes]) -> super::CmdError {
    slotproxy::protocol::errors::subcommand_syntax_error(args).into()
}

fn load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (code, options) = args[2..]
        .split_last()
        .ok_or_else(|| super::errors::wrong_arity("function|load"))?;
    let mut replace = false;
    for option in options {
        if is(option, "replace") {
            replace = true;
        } else {
            // Redis prints the option with `%s`: up to a NUL byte.
            let shown = slotproxy::protocol::errors::c_string(option);
            return Err(format!("ERR Unknown option given: {shown}").into());
        }
    }
    let shared = ctx.shared;
    let name = lock(&shared.scripting.functions).load(&shared.scripting.state, code, replace)?;
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut pattern: Option<&Bytes> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < args.len() {
        let arg = &args[i];
        if is(arg, "withcode") && !with_code {
            with_code = true;
        } else if is(arg, "libraryname") && pattern.is_none() {
            pattern =
                Some(args.get(i + 1).ok_or_else(|| {
                    super::CmdError::from("ERR library name argument was not given")
                })?);
            i += 1;
        } else {
            // Redis prints the argument with `%s`: up to a NUL byte.
            let shown = slotproxy::protocol::errors::c_string(arg);
            return Err(format!("ERR Unknown argument {shown}").into());
        }
        i += 1;
    }
    let functions = lock(&ctx.shared.scripting.functions);
    let libraries: Vec<_> = functions
        .libraries()
        .iter()
        .filter(|l| pattern.is_none_or(|p| glob_match(p, l.name.as_bytes(), false)))
        .collect();
    let out = &mut ctx.out;
    out.array(libraries.len());
    for lib in libraries {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for f in &lib.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names = f.flags.names();
            out.set(names.len());
            for name in names {
                out.simple(name);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
    Ok(())
}

fn stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let functions = lock(&ctx.shared.scripting.functions);
    let out = &mut ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    out.null();
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.integer(functions.libraries().len() as i64);
    out.bulk(b"functions_count");
    out.integer(functions.function_count() as i64);
    Ok(())
}

fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 4 {
        return Err(subcommand_syntax_error(args));
    }
    let policy =
        match args.get(3) {
            None => RestorePolicy::Append,
            Some(p) if is(p, "append") => RestorePolicy::Append,
            Some(p) if is(p, "replace") => RestorePolicy::Replace,
            Some(p) if is(p, "flush") => RestorePolicy::Flush,
            Some(_) => return Err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                    .into(),
            ),
        };
    let shared = ctx.shared;
    lock(&shared.scripting.functions).restore(&shared.scripting.state, &args[2], policy)?;
    ctx.out.ok();
    Ok(())
}

fn fcall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    call(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    call(ctx, args, true)
}

fn call(ctx: &mut Ctx<'_>, args: &[Bytes], read_only_command: bool) -> CmdResult {
    let shared = ctx.shared;
    let functions = lock(&shared.scripting.functions);
    // Redis's order: the function first, then numkeys (whose own error text differs from
    // EVAL's when it is not an integer).
    let flags = functions
        .flags_of(&args[1])
        .ok_or_else(|| super::CmdError::from("ERR Function not found"))?;
    if slotproxy::numbers::parse_i64(&args[2]).is_none() {
        return Err("ERR Bad number of keys provided".into());
    }
    let (keys, argv) = scripting::split_keys(args)?;
    if read_only_command && !flags.no_writes {
        return Err("ERR Can not execute a script with write flag using *_ro command.".into());
    }
    let name = String::from_utf8_lossy(&args[1]).into_owned();
    let mode = scripting::RunMode {
        read_only: read_only_command || flags.no_writes,
        allow_oom: flags.allow_oom,
    };
    shared
        .scripting
        .state
        .describe_function(crate::scripting::busy::RunningFunction {
            name: args[1].to_vec(),
            command: args.to_vec(),
            libraries: functions.libraries().len(),
            functions: functions.function_count(),
        });
    functions.with_function(&shared.scripting.state, &args[1], |engine, func| {
        scripting::run(ctx, engine, func, (keys, argv), mode, &name, true)
    })
}
