//! Managing consumer groups.
//!
//! - `XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]` → OK; `$` is the stream's last
//!   id. Errors: `BUSYGROUP Consumer Group name already exists`, and without MKSTREAM `ERR
//!   The XGROUP subcommand requires the key to exist. ...` for a missing key.
//! - `XGROUP SETID key group id|$ [ENTRIESREAD n]` → OK (`-` and `+` are allowed ids).
//! - `XGROUP DESTROY key group` → 1, or 0 if there was no such group. Readers blocked on
//!   the group are woken with `NOGROUP the consumer group this client was blocked on no
//!   longer exists`.
//! - `XGROUP CREATECONSUMER key group consumer` → 1, or 0 if it exists.
//! - `XGROUP DELCONSUMER key group consumer` → how many pending entries it had.
//! - `XGROUP HELP`.
//!
//! `ENTRIESREAD` takes a count or -1 (unknown): `ERR value for ENTRIESREAD must be positive
//! or -1`. SETID, CREATECONSUMER and DELCONSUMER on a missing group answer `NOGROUP No such
//! consumer group '<group>' for key name '<key>'`. Options are read before the key is
//! looked up, as in Redis. Notifications: `xgroup-create`, `xgroup-setid`,
//! `xgroup-destroy`, `xgroup-createconsumer`, `xgroup-delconsumer`.

use bytes::Bytes;
use slotproxy::protocol::errors::c_string;
use slotproxy::protocol::errors::subcommand_syntax_error;

use super::{db_and_out, parse_id, strict_id, write_stream};
use crate::cmd::args::{int, is};
use crate::cmd::command::write_help;
use crate::cmd::errors::CmdError;
use crate::cmd::{unknown_subcommand, CmdResult, Ctx};
use crate::pubsub::notify;
use crate::types::stream::group::{ConsumerGroup, ENTRIES_READ_UNKNOWN};
use crate::types::stream::{IdSyntax, StreamId};
use crate::types::{StreamValue, Value};

const HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

const KEY_REQUIRED: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";

/// SETID's id: `-` and `+` allowed (`streamParseIDOrReply`).
const LOOSE: IdSyntax = IdSyntax {
    missing_seq: 0,
    strict: false,
    auto_seq: false,
};

/// `NOGROUP No such consumer group ...` as XGROUP and XINFO word it.
pub fn no_group(group: &[u8], key: &[u8]) -> CmdError {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        c_string(group),
        c_string(key)
    )
    .into()
}

/// ENTRIESREAD's value: a count or -1.
fn entries_read_arg(arg: &[u8]) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n < 0 && n != ENTRIES_READ_UNKNOWN {
        return Err("ERR value for ENTRIESREAD must be positive or -1".into());
    }
    Ok(n)
}

/// CREATE's and SETID's options from `args[5..]`: (MKSTREAM, ENTRIESREAD).
fn parse_options(args: &[Bytes], create: bool) -> Result<(bool, i64), CmdError> {
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_UNKNOWN;
    let mut i = 5;
    while i < args.len() {
        if create && is(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if is(&args[i], "entriesread") && i + 1 < args.len() {
            entries_read = entries_read_arg(&args[i + 1])?;
            i += 2;
        } else {
            return Err(subcommand_syntax_error(args).into());
        }
    }
    Ok((mkstream, entries_read))
}

pub fn xgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "help") {
        write_help(&mut ctx.out, "XGROUP", HELP);
        return Ok(());
    }
    let create = is(sub, "create");
    let known = ["setid", "destroy", "createconsumer", "delconsumer"];
    if !create && !known.iter().any(|name| is(sub, name)) {
        return Err(unknown_subcommand(args));
    }
    let (mkstream, entries_read) = if create || is(sub, "setid") {
        parse_options(args, create)?
    } else {
        (false, ENTRIES_READ_UNKNOWN)
    };
    let (key, group) = (&args[2], &args[3]);
    let now = ctx.now_ms();
    let (db, out) = db_and_out(ctx);
    let exists = write_stream(db, key)?.is_some();
    if !exists && !mkstream {
        return Err(KEY_REQUIRED.into());
    }
    if create {
        if args.len() > 8 {
            return Err(subcommand_syntax_error(args).into());
        }
        let last_id = write_stream(db, key)?.map_or(StreamId::MIN, |s| s.last_id);
        let id = match &args[4][..] {
            b"$" => last_id,
            text => strict_id(text)?,
        };
        if !exists {
            db.insert(key, Value::Stream(Box::new(StreamValue::new())), 0);
        }
        let Some(stream) = write_stream(db, key)? else {
            return Err(KEY_REQUIRED.into());
        };
        if stream.groups.contains_key(&group[..]) {
            return Err("BUSYGROUP Consumer Group name already exists".into());
        }
        stream
            .groups
            .insert(group.to_vec(), ConsumerGroup::new(id, entries_read));
        db.dirty += 1;
        out.ok();
        ctx.notify(notify::STREAM, "xgroup-create", key);
        return Ok(());
    }
    let Some(stream) = write_stream(db, key)? else {
        return Err(KEY_REQUIRED.into());
    };
    if is(sub, "destroy") {
        if args.len() != 4 {
            return Err(subcommand_syntax_error(args).into());
        }
        if stream.groups.remove(&group[..]).is_none() {
            out.integer(0);
            return Ok(());
        }
        db.dirty += 1;
        out.integer(1);
        ctx.notify(notify::STREAM, "xgroup-destroy", key);
        // Readers blocked on the group learn it is gone.
        ctx.signal_key_ready(key);
        return Ok(());
    }
    let last_id = stream.last_id;
    let Some(cg) = stream.groups.get_mut(&group[..]) else {
        return Err(no_group(group, key));
    };
    if is(sub, "setid") {
        if args.len() != 5 && args.len() != 7 {
            return Err(subcommand_syntax_error(args).into());
        }
        cg.last_id = match &args[4][..] {
            b"$" => last_id,
            text => parse_id(text, LOOSE)?.id,
        };
        cg.entries_read = entries_read;
        db.dirty += 1;
        out.ok();
        ctx.notify(notify::STREAM, "xgroup-setid", key);
    } else if is(sub, "createconsumer") {
        let created = cg.create_consumer(&args[4], now);
        out.integer(i64::from(created));
        if created {
            db.dirty += 1;
            ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
        }
    } else {
        let Some(pending) = cg.delete_consumer(&args[4]) else {
            out.integer(0);
            return Ok(());
        };
        db.dirty += 1;
        out.integer(pending as i64);
        ctx.notify(notify::STREAM, "xgroup-delconsumer", key);
    }
    Ok(())
}
