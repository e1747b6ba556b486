//! `REPLICAOF host port` / `REPLICAOF NO ONE` (and its old name `SLAVEOF`).
//!
//! - `REPLICAOF host port` → `+OK`: the node becomes a replica of that master (see
//!   `crate::replication::replica`); the data stays until the first sync replaces it.
//!   The same master again → `+OK Already connected to specified master`.
//! - `REPLICAOF NO ONE` → `+OK`: the node becomes a master, keeping its data and its
//!   history (so former siblings can continue from it).
//! - A port that is not an integer from 0 to 65535 → `-ERR Invalid master port`;
//!   cluster mode → `-ERR REPLICAOF not allowed in cluster mode.`

use bytes::Bytes;
use slotproxy::numbers::parse_i64;

use super::args::is;
use super::{CmdResult, Ctx, Handler};
use crate::replication::replica;

pub const COMMANDS: &[(&str, Handler)] = &[("replicaof", replicaof), ("slaveof", replicaof)];

fn replicaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err("ERR REPLICAOF not allowed in cluster mode.".into());
    }
    let (host, port) = (&args[1], &args[2]);
    if is(host, "no") && is(port, "one") {
        if replica::promote(ctx.shared, ctx.keyspace) {
            crate::log::notice!(
                "MASTER MODE enabled (user request from 'id={} addr={}')",
                ctx.client.id(),
                ctx.client.handle.addr
            );
        }
        ctx.out.ok();
        return Ok(());
    }
    let port = parse_i64(port)
        .filter(|p| (0..=65535).contains(p))
        .ok_or("ERR Invalid master port")? as u16;
    let host = String::from_utf8_lossy(host).into_owned();
    if replica::master(ctx.shared).is_some_and(|(h, p)| h.eq_ignore_ascii_case(&host) && p == port)
    {
        crate::log::notice!(
            "REPLICAOF would result into synchronization with the master we are already \
             connected with. No operation performed."
        );
        ctx.out.simple("OK Already connected to specified master");
        return Ok(());
    }
    let shared = ctx.shared.scripting.server()?;
    replica::replicate_from(&shared, ctx.keyspace, host.clone(), port);
    crate::log::notice!(
        "REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')",
        ctx.client.id(),
        ctx.client.handle.addr
    );
    ctx.out.ok();
    Ok(())
}
