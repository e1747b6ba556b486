//! CLUSTER subcommands about replicas and failover.
//!
//! - `REPLICATE id` → `+OK`: this node becomes a replica of master `id` (through the same
//!   replication as REPLICAOF). `ERR Unknown node id`, `ERR Can't replicate myself`,
//!   `ERR I can only replicate a master, not a replica.`, and on a master with slots or
//!   keys `ERR To set a master the node must be empty and without assigned slots.`
//! - `REPLICAS id` / `SLAVES id` → the CLUSTER NODES lines of its replicas, as bulk
//!   strings. `ERR Unknown node id`, `ERR The specified node is not a master`.
//! - `COUNT-FAILURE-REPORTS id` → the masters whose report that `id` is failing is still
//!   valid (2 × node timeout). `ERR Unknown node id`.
//! - `FAILOVER [FORCE|TAKEOVER]` → `+OK` once started (see `crate::cluster::election`).
//!   `ERR You should send CLUSTER FAILOVER to a replica`, `ERR I'm a replica but my master
//!   is unknown to me`, `ERR Master is down or failed, please use CLUSTER FAILOVER FORCE`.

use bytes::Bytes;

use super::commit;
use crate::cluster::bus::codec::{self, Body, Message};
use crate::cluster::bus::gossip::header;
use crate::cluster::election::MANUAL_FAILOVER_TIMEOUT_MS;
use crate::cluster::node::Flags;
use crate::cluster::{role, Cluster};
use crate::cmd::args::is;
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdError, CmdResult, Ctx};
use crate::keyspace::unix_time_ms;

fn unknown_node(arg: &[u8]) -> CmdError {
    format!("ERR Unknown node {}", String::from_utf8_lossy(arg)).into()
}

pub fn replicate(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let has_keys = !ctx.keyspace.db(0).is_empty();
    let mut state = cluster.lock();
    let master = match state.lookup(&args[2]) {
        None => return Err(unknown_node(&args[2])),
        Some(node) if node.is_myself() => return Err("ERR Can't replicate myself".into()),
        Some(node) if node.is_replica() => {
            return Err("ERR I can only replicate a master, not a replica.".into())
        }
        Some(node) => node.id,
    };
    let me = state.myself;
    if state.me().is_master() && (state.slot_count(&me) != 0 || has_keys) {
        return Err(
            "ERR To set a master the node must be empty and without assigned slots.".into(),
        );
    }
    state.set_my_master(master);
    commit(ctx, cluster, &mut state);
    drop(state);
    role::reconcile(ctx.shared, Some(ctx.keyspace));
    ctx.out.ok();
    Ok(())
}

pub fn replicas(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let state = cluster.lock();
    let master = match state.lookup(&args[2]) {
        None => return Err(unknown_node(&args[2])),
        Some(node) if node.is_replica() => {
            return Err("ERR The specified node is not a master".into())
        }
        Some(node) => node.id,
    };
    let now = unix_time_ms();
    let lines: Vec<String> = state
        .replicas_of(&master)
        .into_iter()
        .map(|replica| state.describe_node(replica, now))
        .collect();
    drop(state);
    ctx.out.array(lines.len());
    for line in lines {
        ctx.out.bulk(line.as_bytes());
    }
    Ok(())
}

pub fn count_failure_reports(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let mut state = cluster.lock();
    let Some(id) = state.lookup(&args[2]).map(|n| n.id) else {
        return Err(unknown_node(&args[2]));
    };
    let count = state.failure_report_count(&id, unix_time_ms());
    drop(state);
    ctx.out.integer(count as i64);
    Ok(())
}

pub fn failover(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let (force, takeover) = match args.get(2) {
        _ if args.len() > 3 => return Err(SYNTAX.into()),
        None => (false, false),
        Some(mode) if is(mode, "force") => (true, false),
        Some(mode) if is(mode, "takeover") => (true, true),
        Some(_) => return Err(SYNTAX.into()),
    };
    let mut state = cluster.lock();
    if state.me().is_master() {
        return Err("ERR You should send CLUSTER FAILOVER to a replica".into());
    }
    let Some(master) = state.me().master.and_then(|id| state.nodes.get(&id)) else {
        return Err("ERR I'm a replica but my master is unknown to me".into());
    };
    let master_id = master.id;
    let unreachable = master.flags.has(Flags::FAIL) || master.link_since_ms.is_none();
    if !force && unreachable {
        return Err("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE".into());
    }
    state.reset_manual_failover();
    state.election.mf_end_ms = unix_time_ms() + MANUAL_FAILOVER_TIMEOUT_MS;
    let mut request = None;
    if takeover {
        // No election: a new config epoch taken without agreement wins on its own.
        crate::log::warning!("Taking over the master (user request).");
        state.bump_epoch_without_consensus();
        state.replace_my_master();
    } else if force {
        crate::log::warning!("Forced failover user request accepted.");
        state.election.mf_can_start = true;
    } else {
        crate::log::warning!("Manual failover user request accepted.");
        let message = Message {
            header: header(&state),
            body: Body::MfStart,
        };
        state.stats.sent[message.type_code() as usize] += 1;
        request = Some(codec::encode(&message));
    }
    commit(ctx, cluster, &mut state);
    drop(state);
    if let Some(frame) = request {
        cluster.send_to(&master_id, frame);
    }
    role::reconcile(ctx.shared, Some(ctx.keyspace));
    cluster.kick.notify_one();
    ctx.out.ok();
    Ok(())
}
