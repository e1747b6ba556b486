//! Lua scripts.
//!
//! - `EVAL script numkeys [key ...] [arg ...]` → the script's result, converted as Redis
//!   converts Lua values. The script is cached under its SHA1.
//! - `EVALSHA sha1 numkeys [key ...] [arg ...]` → the same for a cached script;
//!   `NOSCRIPT No matching script. Please use EVAL.` when it is not cached.
//! - `EVAL_RO` / `EVALSHA_RO` → the same, but write commands fail with `ERR Write commands
//!   are not allowed from read-only scripts.`; a script with a shebang must then be flagged
//!   `no-writes` (`ERR Can not execute a script with write flag using *_ro command.`).
//! - numkeys errors: `ERR value is not an integer or out of range`, `ERR Number of keys can't
//!   be greater than number of args`, `ERR Number of keys can't be negative`.
//! - `SCRIPT LOAD script` → the SHA1 (compile errors: `ERR Error compiling script (new
//!   function): user_script:1: ...`).
//! - `SCRIPT EXISTS sha1 [sha1 ...]` → an array of 1/0.
//! - `SCRIPT FLUSH [ASYNC|SYNC]` → `+OK`; other modes: `ERR SCRIPT FLUSH only support
//!   SYNC|ASYNC option`.
//! - `SCRIPT KILL` → `+OK` when a running script is killed (answered by the connection while
//!   the script runs, see `scripting::busy`); here, with no script running, `NOTBUSY No
//!   scripts in execution right now.`
//! - `SCRIPT HELP` → the subcommands.

use bytes::Bytes;

use super::args::is;
use super::{CmdResult, Ctx, Handler};
use crate::scripting::{self, busy};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("eval", eval),
    ("evalsha", evalsha),
    ("eval_ro", eval_ro),
    ("evalsha_ro", evalsha_ro),
    ("script", script),
];

/// SCRIPT subcommands no handler serves.
pub const SCRIPT_UNIMPLEMENTED: &[&str] = &["debug"];

const HELP: &[&str] = &[
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
];

fn eval(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    scripting::eval(ctx, args, false, false)
}

fn evalsha(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    scripting::eval(ctx, args, true, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    scripting::eval(ctx, args, false, true)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    scripting::eval(ctx, args, true, true)
}

fn script(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    let scripting = &ctx.shared.scripting;
    if is(sub, "load") && args.len() == 3 {
        let sha = scripting.load(&args[2])?;
        ctx.out.bulk(sha.as_bytes());
    } else if is(sub, "exists") && args.len() >= 3 {
        ctx.out.array(args.len() - 2);
        for sha in &args[2..] {
            ctx.out.integer(i64::from(scripting.exists(sha)));
        }
    } else if is(sub, "flush") {
        let mode_ok = match args {
            [_, _] => true,
            [_, _, mode] => is(mode, "sync") || is(mode, "async"),
            _ => false,
        };
        if !mode_ok {
            return Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option".into());
        }
        scripting.flush();
        ctx.out.ok();
    } else if is(sub, "kill") && args.len() == 2 {
        // The running script holds the keyspace; with it held here, none is running.
        return Err(busy::NOTBUSY.into());
    } else if is(sub, "help") && args.len() == 2 {
        super::command::write_help(&mut ctx.out, "SCRIPT", HELP);
    } else {
        return Err(super::unknown_subcommand(args));
    }
    Ok(())
}
