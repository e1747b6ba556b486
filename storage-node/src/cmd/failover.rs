//! `FAILOVER [TO host port [FORCE]] [TIMEOUT milliseconds]` and `FAILOVER ABORT`:
//! Redis 7.0's coordinated failover of this master to one of its replicas
//! (`crate::replication::failover`).
//!
//! - → `+OK` once the failover has started: writes are paused until it ends.
//! - `ABORT` (alone) → `+OK`, or `-ERR No failover in progress.`
//! - Errors, in Redis's order: `ERR syntax error`, `ERR value is not an integer or out of
//!   range` (port, timeout), `ERR FAILOVER timeout must be greater than 0`, `ERR FAILOVER
//!   already in progress.`, `ERR FAILOVER is not valid when server is a replica.`, `ERR
//!   FAILOVER requires connected replicas.`, `ERR FAILOVER with force option requires
//!   both a timeout and target HOST and IP.`, `ERR FAILOVER target HOST and PORT is not a
//!   replica.`, `ERR FAILOVER target replica is not online.`; in cluster mode `ERR FAILOVER
//!   not allowed in cluster mode.`

use std::time::Duration;

use bytes::Bytes;

use super::args::{int, is, text};
use super::errors::SYNTAX;
use super::{CmdResult, Ctx, Handler};
use crate::replication::failover::{self, Phase, Request};
use crate::replication::master::Phase as ReplicaPhase;
use crate::replication::replica;

pub const COMMANDS: &[(&str, Handler)] = &[("failover", failover_command)];

fn failover_command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err("ERR FAILOVER not allowed in cluster mode.".into());
    }
    if args.len() == 2 && is(&args[1], "abort") {
        if ctx.shared.replication.failover.phase() == Phase::None {
            return Err("ERR No failover in progress.".into());
        }
        failover::abort(ctx.shared, ctx.keyspace, "Failover manually aborted");
        ctx.out.ok();
        return Ok(());
    }
    let mut timeout_ms = 0;
    let mut force = false;
    let mut target: Option<(String, i64)> = None;
    let mut at = 1;
    while at < args.len() {
        let word = &args[at];
        if is(word, "timeout") && at + 1 < args.len() && timeout_ms == 0 {
            timeout_ms = int(&args[at + 1])?;
            if timeout_ms <= 0 {
                return Err("ERR FAILOVER timeout must be greater than 0".into());
            }
            at += 2;
        } else if is(word, "to") && at + 2 < args.len() && target.is_none() {
            let port = int(&args[at + 2])?;
            target = Some((text(&args[at + 1]), port));
            at += 3;
        } else if is(word, "force") && !force {
            force = true;
            at += 1;
        } else {
            return Err(SYNTAX.into());
        }
    }
    let shared = ctx.shared;
    if shared.replication.failover.phase() != Phase::None {
        return Err("ERR FAILOVER already in progress.".into());
    }
    if replica::is_replica(shared) {
        return Err("ERR FAILOVER is not valid when server is a replica.".into());
    }
    let replicas = shared.replication.master.all();
    if replicas.is_empty() {
        return Err("ERR FAILOVER requires connected replicas.".into());
    }
    if force && (timeout_ms == 0 || target.is_none()) {
        return Err(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.".into(),
        );
    }
    let target = match target {
        Some((host, port)) => {
            let found = replicas.iter().find(|r| {
                r.ip().eq_ignore_ascii_case(&host) && i64::from(r.handshake.port) == port
            });
            let Some(found) = found else {
                return Err("ERR FAILOVER target HOST and PORT is not a replica.".into());
            };
            if found.phase() != ReplicaPhase::Online {
                return Err("ERR FAILOVER target replica is not online.".into());
            }
            crate::log::notice!("FAILOVER requested to {host}:{port}.");
            Some((host, found.handshake.port))
        }
        None => {
            crate::log::notice!("FAILOVER requested to any replica.");
            None
        }
    };
    let server = shared.scripting.server()?;
    failover::start(
        &server,
        Request {
            target,
            force,
            timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms as u64)),
        },
    );
    ctx.out.ok();
    Ok(())
}
