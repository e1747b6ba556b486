//! Rewriting the append-only file.
//!
//! - `BGREWRITEAOF` → `+Background append only file rewriting started` at once: the new
//!   base is written from a point-in-time snapshot in the background (see
//!   `persistence::aof::rewrite`); `aof_rewrite_in_progress` is 1 meanwhile.
//!   `+Background append only file rewriting scheduled` while a BGSAVE runs (or inside
//!   EXEC): it starts when that ends. `-ERR Background append only file rewriting already
//!   in progress` while one runs. With the AOF off only the base and its manifest are
//!   written, as in Redis 7.0.

use bytes::Bytes;

use super::{CmdResult, Ctx, Handler};
use crate::persistence::aof::rewrite::{self, BeginError, Begun};

pub const COMMANDS: &[(&str, Handler)] = &[("bgrewriteaof", bgrewriteaof)];

fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    match rewrite::begin(ctx.shared, ctx.keyspace, ctx.client.nested) {
        Ok(Begun::Started) => ctx
            .out
            .simple("Background append only file rewriting started"),
        Ok(Begun::Scheduled) => ctx
            .out
            .simple("Background append only file rewriting scheduled"),
        Err(BeginError::AlreadyRunning) => {
            return Err("ERR Background append only file rewriting already in progress".into())
        }
        Err(BeginError::Failed(_)) => return Err("ERR Can't execute an AOF background rewriting. Please check the server logs for more information.".into()),
    }
    Ok(())
}
