//! `WAIT numreplicas timeout` → the number of replicas that acknowledged this client's
//! last write (an integer), once at least `numreplicas` did or after `timeout`
//! milliseconds (0: no limit).
//!
//! The offset waited for is the stream's end after the client's last write (Redis's
//! `woff`); a replica counts only once its `REPLCONF ACK` reached it, never before. When
//! not enough have, the replicas are asked for an ACK at once (`REPLCONF GETACK *` in the
//! stream) and the client waits without holding the keyspace (see
//! `crate::replication::wait`). Inside MULTI or a script it answers the count at once.
//! - not an integer count → `-ERR value is not an integer or out of range`; a bad timeout
//!   → `-ERR timeout is not an integer or out of range` / `-ERR timeout is negative`
//! - on a replica → `-ERR WAIT cannot be used with replica instances. ...`

use std::time::Duration;

use bytes::Bytes;

use super::args::int;
use super::{CmdResult, Ctx, Handler};
use crate::replication::replica;

pub const COMMANDS: &[(&str, Handler)] = &[("wait", wait)];

const ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note \
    that since Redis 4.0 if a replica is configured to be writable (which is not the default) \
    writes to replicas are just local and are not propagated.";

const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";

fn wait(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if replica::is_replica(ctx.shared) {
        return Err(ON_REPLICA.into());
    }
    let needed = int(&args[1])?;
    let timeout_ms = super::args::timeout_millis(&args[2])?;
    let replication = &ctx.shared.replication;
    // The writes this batch made before WAIT go into the stream now, so that the offset
    // waited for covers them. Redis 7.0 moves a client's `woff` to the stream's end after
    // each of its commands, writes or not (so a proxy's `PING` then `WAIT` on a fresh
    // connection waits for every write made before the PING); the stream's end now is at
    // least that, so this WAIT may wait longer than Redis's, never shorter.
    crate::propagation::publish(ctx.shared, ctx.keyspace);
    if ctx.client.has_run_commands {
        ctx.client.woff = replication.end();
    }
    let master = &replication.master;
    let acked = master.count_acked(ctx.client.woff);
    if acked as i64 >= needed || !ctx.may_block() {
        ctx.out.integer(acked as i64);
        return Ok(());
    }
    replication.feed_replicas_only(GETACK);
    let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
    // `needed` > `acked` >= 0 here.
    let wait = master
        .waiters
        .add(ctx.client.woff, needed as usize, timeout);
    ctx.client.ack_wait = Some(wait);
    Ok(())
}
