//! Finishing what others left half done: slots some master still shows as MIGRATING
//! (`[slot->-target]`) or IMPORTING (`[slot-<-source]`).
//!
//! The rule (run at the start of every job):
//! - the **target** is the node importing the slot, or else the one a migrating source
//!   names; the **source** is the node migrating it, or else the one the target names;
//! - **target reachable** (a live master that answers): finish the move. The slot is opened
//!   again where it is not (IMPORTING on the target, MIGRATING on the source, only while the
//!   source still owns it), every key the source still holds in the slot is migrated, then
//!   `SETSLOT NODE target` on the target and every other master;
//! - **target gone** (not in the cluster, failed, or not answering): roll back with
//!   `SETSLOT <slot> STABLE` on the source, which keeps (or takes back) the slot. Keys already
//!   migrated to a dead target are lost with it, as they would be with any client;
//! - neither side reachable: the job fails and names the slot.
//!
//! Finishing is always preferred because a migration can be half done in ways only the end
//! state repairs (the source already answered ASK for keys now on the target, or one side
//! already ran SETSLOT NODE).

use std::collections::BTreeMap;

use super::link::{cmd, error_text, Links};
use super::migrate::{assign_slot, migrate_keys, Settings};
use super::view::{ClusterView, NodeInfo};
use super::Job;
use crate::resp::Frame;

#[derive(Default, Debug)]
struct Open {
    /// The node showing MIGRATING, and the target it names.
    migrating: Option<(String, String)>,
    /// The node showing IMPORTING, and the source it names.
    importing: Option<(String, String)>,
}

/// A live master that answers PING.
async fn reachable<'v>(
    links: &mut Links,
    view: &'v ClusterView,
    id: Option<&str>,
) -> Option<&'v NodeInfo> {
    let node = view.by_id(id?)?;
    if !node.is_master() || node.is_down() {
        return None;
    }
    let answer = links.call(&node.addr, cmd(&["PING"])).await.ok()?;
    (!answer.is_error()).then_some(node)
}

/// An error reply is a failure unless it says the step was already done.
fn refused_unless_done(reply: &Frame, done: &str, addr: &str) -> Result<(), String> {
    let text = error_text(reply);
    if reply.is_error() && !text.contains(done) {
        return Err(format!("{addr} answered '{text}'"));
    }
    Ok(())
}

/// Finishes or rolls back every open slot in `view`. Returns whether anything was done
/// (the caller then reloads the view).
pub async fn finish_open_slots(
    links: &mut Links,
    view: &ClusterView,
    settings: &Settings,
    job: &Job,
) -> Result<bool, String> {
    let mut open: BTreeMap<u16, Open> = BTreeMap::new();
    for node in view.live_masters() {
        for (slot, peer) in &node.migrating {
            open.entry(*slot).or_default().migrating = Some((node.id.clone(), peer.clone()));
        }
        for (slot, peer) in &node.importing {
            open.entry(*slot).or_default().importing = Some((node.id.clone(), peer.clone()));
        }
    }
    for (&slot, state) in &open {
        let target_id = state
            .importing
            .as_ref()
            .map(|(me, _)| me)
            .or(state.migrating.as_ref().map(|(_, peer)| peer))
            .cloned();
        let source_id = state
            .migrating
            .as_ref()
            .map(|(me, _)| me)
            .or(state.importing.as_ref().map(|(_, peer)| peer))
            .cloned();
        let target = reachable(links, view, target_id.as_deref()).await;
        let source = reachable(links, view, source_id.as_deref()).await;
        let s = slot.to_string();
        let action = match (source, target) {
            (source, Some(target)) => {
                if let Some(source) = source {
                    // Re-open what is not open. A node may already be past that step (the
                    // target already owns the slot, the source already gave it up): its
                    // refusal then says so, and the move goes on.
                    if state.importing.is_none() {
                        let reply = links
                            .call(
                                &target.addr,
                                cmd(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &source.id]),
                            )
                            .await?;
                        refused_unless_done(&reply, "already the owner", &target.addr)?;
                    }
                    if state.migrating.is_none() {
                        let reply = links
                            .call(
                                &source.addr,
                                cmd(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &target.id]),
                            )
                            .await?;
                        refused_unless_done(&reply, "not the owner", &source.addr)?;
                    }
                    let keys = links
                        .ok(
                            &source.addr,
                            cmd(&["CLUSTER", "GETKEYSINSLOT", &s, &settings.batch.to_string()]),
                        )
                        .await?;
                    let keys: Vec<Vec<u8>> = keys
                        .as_array()
                        .unwrap_or(&[])
                        .iter()
                        .filter_map(|k| k.as_bytes().map(<[u8]>::to_vec))
                        .collect();
                    migrate_keys(links, slot, source, target, settings, keys, job).await?;
                }
                let others = view.master_addrs_except(&[&target.id]);
                assign_slot(links, slot, target, &others).await?;
                serde_json::json!({ "slot": slot, "action": "finished", "to": target.id })
            }
            (Some(source), None) => {
                links
                    .ok(&source.addr, cmd(&["CLUSTER", "SETSLOT", &s, "STABLE"]))
                    .await?;
                serde_json::json!({ "slot": slot, "action": "rolled_back", "to": source.id })
            }
            (None, None) => {
                return Err(format!(
                    "slot {slot} is open (MIGRATING/IMPORTING) but neither its source {} nor its target {} answers",
                    source_id.as_deref().unwrap_or("?"),
                    target_id.as_deref().unwrap_or("?")
                ))
            }
        };
        tracing::info!("job {}: open slot {slot}: {action}", job.id);
        job.update(|p| p.recovered.push(action));
    }
    Ok(!open.is_empty())
}
