//! Moving one slot, with the cluster protocol only (what `redis-cli --cluster reshard` does
//! in `clusterManagerMoveSlot` / `clusterManagerMigrateKeysInSlot`):
//!
//! For each slot (a job moves slots in small groups, see [`move_slots`]):
//! 1. `CLUSTER SETSLOT <slot> IMPORTING <source-id>` on the target;
//! 2. `CLUSTER SETSLOT <slot> MIGRATING <target-id>` on the source;
//! 3. `CLUSTER GETKEYSINSLOT <slot> <n>` and `MIGRATE host port "" 0 <timeout> KEYS k1..kn`
//!    until the source has no key left in the slot;
//! 4. `CLUSTER SETSLOT <slot> NODE <target-id>` on the target first (it claims the slot),
//!    then on the source and every other master.
//!
//! Faster than redis-cli at the same batch size because of pipelining, not because of
//! fewer safety steps: the source gets `depth` MIGRATEs of `batch` keys plus the next
//! GETKEYSINSLOT in one write; the SETSLOT steps of a group of slots go in one write per
//! node, so a node saves its cluster config once per group rather than once per slot; and
//! the final SETSLOT NODE goes to the other masters in parallel.
//!
//! A key that already exists on the target (`BUSYKEY`) is handled like redis-cli does: the
//! two copies are compared with DUMP; equal copies are migrated again with REPLACE, different
//! ones stop the job unless the request said `"replace": true`.

use crate::resp::Frame;

use super::link::{cmd, error_text, Command, Links};
use super::view::NodeInfo;
use super::Job;

/// How keys are moved.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Keys per MIGRATE.
    pub batch: usize,
    /// MIGRATEs pipelined in one write to the source.
    pub depth: usize,
    /// MIGRATE's own timeout (the source waiting for the target), in milliseconds.
    pub timeout_ms: u64,
    /// Overwrite target keys that differ from the source's (redis-cli `--cluster-replace`).
    pub replace: bool,
}

fn host_port(addr: &str) -> Result<(&str, &str), String> {
    addr.rsplit_once(':')
        .ok_or_else(|| format!("node address '{addr}' is not host:port"))
}

fn key_list(frame: &Frame) -> Result<Vec<Vec<u8>>, String> {
    let items = frame
        .as_array()
        .ok_or_else(|| format!("GETKEYSINSLOT answered '{}'", error_text(frame)))?;
    Ok(items
        .iter()
        .filter_map(|k| k.as_bytes().map(<[u8]>::to_vec))
        .collect())
}

fn getkeys(slot: u16, count: usize) -> Command {
    cmd(&[
        "CLUSTER".to_string(),
        "GETKEYSINSLOT".to_string(),
        slot.to_string(),
        count.to_string(),
    ])
}

fn migrate_command(
    target: &NodeInfo,
    settings: &Settings,
    replace: bool,
    keys: &[Vec<u8>],
) -> Result<Command, String> {
    let (host, port) = host_port(&target.addr)?;
    let mut command = cmd(&[
        "MIGRATE",
        host,
        port,
        "",
        "0",
        &settings.timeout_ms.to_string(),
    ]);
    if replace {
        command.push(b"REPLACE".to_vec());
    }
    command.push(b"KEYS".to_vec());
    command.extend(keys.iter().cloned());
    Ok(command)
}

/// Moves a group of slots from `source` to `target`; `others` are the addresses of the
/// remaining masters that must learn the new owner. The SETSLOT steps of the group travel
/// in one write per node (and nodes save their cluster config once per write, not once per
/// slot); the keys move slot after slot.
pub async fn move_slots(
    links: &mut Links,
    slots: &[u16],
    source: &NodeInfo,
    target: &NodeInfo,
    others: &[String],
    settings: &Settings,
    job: &Job,
) -> Result<(), String> {
    let setslot =
        |slot: u16, how: &str, id: &str| cmd(&["CLUSTER", "SETSLOT", &slot.to_string(), how, id]);
    let importing: Vec<Command> = slots
        .iter()
        .map(|&s| setslot(s, "IMPORTING", &source.id))
        .collect();
    links.pipeline_ok(&target.addr, &importing).await?;
    let migrating: Vec<Command> = slots
        .iter()
        .map(|&s| setslot(s, "MIGRATING", &target.id))
        .collect();
    links.pipeline_ok(&source.addr, &migrating).await?;
    for &slot in slots {
        job.update(|p| p.current_slot = Some(slot));
        let first = links
            .call(&source.addr, getkeys(slot, settings.batch * settings.depth))
            .await?;
        migrate_keys(
            links,
            slot,
            source,
            target,
            settings,
            key_list(&first)?,
            job,
        )
        .await?;
    }
    let node: Vec<Command> = slots
        .iter()
        .map(|&s| setslot(s, "NODE", &target.id))
        .collect();
    assign(links, &node, target, others).await
}

/// `SETSLOT <slot> NODE <target>`: on the target first, then everywhere else at once.
pub async fn assign_slot(
    links: &mut Links,
    slot: u16,
    target: &NodeInfo,
    others: &[String],
) -> Result<(), String> {
    let command = cmd(&["CLUSTER", "SETSLOT", &slot.to_string(), "NODE", &target.id]);
    assign(links, &[command], target, others).await
}

