//! Rewriting the append-only file.
//!
//! - `BGREWRITEAOF` → `+Background append only file rewriting started` once a new base
//!   file (the data now), a new empty incremental file and the manifest naming them
//!   replaced the old files (see `persistence::aof::files`). With the AOF off only the
//!   base and its manifest are written, as in Redis 7.0. `-ERR` if the rewrite failed
//!   (the reason is in the log).
//!
//! The rewrite runs under the keyspace lock for now (the node answers nobody meanwhile,
//! as with SAVE); INFO's `aof_rewrite_in_progress` is therefore never seen at 1.

use bytes::Bytes;

use super::{CmdResult, Ctx, Handler};
use crate::persistence::aof::files;

pub const COMMANDS: &[(&str, Handler)] = &[("bgrewriteaof", bgrewriteaof)];

fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    files::rewrite(ctx.shared, ctx.keyspace)
        .map_err(|_| "ERR Can't execute an AOF background rewriting. Please check the server logs for more information.")?;
    ctx.out
        .simple("Background append only file rewriting started");
    Ok(())
}
