//! CLUSTER subcommands that assign slots.
//!
//! - `ADDSLOTS slot [slot ...]` / `DELSLOTS slot [slot ...]` → `+OK`. Every argument is
//!   checked first (`ERR Invalid or out of range slot`), then each slot in order: `ERR Slot
//!   N is already busy` / `ERR Slot N is already unassigned`, `ERR Slot N specified multiple
//!   times`. Adding a slot this node was importing ends the import.
//! - `ADDSLOTSRANGE start end [start end ...]` / `DELSLOTSRANGE ...` → `+OK`; an odd
//!   argument count is a wrong-arity error; `ERR start slot number A is greater than end
//!   slot number B`.
//! - `FLUSHSLOTS` → `+OK`, all slots of this node unassigned (`ERR DB must be empty to
//!   perform CLUSTER FLUSHSLOTS.`).
//! - `SETSLOT slot MIGRATING id | IMPORTING id | STABLE | NODE id` → `+OK`. Errors: `ERR I'm
//!   not the owner of hash slot N`, `ERR I'm already the owner of hash slot N`, `ERR I don't
//!   know about node X`, `ERR Unknown node X`, `ERR Can't assign hashslot N to a different
//!   node while I still hold keys for this hash slot.`, `ERR Invalid CLUSTER SETSLOT action
//!   or number of arguments. Try CLUSTER HELP`. `NODE` on the importing side takes a new
//!   config epoch (without agreement, as Redis does) so the new owner wins everywhere.

use bytes::Bytes;
use slotproxy::cluster::SLOT_COUNT;

use super::{commit, slot_arg};
use crate::cluster::state::ClusterState;
use crate::cluster::Cluster;
use crate::cmd::args::is;
use crate::cmd::errors::wrong_arity;
use crate::cmd::{CmdError, CmdResult, Ctx};

/// Redis's `checkSlotAssignmentsOrReply` for `first..=last`, marking them in `chosen`.
fn check_range(
    state: &ClusterState,
    chosen: &mut [bool],
    delete: bool,
    first: u16,
    last: u16,
) -> Result<(), CmdError> {
    for slot in first..=last {
        let assigned = state.slots[slot as usize].is_some();
        if delete && !assigned {
            return Err(format!("ERR Slot {slot} is already unassigned").into());
        }
        if !delete && assigned {
            return Err(format!("ERR Slot {slot} is already busy").into());
        }
        if std::mem::replace(&mut chosen[slot as usize], true) {
            return Err(format!("ERR Slot {slot} specified multiple times").into());
        }
    }
    Ok(())
}

/// Assigns (or unassigns) the chosen slots to this node.
fn update_slots(
    ctx: &Ctx<'_>,
    cluster: &Cluster,
    state: &mut ClusterState,
    chosen: &[bool],
    delete: bool,
) {
    let me = state.myself;
    for slot in (0..SLOT_COUNT as u16).filter(|&s| chosen[s as usize]) {
        if delete {
            state.unassign(slot);
        } else {
            state.importing.remove(&slot);
            state.assign(slot, me);
        }
    }
    commit(ctx, cluster, state);
}

pub fn addslots(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes], delete: bool) -> CmdResult {
    let slots = args[2..]
        .iter()
        .map(|a| slot_arg(a))
        .collect::<Result<Vec<u16>, _>>()?;
    let mut state = cluster.lock();
    let mut chosen = vec![false; SLOT_COUNT];
    for slot in slots {
        check_range(&state, &mut chosen, delete, slot, slot)?;
    }
    update_slots(ctx, cluster, &mut state, &chosen, delete);
    drop(state);
    ctx.out.ok();
    Ok(())
}

pub fn addslotsrange(
    ctx: &mut Ctx<'_>,
    cluster: &Cluster,
    args: &[Bytes],
    delete: bool,
) -> CmdResult {
    if args.len() % 2 == 1 {
        let name = if delete {
            "delslotsrange"
        } else {
            "addslotsrange"
        };
        return Err(wrong_arity(&format!("cluster|{name}")));
    }
    let mut state = cluster.lock();
    let mut chosen = vec![false; SLOT_COUNT];
    for pair in args[2..].chunks(2) {
        let first = slot_arg(&pair[0])?;
        let last = slot_arg(&pair[1])?;
        if first > last {
            return Err(format!(
                "ERR start slot number {first} is greater than end slot number {last}"
            )
            .into());
        }
        check_range(&state, &mut chosen, delete, first, last)?;
    }
    update_slots(ctx, cluster, &mut state, &chosen, delete);
    drop(state);
    ctx.out.ok();
    Ok(())
}

pub fn flushslots(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    if !ctx.keyspace.db(0).is_empty() {
        return Err("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.".into());
    }
    let mut state = cluster.lock();
    let me = state.myself;
    for slot in 0..SLOT_COUNT as u16 {
        if state.slots[slot as usize] == Some(me) {
            state.unassign(slot);
        }
    }
    commit(ctx, cluster, &mut state);
    drop(state);
    ctx.out.ok();
    Ok(())
}

fn node_text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

pub fn setslot(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let slot = slot_arg(&args[2])?;
    let keys_in_slot = ctx.keyspace.db(0).count_in_slot(slot);
    let mut state = cluster.lock();
    let me = state.myself;
    let owner = state.slots[slot as usize];
    let action = &args[3];
    if is(action, "migrating") && args.len() == 5 {
        if owner != Some(me) {
            return Err(format!("ERR I'm not the owner of hash slot {slot}").into());
        }
        let target = state
            .lookup(&args[4])
            .ok_or_else(|| format!("ERR I don't know about node {}", node_text(&args[4])))?;
        if !target.is_master() {
            return Err("ERR Target node is not a master".into());
        }
        let target = target.id;
        state.migrating.insert(slot, target);
    } else if is(action, "importing") && args.len() == 5 {
        if owner == Some(me) {
            return Err(format!("ERR I'm already the owner of hash slot {slot}").into());
        }
        let source = state
            .lookup(&args[4])
            .ok_or_else(|| format!("ERR I don't know about node {}", node_text(&args[4])))?;
        if !source.is_master() {
            return Err("ERR Target node is not a master".into());
        }
        let source = source.id;
        state.importing.insert(slot, source);
    } else if is(action, "stable") && args.len() == 4 {
        state.migrating.remove(&slot);
        state.importing.remove(&slot);
    } else if is(action, "node") && args.len() == 5 {
        let node = state
            .lookup(&args[4])
            .ok_or_else(|| format!("ERR Unknown node {}", node_text(&args[4])))?;
        if !node.is_master() {
            return Err("ERR Target node is not a master".into());
        }
        let node = node.id;
        if owner == Some(me) && node != me && keys_in_slot != 0 {
            return Err(format!(
                "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
            )
            .into());
        }
        if keys_in_slot == 0 {
            state.migrating.remove(&slot);
        }
        state.assign(slot, node);
        if node == me && state.importing.remove(&slot).is_some() {
            // The slot was moved by hand: a new epoch makes this node's claim win
            // everywhere, and the peers hear of it at once.
            state.bump_epoch_without_consensus();
            state.needs_broadcast = true;
        }
    } else {
        return Err(
            "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP".into(),
        );
    }
    state.needs_save = true;
    commit(ctx, cluster, &mut state);
    drop(state);
    ctx.out.ok();
    Ok(())
}
