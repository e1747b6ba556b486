//! Whether this node serves a request, decided as Redis's `getNodeByQuery` does. The
//! refusals, with Redis's texts:
//!
//! - `-MOVED <slot> <ip>:<port>`: another node owns the slot.
//! - `-ASK <slot> <ip>:<port>`: the slot is migrating out and the keys are already gone.
//! - `-TRYAGAIN Multiple keys request during rehashing of slot`: a request whose keys are
//!   split by the migration (some still here, some gone), or after ASKING a multi-key
//!   request of which the importing node lacks some keys.
//! - `-CROSSSLOT Keys in request don't hash to the same slot`.
//! - `-CLUSTERDOWN Hash slot not served` / `-CLUSTERDOWN The cluster is down`, or with
//!   `cluster-allow-reads-when-down yes` for a write only: `-CLUSTERDOWN The cluster is
//!   down and only accepts read commands`.
//!
//! A replica serves reads of its master's slots to a client that sent `READONLY`; writes
//! (and reads from other clients) get MOVED to the master.
//!
//! A slot this node is importing is served only after `ASKING` (one command) or for a
//! command flagged `asking` (RESTORE-ASKING). Commands without keys are always served.

use bytes::Bytes;
use slotproxy::cluster::{key_slot, CommandFlags, CommandSpec};

use super::node::NodeId;
use super::Cluster;
use crate::cmd::CmdError;
use crate::keyspace::Keyspace;

pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
pub const DOWN_UNBOUND: &str = "CLUSTERDOWN Hash slot not served";
pub const DOWN_STATE: &str = "CLUSTERDOWN The cluster is down";
pub const DOWN_READ_ONLY: &str = "CLUSTERDOWN The cluster is down and only accepts read commands";

/// What the client and the settings allow, besides the keys.
#[derive(Clone, Copy, Debug, Default)]
pub struct Access {
    /// The client's one-shot ASKING flag.
    pub asking: bool,
    /// The client sent READONLY (reads from a replica).
    pub readonly: bool,
    /// `cluster-allow-reads-when-down`.
    pub reads_when_down: bool,
}

/// Whether the cluster check applies to a command at all: Redis skips commands that have
/// no key specs and no key-finding rule (EXEC is checked over its queued commands).
pub fn applies(spec: &CommandSpec) -> bool {
    !spec.key_specs.is_empty() || spec.flags.contains(CommandFlags::MOVABLEKEYS)
}

/// The keys of a request; for sharded pub/sub the channels, which Redis routes like keys.
fn key_indexes(spec: &CommandSpec, args: &[Bytes]) -> Option<Vec<usize>> {
    if spec.flags.contains(CommandFlags::PUBSUB) && !spec.key_specs.is_empty() {
        return Some(match spec.name.as_str() {
            "spublish" => vec![1],
            _ => (1..args.len()).collect(),
        });
    }
    spec.routing_key_indexes(args).ok()
}

fn redirect(kind: &str, slot: u16, cluster: &Cluster, to: &NodeId) -> CmdError {
    let state = cluster.lock();
    let (ip, port) = state
        .nodes
        .get(to)
        .map_or((String::new(), 0), |n| (n.ip.clone(), n.port));
    format!("{kind} {slot} {ip}:{port}").into()
}

/// Checks one request (or the queued requests of a transaction, for EXEC).
pub fn check(
    cluster: &Cluster,
    keyspace: &mut Keyspace,
    access: Access,
    requests: &[(&CommandSpec, &[Bytes])],
) -> Result<(), CmdError> {
    let asking = access.asking;
    let writes = requests
        .iter()
        .any(|(spec, _)| spec.flags.contains(CommandFlags::WRITE));
    let my_master;
    let mut first_key: Option<&[u8]> = None;
    let mut slot = 0u16;
    let mut owner: Option<NodeId> = None;
    let mut migrating_to: Option<NodeId> = None;
    let mut importing = false;
    let mut multiple_keys = false;
    let mut missing_keys = 0;
    let mut existing_keys = 0;
    let mut command_asking = false;
    let mut is_migrate = false;
    let me;
    {
        let state = cluster.lock();
        me = state.myself;
        my_master = state.me().master.filter(|_| state.me().is_replica());
        for (spec, args) in requests {
            command_asking |= spec.flags.contains(CommandFlags::ASKING);
            is_migrate |= spec.name == "migrate";
            let Some(indexes) = key_indexes(spec, args) else {
                continue;
            };
            for index in indexes {
                let Some(key) = args.get(index) else {
                    continue;
                };
                let this_slot = key_slot(key);
                match first_key {
                    None => {
                        first_key = Some(key);
                        slot = this_slot;
                        owner = state.slots[slot as usize];
                        let Some(node) = owner else {
                            return Err(DOWN_UNBOUND.into());
                        };
                        if node == me && state.migrating.contains_key(&slot) {
                            migrating_to = state.migrating.get(&slot).copied();
                        } else if state.importing.contains_key(&slot) {
                            importing = true;
                        }
                    }
                    Some(first) => {
                        if this_slot != slot {
                            return Err(CROSSSLOT.into());
                        }
                        if first != &key[..] {
                            multiple_keys = true;
                        }
                    }
                }
                // Shard channels are served by the old owner until the migration ends.
                let channel = spec.flags.contains(CommandFlags::PUBSUB);
                if (migrating_to.is_some() || importing) && !channel {
                    if keyspace.db(0).peek(key).is_some() {
                        existing_keys += 1;
                    } else {
                        missing_keys += 1;
                    }
                }
            }
        }
        let Some(owner_id) = owner else {
            // No keys: served here.
            return Ok(());
        };
        if !state.ok {
            if !access.reads_when_down {
                return Err(DOWN_STATE.into());
            }
            if writes {
                return Err(DOWN_READ_ONLY.into());
            }
        }
        owner = Some(owner_id);
    }
    if (migrating_to.is_some() || importing) && is_migrate {
        return Ok(());
    }
    if let Some(target) = migrating_to {
        if missing_keys > 0 {
            // Some keys here and some gone: nobody has them all right now.
            if existing_keys > 0 {
                return Err(TRYAGAIN.into());
            }
            // Redis redirects only to another node: "migrating to myself" serves here.
            if target == me {
                return Ok(());
            }
            return Err(redirect("ASK", slot, cluster, &target));
        }
    }
    if importing && (asking || command_asking) {
        if multiple_keys && missing_keys > 0 {
            return Err(TRYAGAIN.into());
        }
        return Ok(());
    }
    if access.readonly && !writes && my_master.is_some() && owner == my_master {
        return Ok(());
    }
    match owner {
        Some(node) if node != me => Err(redirect("MOVED", slot, cluster, &node)),
        _ => Ok(()),
    }
}
