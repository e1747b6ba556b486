//! CLUSTER subcommands that report.
//!
//! - `CLUSTER INFO` → text (verbatim in RESP3): `cluster_state:ok|fail`, slot counts,
//!   known nodes, size, epochs, bus message counters.
//! - `CLUSTER NODES` → text, one line per node: `<id> <ip:port@cport> <flags> <master>
//!   <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> <slot>-<slot> ...`, and for
//!   this node its open migrations `[slot->-id]` / `[slot-<-id]`.
//! - `CLUSTER SLOTS` → `[[start, end, [ip, port, id, {}], replica..., ], ...]` in slot
//!   order: the master, then its replicas that are not `fail`.
//! - `CLUSTER SHARDS` → `[{slots: [start, end, ...], nodes: [{id, port, ip, endpoint, role,
//!   replication-offset, health}, ...]}, ...]`, one shard per master: the master, then its
//!   replicas (`health` is `fail`, `loading` for a replica at offset 0, else `online`).
//! - `CLUSTER LINKS` → `[{direction, node, create-time, events, send-buffer-allocated,
//!   send-buffer-used}, ...]`.
//! - `CLUSTER MYID` → this node's id. `CLUSTER KEYSLOT key` → its slot.
//! - `CLUSTER COUNTKEYSINSLOT slot` → integer (`ERR Invalid slot`).
//! - `CLUSTER GETKEYSINSLOT slot count` → up to `count` keys (`ERR Invalid slot or number
//!   of keys`).
//! - `CLUSTER HELP` → the help lines.

use bytes::Bytes;
use slotproxy::cluster::{key_slot, SLOT_COUNT};

use super::help::HELP;
use crate::cluster::bus::codec::TYPE_NAMES;
use crate::cluster::node::{Flags, Node};
use crate::cluster::Cluster;
use crate::cmd::args::int;
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::unix_time_ms;

pub fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.array(HELP.len());
    for line in HELP {
        ctx.out.simple(line);
    }
    Ok(())
}

