//! `CLIENT` subcommands.
//!
//! - `CLIENT ID` → the connection's id.
//! - `CLIENT SETNAME name` → `+OK`; names may not contain spaces or special characters.
//! - `CLIENT GETNAME` → the name, or null.

use bytes::Bytes;

use super::args::is;
use super::{CmdResult, Ctx, Handler};
use crate::server::clients::lock;

pub const COMMANDS: &[(&str, Handler)] = &[("client", client)];

/// Redis refuses names with characters outside `!`..`~`.
pub fn validate_name(name: &[u8]) -> CmdResult {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        );
    }
    Ok(())
}

fn client(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "id") {
        ctx.out.integer(ctx.client.id() as i64);
    } else if is(sub, "setname") {
        validate_name(&args[2])?;
        *lock(&ctx.client.handle.name) = args[2].to_vec();
        ctx.out.ok();
    } else if is(sub, "getname") {
        let name = lock(&ctx.client.handle.name).clone();
        if name.is_empty() {
            ctx.out.null();
        } else {
            ctx.out.bulk(&name);
        }
    } else {
        return Err(super::unknown_subcommand(args));
    }
    Ok(())
}