async fn assign(
    links: &mut Links,
    commands: &[Command],
    target: &NodeInfo,
    others: &[String],
) -> Result<(), String> {
    // The target first: it claims the slot (bumping its epoch) before the source lets go.
    links.pipeline_ok(&target.addr, commands).await?;
    let rest: Vec<String> = others
        .iter()
        .filter(|a| **a != target.addr)
        .cloned()
        .collect();
    links.ok_on_all_but(&rest, commands, turned_replica).await
}

/// A master that gave away its last slot becomes a replica of the slot's new owner (Redis's
/// `cluster-allow-replica-migration`, on by default) as soon as it hears of the change over
/// the bus, which can be before the job tells it. It then refuses SETSLOT; it follows its
/// master's slot map, so there is nothing left to tell it.
fn turned_replica(reply: &Frame) -> bool {
    error_text(reply).contains("Please use SETSLOT only with masters")
}

/// Moves every key the source still has in `slot` to the target. `keys` is the first batch
/// (already fetched); the rest are fetched in the same write as each round of MIGRATEs.
pub async fn migrate_keys(
    links: &mut Links,
    slot: u16,
    source: &NodeInfo,
    target: &NodeInfo,
    settings: &Settings,
    mut keys: Vec<Vec<u8>>,
    job: &Job,
) -> Result<(), String> {
    let batch = settings.batch.max(1);
    while !keys.is_empty() {
        let chunks: Vec<&[Vec<u8>]> = keys.chunks(batch).collect();
        let mut commands = Vec::with_capacity(chunks.len() + 1);
        for chunk in &chunks {
            commands.push(migrate_command(target, settings, false, chunk)?);
        }
        commands.push(getkeys(slot, batch * settings.depth.max(1)));
        let mut replies = links.pipeline(&source.addr, &commands).await?;
        let next = replies
            .pop()
            .ok_or_else(|| format!("{}: missing GETKEYSINSLOT reply", source.addr))?;
        let mut moved = 0u64;
        let mut busy = false;
        for (chunk, reply) in chunks.iter().zip(&replies) {
            match reply {
                Frame::Simple(s) if s.as_ref() == b"NOKEY" => {}
                reply if !reply.is_error() => moved += chunk.len() as u64,
                reply if error_text(reply).contains("BUSYKEY") => busy = true,
                reply => {
                    return Err(format!(
                        "MIGRATE of slot {slot} from {} to {} failed: {}",
                        source.addr,
                        target.addr,
                        error_text(reply)
                    ))
                }
            }
        }
        job.update(|p| p.keys_moved += moved);
        keys = key_list(&next)?;
        if busy {
            // The keys still on the source after this round include the busy ones.
            let moved = resolve_busy(links, slot, source, target, settings, &keys).await?;
            job.update(|p| p.keys_moved += moved);
            keys = key_list(
                &links
                    .call(&source.addr, getkeys(slot, batch * settings.depth.max(1)))
                    .await?,
            )?;
        }
    }
    Ok(())
}

/// Compares the keys both nodes hold; migrates with REPLACE when the copies are equal (or
/// when the caller allowed replacing), fails naming the keys otherwise.
async fn resolve_busy(
    links: &mut Links,
    slot: u16,
    source: &NodeInfo,
    target: &NodeInfo,
    settings: &Settings,
    keys: &[Vec<u8>],
) -> Result<u64, String> {
    if !settings.replace {
        let dumps: Vec<Command> = keys
            .iter()
            .map(|k| vec![b"DUMP".to_vec(), k.clone()])
            .collect();
        let on_source = links.pipeline(&source.addr, &dumps).await?;
        // The target serves an importing slot only to ASKING clients.
        let asking: Vec<Command> = keys
            .iter()
            .flat_map(|k| [cmd(&["ASKING"]), vec![b"DUMP".to_vec(), k.clone()]])
            .collect();
        let on_target = links.pipeline(&target.addr, &asking).await?;
        let differing: Vec<String> = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                let (Some(a), Some(b)) = (on_source.get(*i), on_target.get(2 * i + 1)) else {
                    return false;
                };
                matches!((a, b), (Frame::Bulk(x), Frame::Bulk(y)) if x != y)
            })
            .map(|(_, k)| String::from_utf8_lossy(k).into_owned())
            .collect();
        if !differing.is_empty() {
            return Err(format!(
                "slot {slot}: {} key(s) exist on both {} and {} with different values ({}); fix them or send \"replace\": true",
                differing.len(),
                source.addr,
                target.addr,
                differing.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let mut moved = 0;
    for chunk in keys.chunks(settings.batch.max(1)) {
        let command = migrate_command(target, settings, true, chunk)?;
        let reply = links.call(&source.addr, command).await?;
        if reply.is_error() {
            return Err(format!(
                "MIGRATE REPLACE of slot {slot} to {} failed: {}",
                target.addr,
                error_text(&reply)
            ));
        }
        moved += chunk.len() as u64;
    }
    Ok(moved)
}
