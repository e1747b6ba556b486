//! CLUSTER subcommands that report.
//!
//! - `CLUSTER INFO` → text (verbatim in RESP3): `cluster_state:ok|fail`, slot counts,
//!   known nodes, size, epochs, bus message counters.
//! - `CLUSTER NODES` → text, one line per node: `<id> <ip:port@cport> <flags> <master>
//!   <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> <slot>-<slot> ...`, and for
//!   this node its open migrations `[slot->-id]` / `[slot-<-id]`.
//! - `CLUSTER SLOTS` → `[[start, end, [ip, port, id, {}]], ...]` in slot order.
//! - `CLUSTER SHARDS` → `[{slots: [start, end, ...], nodes: [{id, port, ip, endpoint, role,
//!   replication-offset, health}]}, ...]`, one shard per master.
//! - `CLUSTER LINKS` → `[{direction, node, create-time, events, send-buffer-allocated,
//!   send-buffer-used}, ...]`.
//! - `CLUSTER MYID` → this node's id. `CLUSTER KEYSLOT key` → its slot.
//! - `CLUSTER COUNTKEYSINSLOT slot` → integer (`ERR Invalid slot`).
//! - `CLUSTER GETKEYSINSLOT slot count` → up to `count` keys (`ERR Invalid slot or number
//!   of keys`).
//! - `CLUSTER COUNT-FAILURE-REPORTS id` → 0 (failure reports are not exchanged yet).
//! - `CLUSTER REPLICAS id` / `SLAVES id` → `[]` for a known master (`ERR Unknown node id`).
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
        ctx.out.array(3);
        ctx.out.integer(first as i64);
        ctx.out.integer(last as i64);
        match state.nodes.get(&owner) {
            Some(node) => node_entry(ctx, node),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

pub fn shards(ctx: &mut Ctx<'_>, cluster: &Cluster) -> CmdResult {
    let state = cluster.lock();
    // Redis lists shards in its node table's hash order; this node lists itself first.
    let masters: Vec<&Node> = std::iter::once(state.me())
        .chain(state.nodes.values().filter(|n| !n.is_myself()))
        .filter(|n| n.is_master() && !n.in_handshake())
        .collect();
    ctx.out.array(masters.len());
    for node in masters {
        ctx.out.map(2);
        ctx.out.bulk(b"slots");
        let ranges = state.ranges_of(&node.id);
        ctx.out.array(ranges.len() * 2);
        for (first, last) in ranges {
            ctx.out.integer(first.into());
            ctx.out.integer(last.into());
        }
        ctx.out.bulk(b"nodes");
        ctx.out.array(1);
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
        ctx.out.bulk(b"master");
        ctx.out.bulk(b"replication-offset");
        ctx.out.integer(0);
        ctx.out.bulk(b"health");
        let failed = node.flags.has(Flags::FAIL);
        ctx.out
            .bulk(if failed { &b"fail"[..] } else { &b"online"[..] });
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
        .map(|e| e.key.to_vec())
        .collect();
    ctx.out.array(keys.len());
    for key in keys {
        ctx.out.bulk(&key);
    }
    Ok(())
}

fn unknown_node(arg: &[u8]) -> crate::cmd::CmdError {
    format!("ERR Unknown node {}", String::from_utf8_lossy(arg)).into()
}

pub fn count_failure_reports(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    if cluster.lock().lookup(&args[2]).is_none() {
        return Err(unknown_node(&args[2]));
    }
    ctx.out.integer(0);
    Ok(())
}

pub fn replicas(ctx: &mut Ctx<'_>, cluster: &Cluster, args: &[Bytes]) -> CmdResult {
    let is_master = match cluster.lock().lookup(&args[2]) {
        None => return Err(unknown_node(&args[2])),
        Some(node) => node.is_master(),
    };
    if !is_master {
        return Err("ERR The specified node is not a master".into());
    }
    ctx.out.array(0);
    Ok(())
}