pub fn info(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let state = cluster.lock();
    let (assigned, ok, pfail, fail) = state.slot_health();
    let mut text = String::new();
    let mut field = |name: &str, value: &dyn std::fmt::Display| {
        text.push_str(&format!("{name}:{value}\r\n"));
    };
    field("cluster_state", &if state.ok { "ok" } else { "fail" });
    field("cluster_slots_assigned", &assigned);
    field("cluster_slots_ok", &ok);
    field("cluster_slots_pfail", &pfail);
    field("cluster_slots_fail", &fail);
    field("cluster_known_nodes", &state.nodes.len());
    field("cluster_size", &state.size);
    field("cluster_current_epoch", &state.current_epoch);
    field("cluster_my_epoch", &state.me().config_epoch);
    let stats = &state.stats;
    for (name, count) in TYPE_NAMES.iter().zip(stats.sent.iter()) {
        if *count > 0 {
            field(&format!("cluster_stats_messages_{name}_sent"), count);
        }
    }
    field(
        "cluster_stats_messages_sent",
        &stats.sent.iter().sum::<u64>(),
    );
    for (name, count) in TYPE_NAMES.iter().zip(stats.received.iter()) {
        if *count > 0 {
            field(&format!("cluster_stats_messages_{name}_received"), count);
        }
    }
    field(
        "cluster_stats_messages_received",
        &stats.received.iter().sum::<u64>(),
    );
    field("total_cluster_links_buffer_limit_exceeded", &0);
    drop(state);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

pub fn nodes(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let text = cluster.lock().describe(unix_time_ms());
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn node_entry(ctx: &mut Ctx<'_>, node: &Node) {
    ctx.out.array(4);
    ctx.out.bulk(node.ip.as_bytes());
    ctx.out.integer(node.port.into());
    ctx.out.bulk(node.id.as_bytes());
    ctx.out.map(0);
}

pub fn slots(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let state = cluster.lock();
    let mut ranges = Vec::new();
    let mut start = 0;
    for slot in 1..=SLOT_COUNT {
        if slot == SLOT_COUNT || state.slots[slot] != state.slots[start] {
            if let Some(owner) = state.slots[start] {
                ranges.push((start, slot - 1, owner));
            }
            start = slot;
        }
    }
    ctx.out.array(ranges.len());
    for (first, last, owner) in ranges {
        let Some(master) = state.nodes.get(&owner) else {
            ctx.out.array(2);
            ctx.out.integer(first as i64);
            ctx.out.integer(last as i64);
            continue;
        };
        let replicas: Vec<&Node> = state
            .replicas_of(&owner)
            .into_iter()
            .filter(|r| !r.flags.has(Flags::FAIL))
            .collect();
        ctx.out.array(3 + replicas.len());
        ctx.out.integer(first as i64);
        ctx.out.integer(last as i64);
        node_entry(ctx, master);
        for replica in replicas {
            node_entry(ctx, replica);
        }
    }
    Ok(())
}

/// One node of a CLUSTER SHARDS shard.
fn shard_node(ctx: &mut Ctx<'_>, node: &Node, offset: u64) {
    ctx.out.map(7);
    ctx.out.bulk(b"id");
    ctx.out.bulk(node.id.as_bytes());
    ctx.out.bulk(b"port");
    ctx.out.integer(node.port.into());
    ctx.out.bulk(b"ip");
    ctx.out.bulk(node.ip.as_bytes());
    ctx.out.bulk(b"endpoint");
    ctx.out.bulk(node.ip.as_bytes());
    ctx.out.bulk(b"role");
    ctx.out.bulk(if node.is_replica() {
        &b"replica"[..]
    } else {
        &b"master"[..]
    });
    ctx.out.bulk(b"replication-offset");
    ctx.out.integer(offset as i64);
    ctx.out.bulk(b"health");
    let health: &[u8] = if node.flags.has(Flags::FAIL) {
        b"fail"
    } else if node.is_replica() && offset == 0 {
        b"loading"
    } else {
        b"online"
    };
    ctx.out.bulk(health);
}

pub fn shards(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let my_offset = ctx.shared.replication.end();
    let state = cluster.lock();
    // Redis lists shards in its node table's hash order; this node lists its own first.
    let serving = state.serving_master();
    let masters: Vec<&Node> = state
        .nodes
        .get(&serving)
        .into_iter()
        .chain(state.nodes.values().filter(|n| n.id != serving))
        .filter(|n| n.is_master() && !n.in_handshake())
        .collect();
    ctx.out.array(masters.len());
    for master in masters {
        ctx.out.map(2);
        ctx.out.bulk(b"slots");
        let ranges = state.ranges_of(&master.id);
        ctx.out.array(ranges.len() * 2);
        for (first, last) in ranges {
            ctx.out.integer(first.into());
            ctx.out.integer(last.into());
        }
        ctx.out.bulk(b"nodes");
        let replicas = state.replicas_of(&master.id);
        ctx.out.array(1 + replicas.len());
        for node in std::iter::once(master).chain(replicas) {
            let offset = if node.is_myself() {
                my_offset
            } else {
                node.repl_offset
            };
            shard_node(ctx, node, offset);
        }
    }
    Ok(())
}

fn link_entry(ctx: &mut Ctx<'_>, direction: &str, node: &Node, since: u64) {
    ctx.out.map(6);
    ctx.out.bulk(b"direction");
    ctx.out.bulk(direction.as_bytes());
    ctx.out.bulk(b"node");
    ctx.out.bulk(node.id.as_bytes());
    ctx.out.bulk(b"create-time");
    ctx.out.integer(since as i64);
    ctx.out.bulk(b"events");
    ctx.out.bulk(b"r");
    ctx.out.bulk(b"send-buffer-allocated");
    ctx.out.integer(0);
    ctx.out.bulk(b"send-buffer-used");
    ctx.out.integer(0);
}

pub fn links(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let state = cluster.lock();
    let mut links = Vec::new();
    for node in state.nodes.values().filter(|n| !n.is_myself()) {
        if let Some(since) = node.link_since_ms {
            links.push(("to", node, since));
        }
        if let Some(since) = node.inbound_since_ms {
            links.push(("from", node, since));
        }
    }
    ctx.out.array(links.len());
    for (direction, node, since) in links {
        link_entry(ctx, direction, node, since);
    }
    Ok(())
}

pub fn myid(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let id = cluster.lock().myself;
    ctx.out.bulk(id.as_bytes());
    Ok(())
}

pub fn keyslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.out.integer(key_slot(&args[2]).into());
    Ok(())
}

pub fn countkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let slot = int(&args[2])?;
    if !(0..SLOT_COUNT as i64).contains(&slot) {
        return Err("ERR Invalid slot".into());
    }
    let count = ctx.keyspace.db(0).count_in_slot(slot as u16);
    ctx.out.integer(count as i64);
    Ok(())
}

pub fn getkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let slot = int(&args[2])?;
    let count = int(&args[3])?;
    if count < 0 || !(0..SLOT_COUNT as i64).contains(&slot) {
        return Err("ERR Invalid slot or number of keys".into());
    }
    let keys: Vec<Vec<u8>> = ctx
        .keyspace
        .db(0)
        .slot_entries(slot as u16)
        .take(count as usize)
        .map(|e| e.key().to_vec())
        .collect();
    ctx.out.array(keys.len());
    for key in keys {
        ctx.out.bulk(&key);
    }
    Ok(())
}
