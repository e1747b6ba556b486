//! `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]` → OK.
//!
//! Sets the stream's last id (which the next automatic id follows) and, if given, its
//! entries-added counter and max deleted id. Errors, as Redis 7.0 words them:
//! `ERR no such key`, `ERR entries_added must be positive`,
//! `ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id`,
//! `ERR The ID specified in XSETID is smaller than the target stream top item`,
//! `ERR The entries_added specified in XSETID is smaller than the target stream length`.
//! Redis 7.0 does not compare the new id with the stream's current max deleted id.

use bytes::Bytes;

use super::{strict_id, write_stream};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, NO_SUCH_KEY, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::pubsub::notify;
use crate::types::stream::StreamId;

pub fn xsetid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = strict_id(&args[2])?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(&args[i], "entriesadded") && more > 0 {
            let n = int(&args[i + 1])?;
            if n < 0 {
                return Err("ERR entries_added must be positive".into());
            }
            entries_added = Some(n as u64);
        } else if is(&args[i], "maxdeletedid") && more > 0 {
            max_deleted = strict_id(&args[i + 1])?;
            if id < max_deleted {
                return Err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id".into());
            }
        } else {
            return Err(SYNTAX.into());
        }
        i += 2;
    }
    let key = &args[1];
    let db = ctx.db();
    let stream = write_stream(db, key)?.ok_or_else(|| CmdError::from(NO_SUCH_KEY))?;
    if stream.length > 0 {
        if id < stream.edge_id(false, true) {
            return Err(
                "ERR The ID specified in XSETID is smaller than the target stream top item".into(),
            );
        }
        if entries_added.is_some_and(|n| stream.length > n) {
            return Err("ERR The entries_added specified in XSETID is smaller than the target stream length".into());
        }
    }
    stream.last_id = id;
    if let Some(n) = entries_added {
        stream.entries_added = n;
    }
    if !max_deleted.is_zero() {
        stream.max_deleted_id = max_deleted;
    }
    db.dirty += 1;
    ctx.out.ok();
    ctx.notify(notify::STREAM, "xsetid", key);
    Ok(())
}
