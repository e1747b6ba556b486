//! The masters a client's writes went to, for its WAIT (see the parent module).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::topology::Node;
use crate::backend::{Lane, Topology};
use crate::cluster::SLOT_COUNT;
use crate::registry::lock;

/// The answer when a master the client wrote to lost a slot or left the slot map.
pub const MAP_CHANGED: &str = "ERR slotproxy: WAIT cannot count the replicas that acknowledged this client's writes: the cluster's slot map changed since they were made (failover or slot migration), so the nodes that hold them may have changed";

/// Slot maps one trail may span (a client that kept writing through a reshard) before a
/// write checks and folds them into one, as WAIT does: bounds the trail's memory, and
/// makes that check once per so many map changes rather than on each.
const MAX_MAPS: usize = 16;

/// The masters a client's possible writes went to.
#[derive(Default)]
pub struct Writes(Option<Box<Trail>>);

struct Trail {
    /// Per slot map the client wrote under (oldest first), the masters written to: bit
    /// `i` set for `masters[i]` of that map. A write under the map of the last entry (the
    /// usual case) costs one pointer comparison and a bit; checking that the writes are
    /// still where they were is left to WAIT, so clients that never call it pay nothing
    /// for a changing map.
    maps: Vec<(Arc<Topology>, Vec<u64>)>,
    /// A write ran on a node its map did not list, or a master written to lost a slot.
    lost: bool,
}

fn has(bits: &[u64], index: usize) -> bool {
    bits.get(index / 64)
        .is_some_and(|word| word & (1 << (index % 64)) != 0)
}

fn set(bits: &mut Vec<u64>, index: usize) {
    let word = index / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (index % 64);
}

/// Where `node` of `then` is in `now`, if the client's keys on it are still there: it is
/// still a master (same address, and id when both maps know it) and still serves every
/// slot it served then. A slot it lost may have taken the keys elsewhere (a migration, a
/// failover); slots it gained, and changes among other masters, do not matter.
fn still_there(then: &Topology, index: usize, node: &Node, now: &Topology) -> Option<usize> {
    let same = |m: &Node| {
        m.addr == node.addr && (m.id.is_empty() || node.id.is_empty() || m.id == node.id)
    };
    let position = now.masters.iter().position(same)?;
    (0..SLOT_COUNT as u16)
        .all(|slot| {
            then.master_of_slot(slot) != Some(index) || now.master_of_slot(slot) == Some(position)
        })
        .then_some(position)
}

impl Writes {
    fn trail(&mut self) -> &mut Trail {
        self.0.get_or_insert_with(|| {
            Box::new(Trail {
                maps: Vec::new(),
                lost: false,
            })
        })
    }

    /// The master at `index` in `topology.masters` ran a request that may write.
    pub fn note_index(&mut self, topology: &Arc<Topology>, index: usize) {
        let full = self.0.as_deref().is_some_and(|trail| {
            !trail.lost
                && trail.maps.len() >= MAX_MAPS
                && trail
                    .maps
                    .last()
                    .is_some_and(|(map, _)| !Arc::ptr_eq(map, topology))
        });
        if full && self.masters(topology).is_err() {
            self.trail().lost = true;
        }
        let trail = self.trail();
        if trail.lost {
            return;
        }
        match trail.maps.last_mut() {
            Some((map, bits)) if Arc::ptr_eq(map, topology) => set(bits, index),
            _ => {
                let mut bits = Vec::new();
                set(&mut bits, index);
                trail.maps.push((topology.clone(), bits));
            }
        }
    }

    /// A request that may write went to the master of `slot` (none: it was refused there
    /// and then, and wrote nothing).
    pub fn note_slot(&mut self, topology: &Arc<Topology>, slot: u16) {
        if let Some(index) = topology.master_of_slot(slot) {
            self.note_index(topology, index);
        }
    }

    /// A request that may write ran on the node at `addr`.
    pub fn note_addr(&mut self, topology: &Arc<Topology>, addr: &str) {
        match topology.masters.iter().position(|m| m.addr == addr) {
            Some(index) => self.note_index(topology, index),
            None => self.trail().lost = true,
        }
    }

    /// A request that may write went to every master.
    pub fn note_all(&mut self, topology: &Arc<Topology>) {
        for index in 0..topology.masters.len() {
            self.note_index(topology, index);
        }
    }

