//! `SYNC` and `PSYNC replid offset`: the connection becomes a replica of this node.
//!
//! - `PSYNC <replid> <offset>` → `+CONTINUE <replid>` and the stream from `offset` when
//!   the history matches and the backlog holds it; else `+FULLRESYNC <replid> <offset>`,
//!   the RDB (`$<len>\r\n<bytes>`, or `$EOF:<mark>\r\n<bytes><mark>` diskless), then the
//!   stream. `PSYNC ? -1` asks for a full sync.
//! - `SYNC` → the RDB and the stream, without the `+FULLRESYNC` line.
//! - A replica whose own master link is down answers `-NOMASTERLINK Can't SYNC while not
//!   connected with my master`. A connection that is already a replica is ignored.
//!
//! See `crate::replication::master::sync`.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::args::{int, is};
use super::{CmdResult, Ctx, Handler};
use crate::replication::master::sync::{attach, Request};
use crate::replication::{failover, replica};

pub const COMMANDS: &[(&str, Handler)] = &[("sync", sync), ("psync", psync)];

fn sync(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    start(ctx, Request { psync: None })
}

fn psync(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.client.handle.replica.load(Relaxed) {
        return Ok(());
    }
    if args.get(3).is_some_and(|a| is(a, "failover")) {
        // The old master of a FAILOVER asks this replica to take over; only if it is the
        // master this node follows (same history), as Redis checks.
        if !replica::is_replica(ctx.shared) {
            return Err("ERR PSYNC FAILOVER can't be sent to a master.".into());
        }
        if args[1] != ctx.shared.replication.state().replid.as_bytes() {
            return Err("ERR PSYNC FAILOVER replid must match my replid.".into());
        }
        if replica::promote(ctx.shared, ctx.keyspace) {
            crate::log::notice!(
                "MASTER MODE enabled (failover request from '{}')",
                super::client::info_line(&ctx.client.handle)
            );
        }
    }
    let offset = int(&args[2])?;
    let replid = String::from_utf8_lossy(&args[1]).into_owned();
    start(
        ctx,
        Request {
            psync: Some((&replid, offset)),
        },
    )
}

fn start(ctx: &mut Ctx<'_>, request: Request<'_>) -> CmdResult {
    if ctx.client.handle.replica.load(Relaxed) {
        return Ok(());
    }
    // Replicas do not sync with a node that is failing over.
    if ctx.shared.replication.failover.phase() != failover::Phase::None {
        return Err("NOMASTERLINK Can't SYNC while failing over".into());
    }
    // A master serves syncs always; a replica only while it follows its own master.
    if replica::is_replica(ctx.shared) && !replica::link_up(ctx.shared) {
        return Err("NOMASTERLINK Can't SYNC while not connected with my master".into());
    }
    let handshake = ctx.client.replica_handshake.clone();
    let handle = ctx.client.handle.clone();
    let attached = attach(
        ctx.shared,
        ctx.keyspace,
        &handle,
        handshake,
        request,
        ctx.out.buf,
    );
    ctx.client.takeover = Some(attached);
    Ok(())
}
