//! `CLUSTER <subcommand>`, `READONLY`, `READWRITE` and `ASKING`.
//!
//! Without `cluster-enabled yes` every one of them answers `ERR This instance has cluster
//! support disabled`. Subcommands by family:
//!
//! - [`info`]: INFO, NODES, SLOTS, SHARDS, LINKS, MYID, KEYSLOT, COUNTKEYSINSLOT,
//!   GETKEYSINSLOT, HELP.
//! - [`slots`]: ADDSLOTS, ADDSLOTSRANGE, DELSLOTS, DELSLOTSRANGE, FLUSHSLOTS, SETSLOT.
//! - [`membership`]: MEET, FORGET, RESET, BUMPEPOCH, SET-CONFIG-EPOCH, SAVECONFIG.
//! - [`replication`]: REPLICATE, REPLICAS / SLAVES, COUNT-FAILURE-REPORTS, FAILOVER.
//!
//! - `READONLY` / `READWRITE` → `+OK`: after READONLY a replica serves reads of its
//!   master's slots (a master serves them anyway).
//! - `ASKING` → `+OK`; the next command may use a slot this node is importing.
//!
//! MIGRATE lives in [`super::migrate`] and is listed here.

mod help;
mod info;
mod membership;
mod replication;
mod slots;

use bytes::Bytes;

use super::Cluster;
use crate::cmd::args::is;
use crate::cmd::{unknown_subcommand, CmdError, CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("cluster", cluster),
    ("readonly", readonly),
    ("readwrite", readwrite),
    ("asking", asking),
    ("migrate", super::migrate::migrate),
];

pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The node's cluster, or the error for a node not in cluster mode.
pub fn enabled<'a>(ctx: &Ctx<'a>) -> Result<&'a Cluster, CmdError> {
    let shared: &'a crate::server::Shared = ctx.shared;
    shared.cluster.as_deref().ok_or_else(|| DISABLED.into())
}

/// A slot argument: `ERR Invalid or out of range slot` unless an integer in 0..16384.
pub fn slot_arg(arg: &[u8]) -> Result<u16, CmdError> {
    slotproxy::numbers::parse_i64(arg)
        .filter(|s| (0..slotproxy::cluster::SLOT_COUNT as i64).contains(s))
        .map(|s| s as u16)
        .ok_or_else(|| "ERR Invalid or out of range slot".into())
}

/// Writes the nodes file and updates the cluster state after a command changed it.
pub fn commit(ctx: &Ctx<'_>, cluster: &Cluster, state: &mut super::state::ClusterState) {
    if let Err(e) = cluster.commit(state, &ctx.shared.config()) {
        crate::log::warning!("cannot save the cluster config file: {e}");
    }
}

fn cluster(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cluster = enabled(ctx)?;
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "help" => info::help(ctx),
        "info" => info::info(ctx, cluster),
        "nodes" => info::nodes(ctx, cluster),
        "slots" => info::slots(ctx, cluster),
        "shards" => info::shards(ctx, cluster),
        "links" => info::links(ctx, cluster),
        "myid" => info::myid(ctx, cluster),
        "keyslot" => info::keyslot(ctx, args),
        "countkeysinslot" => info::countkeysinslot(ctx, args),
        "getkeysinslot" => info::getkeysinslot(ctx, args),
        "count-failure-reports" => replication::count_failure_reports(ctx, cluster, args),
        "replicas" | "slaves" => replication::replicas(ctx, cluster, args),
        "replicate" => replication::replicate(ctx, cluster, args),
        "failover" => replication::failover(ctx, cluster, args),
        "addslots" => slots::addslots(ctx, cluster, args, false),
        "delslots" => slots::addslots(ctx, cluster, args, true),
        "addslotsrange" => slots::addslotsrange(ctx, cluster, args, false),
        "delslotsrange" => slots::addslotsrange(ctx, cluster, args, true),
        "flushslots" => slots::flushslots(ctx, cluster),
        "setslot" => slots::setslot(ctx, cluster, args),
        "meet" => membership::meet(ctx, cluster, args),
        "forget" => membership::forget(ctx, cluster, args),
        "reset" => membership::reset(ctx, cluster, args),
        "bumpepoch" => membership::bumpepoch(ctx, cluster),
        "set-config-epoch" => membership::set_config_epoch(ctx, cluster, args),
        "saveconfig" => membership::saveconfig(ctx, cluster),
        _ => Err(unknown_subcommand(args)),
    }
}

fn readonly(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    enabled(ctx)?;
    ctx.client.readonly = true;
    ctx.out.ok();
    Ok(())
}

fn readwrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    enabled(ctx)?;
    ctx.client.readonly = false;
    ctx.out.ok();
    Ok(())
}

fn asking(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    enabled(ctx)?;
    ctx.client.asking = true;
    ctx.out.ok();
    Ok(())
}

/// True if `arg` is one of `words` (for option parsing in the submodules).
pub fn is_any(arg: &[u8], words: &[&str]) -> bool {
    words.iter().any(|w| is(arg, w))
}