    /// The addresses of the masters written to, in the order of `now`'s masters; an error
    /// when the client's keys may have left them (the trail then starts anew, as a client
    /// whose connection to a failed node broke starts again). The trail is moved onto
    /// `now`, so the next WAIT checks only what changes after this one.
    pub(super) fn masters(&mut self, now: &Arc<Topology>) -> Result<Vec<String>, &'static str> {
        let Some(trail) = self.0.as_deref() else {
            return Ok(Vec::new());
        };
        let mut bits = Vec::new();
        let kept = !trail.lost
            && trail.maps.iter().all(|(then, written)| {
                then.masters.iter().enumerate().all(|(index, node)| {
                    if !has(written, index) {
                        return true;
                    }
                    let position = if Arc::ptr_eq(then, now) {
                        Some(index)
                    } else {
                        still_there(then, index, node, now)
                    };
                    position.map(|p| set(&mut bits, p)).is_some()
                })
            });
        if !kept {
            self.0 = None;
            return Err(MAP_CHANGED);
        }
        let addrs = now
            .masters
            .iter()
            .enumerate()
            .filter(|(i, _)| has(&bits, *i))
            .map(|(_, node)| node.addr.clone())
            .collect();
        self.0 = Some(Box::new(Trail {
            maps: vec![(now.clone(), bits)],
            lost: false,
        }));
        Ok(addrs)
    }
}

/// Where requests ran after a redirect or a retry, per client, noted by the retry loop
/// (which has the client's lane but not its session) and taken by the client's next WAIT.
#[derive(Default)]
pub struct RedirectNotes {
    /// Whether any client has a note: most WAITs and disconnects take no lock.
    any: AtomicBool,
    by_client: Mutex<HashMap<(usize, usize), Vec<String>>>,
}

impl RedirectNotes {
    /// A request of the client on `lane` was answered by `addr` after a redirect or retry.
    pub fn note(&self, lane: Lane, addr: &str) {
        let mut notes = lock(&self.by_client);
        let addrs = notes.entry((lane.worker, lane.conn)).or_default();
        if !addrs.iter().any(|a| a == addr) {
            addrs.push(addr.to_string());
        }
        self.any.store(true, Ordering::Release);
    }

    /// The client's notes, removed.
    pub fn take(&self, lane: Lane) -> Vec<String> {
        if !self.any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut notes = lock(&self.by_client);
        let taken = notes.remove(&(lane.worker, lane.conn)).unwrap_or_default();
        if notes.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "127.0.0.1:7000";
    const B: &str = "127.0.0.1:7001";
    const C: &str = "127.0.0.1:7002";

    /// Slot 0 on A, 1 on B, 2 on C.
    fn three_masters() -> Arc<Topology> {
        let map = Topology::default()
            .with_moved(0, A)
            .with_moved(1, B)
            .with_moved(2, C);
        Arc::new(map)
    }

    #[test]
    fn the_trail_lists_written_masters_until_one_loses_a_slot() {
        let map = three_masters();
        let mut writes = Writes::default();
        assert_eq!(writes.masters(&map), Ok(vec![]));
        writes.note_slot(&map, 2);
        writes.note_addr(&map, A);
        assert_eq!(writes.masters(&map), Ok(vec![A.to_string(), C.to_string()]));
        // Kept after a WAIT: the next one covers these writes too.
        assert_eq!(writes.masters(&map).map(|m| m.len()), Ok(2));
        // A slot moves between masters the client did not write to: nothing changes, and
        // a write under the new map joins the trail.
        let unrelated = Arc::new(map.with_moved(1, "127.0.0.1:7003"));
        writes.note_addr(&unrelated, "127.0.0.1:7003");
        assert_eq!(
            writes.masters(&unrelated),
            Ok(vec![
                A.to_string(),
                C.to_string(),
                "127.0.0.1:7003".to_string()
            ])
        );
        // A master written to loses a slot: no count, then a new trail.
        let lost = Arc::new(unrelated.with_moved(0, B));
        assert_eq!(writes.masters(&lost), Err(MAP_CHANGED));
        assert_eq!(writes.masters(&lost), Ok(vec![]));
        // A write that ran on a node the map does not list.
        writes.note_addr(&lost, "10.0.0.1:1");
        assert_eq!(writes.masters(&lost), Err(MAP_CHANGED));
    }

    #[test]
    fn a_master_that_gains_a_slot_keeps_its_writes() {
        let map = three_masters();
        let mut writes = Writes::default();
        writes.note_slot(&map, 0);
        let gained = Arc::new(map.with_moved(1, A));
        assert_eq!(writes.masters(&gained), Ok(vec![A.to_string()]));
    }

    #[test]
    fn a_trail_over_many_maps_is_folded_and_still_checked() {
        let mut map = three_masters();
        let mut writes = Writes::default();
        for _ in 0..3 * MAX_MAPS {
            writes.note_slot(&map, 2);
            map = Arc::new(map.with_moved(0, B));
        }
        assert!(writes.0.as_ref().is_some_and(|t| t.maps.len() <= MAX_MAPS));
        assert_eq!(writes.masters(&map), Ok(vec![C.to_string()]));
        // C loses its slot while the trail is being folded: the loss is remembered.
        for _ in 0..MAX_MAPS {
            writes.note_slot(&map, 1);
            map = Arc::new(map.with_moved(2, B));
        }
        writes.note_slot(&map, 0);
        assert_eq!(writes.masters(&map), Err(MAP_CHANGED));
    }
}
