//! CLUSTER subcommands that change who is in the cluster, and epochs.
//!
//! - `MEET ip port [cport]` → `+OK`; the handshake continues on the bus (`cport` defaults
//!   to `port + 10000`). `ERR Invalid TCP base port specified: X`, `ERR Invalid TCP bus
//!   port specified: X`, `ERR Invalid node address specified: ip:port`.
//! - `FORGET id` → `+OK`; the node is kept out of gossip for 60 s. `ERR Unknown node X`,
//!   `ERR I tried hard but I can't forget myself...`.
//! - `RESET [HARD|SOFT]` → `+OK`: all slots unassigned, every other node forgotten; HARD
//!   also zeroes the epochs and takes a new node id; a replica stops replicating and
//!   empties its data. `ERR CLUSTER RESET can't be called with master nodes containing
//!   keys`.
//! - `BUMPEPOCH` → `+BUMPED <epoch>`, or `+STILL <epoch>` when this node's config epoch is
//!   already the unique maximum.
//! - `SET-CONFIG-EPOCH epoch` → `+OK`, only on a node that knows no other node and has
//!   config epoch 0. `ERR Invalid config epoch specified: N`, `ERR The user can assign a
//!   config epoch only when the node does not know any other node.`, `ERR Node config epoch
//!   is already non-zero`.
//! - `SAVECONFIG` → `+OK` once the nodes file is written.

use bytes::Bytes;

use super::commit;
use crate::cluster::bus::gossip::start_handshake;
use crate::cluster::node::{Flags, NodeId};
use crate::cluster::state::FORGET_BLACKLIST_MS;
use crate::cluster::{nodes_file, Cluster};
use crate::cmd::args::{int, is, text};
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdError, CmdResult, Ctx};
use crate::keyspace::unix_time_ms;

/// Redis's reply to a known subcommand given the wrong arguments.
fn subcommand_syntax(args: &[Bytes]) -> CmdError {
    slotproxy::protocol::errors::subcommand_syntax_error(args).into()
}

pub fn meet(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    if args.len() > 5 {
        return Err(subcommand_syntax(args));
    }
    let port = slotproxy::numbers::parse_i64(&args[3]).ok_or_else(|| {
        CmdError::from(format!(
            "ERR Invalid TCP base port specified: {}",
            text(&args[3])
        ))
    })?;
    let cport = match args.get(4) {
        Some(arg) => slotproxy::numbers::parse_i64(arg).ok_or_else(|| {
            CmdError::from(format!("ERR Invalid TCP bus port specified: {}", text(arg)))
        })?,
        None => port.saturating_add(10000),
    };
    let invalid = || -> CmdError {
        format!(
            "ERR Invalid node address specified: {}:{}",
            text(&args[2]),
            text(&args[3])
        )
        .into()
    };
    let valid_port = |p: i64| (1..=65535).contains(&p);
    if !valid_port(port) || !valid_port(cport) {
        return Err(invalid());
    }
    let ip = text(&args[2]);
    let mut state = cluster.lock();
    if !start_handshake(
        &mut state,
        &ip,
        port as u16,
        cport as u16,
        true,
        unix_time_ms(),
    ) {
        return Err(invalid());
    }
    commit(ctx, cluster, &mut state);
    drop(state);
    cluster.kick.notify_one();
    ctx.out.ok();
    Ok(())
}

pub fn forget(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let mut state = cluster.lock();
    let id = match state.lookup(&args[2]) {
        None => return Err(format!("ERR Unknown node {}", text(&args[2])).into()),
        Some(node) if node.is_myself() => {
            return Err("ERR I tried hard but I can't forget myself...".into())
        }
        Some(node) => node.id,
    };
    let until = unix_time_ms() + FORGET_BLACKLIST_MS;
    state.blacklist.insert(id, until);
    state.remove_node(&id);
    commit(ctx, cluster, &mut state);
    drop(state);
    ctx.out.ok();
    Ok(())
}

pub fn reset(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let hard = match args.get(2) {
        _ if args.len() > 3 => return Err(subcommand_syntax(args)),
        None => false,
        Some(mode) if is(mode, "hard") => true,
        Some(mode) if is(mode, "soft") => false,
        Some(_) => return Err(SYNTAX.into()),
    };
    let is_replica = cluster.lock().me().is_replica();
    if !is_replica && !ctx.keyspace.db(0).is_empty() {
        return Err("ERR CLUSTER RESET can't be called with master nodes containing keys".into());
    }
    let mut state = cluster.lock();
    if is_replica {
        // A replica leaves as an empty master (Redis's clusterReset).
        let me = state.me_mut();
        me.flags.set(Flags::REPLICA, false);
        me.flags.set(Flags::MASTER, true);
        me.master = None;
        state.reset_manual_failover();
    }
    state.migrating.clear();
    state.importing.clear();
    state.unassign_all();
    let me = state.myself;
    state.nodes.retain(|id, _| *id == me);
    if hard {
        state.current_epoch = 0;
        state.last_vote_epoch = 0;
        let mut node = state
            .nodes
            .remove(&me)
            .expect("myself is in the node table");
        node.config_epoch = 0;
        node.id = NodeId::random();
        state.myself = node.id;
        state.nodes.insert(node.id, node);
        state.needs_fsync = true;
    }
    state.needs_save = true;
    commit(ctx, cluster, &mut state);
    drop(state);
    if is_replica {
        crate::cluster::role::reconcile(ctx.shared, Some(ctx.keyspace));
        ctx.keyspace.flush_all();
    }
    ctx.out.ok();
    Ok(())
}

pub fn bumpepoch(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let mut state = cluster.lock();
    let bumped = state.bump_epoch_without_consensus();
    let epoch = state.me().config_epoch;
    commit(ctx, cluster, &mut state);
    drop(state);
    let word = if bumped { "BUMPED" } else { "STILL" };
    ctx.out.simple(&format!("{word} {epoch}"));
    Ok(())
}

pub fn set_config_epoch(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let epoch = int(&args[2])?;
    let mut state = cluster.lock();
    if epoch < 0 {
        return Err(format!("ERR Invalid config epoch specified: {epoch}").into());
    }
    if state.nodes.len() > 1 {
        return Err("ERR The user can assign a config epoch only when the node does not know any other node.".into());
    }
    if state.me().config_epoch != 0 {
        return Err("ERR Node config epoch is already non-zero".into());
    }
    let epoch = epoch as u64;
    state.me_mut().config_epoch = epoch;
    state.current_epoch = state.current_epoch.max(epoch);
    state.needs_save = true;
    state.needs_fsync = true;
    commit(ctx, cluster, &mut state);
    drop(state);
    ctx.out.ok();
    Ok(())
}

pub fn saveconfig(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let state = cluster.lock();
    nodes_file::save(&state, &cluster.nodes_file, unix_time_ms(), true)
        .map_err(|e| CmdError::from(format!("ERR error saving the cluster node config: {e}")))?;
    drop(state);
    ctx.out.ok();
    Ok(())
}
