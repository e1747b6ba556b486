//! Deciding which slots move where. Pure functions of the cluster view (and, for a
//! key-weighted rebalance, of the key count per slot), so they are unit-tested here.

use std::collections::HashMap;

use super::view::{ClusterView, NodeInfo};

/// One slot to move, between node ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub slot: u16,
    pub from: String,
    pub to: String,
}

/// `POST /v1/reshard`: the given slots (those `to` already owns are skipped), or the first
/// `count` slots of `from`.
pub fn reshard(
    view: &ClusterView,
    from: &str,
    to: &str,
    slots: Option<&[u16]>,
    count: Option<usize>,
) -> Result<Vec<Move>, String> {
    let source = view
        .by_id(from)
        .ok_or_else(|| format!("node {from} is no longer in the cluster"))?;
    let chosen: Vec<u16> = match (slots, count) {
        (Some(slots), _) => {
            let mut chosen = Vec::new();
            for &slot in slots {
                match view.owner(slot) {
                    Some(owner) if owner.id == from => chosen.push(slot),
                    Some(owner) if owner.id == to => {}
                    Some(owner) => {
                        return Err(format!(
                            "slot {slot} is owned by {} ({}), not by the source",
                            owner.id, owner.addr
                        ))
                    }
                    None => return Err(format!("slot {slot} is not served by any node")),
                }
            }
            chosen
        }
        (None, Some(count)) => {
            if count > source.slots.len() {
                return Err(format!(
                    "count {count} is more than the {} slots the source owns",
                    source.slots.len()
                ));
            }
            source.slots[..count].to_vec()
        }
        (None, None) => return Err("give slots or count".into()),
    };
    Ok(chosen
        .into_iter()
        .map(|slot| Move {
            slot,
            from: from.to_string(),
            to: to.to_string(),
        })
        .collect())
}

/// Percent by which `value` deviates from `expected`.
fn deviation(value: f64, expected: f64) -> f64 {
    if expected <= 0.0 {
        return if value > 0.0 { 100.0 } else { 0.0 };
    }
    (value - expected).abs() / expected * 100.0
}

/// Evens out the slot count: each master gets 16384/n (the remainder to those holding most),
/// surplus slots (the highest-numbered of each donor) go to the masters short of their share.
/// Nothing moves when every master is within `threshold` percent.
pub fn rebalance_slots(masters: &[&NodeInfo], threshold: f64) -> Vec<Move> {
    let n = masters.len();
    if n < 2 {
        return Vec::new();
    }
    let total: usize = masters.iter().map(|m| m.slots.len()).sum();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        masters[b]
            .slots
            .len()
            .cmp(&masters[a].slots.len())
            .then(masters[a].id.cmp(&masters[b].id))
    });
    let mut expected = vec![total / n; n];
    for &i in order.iter().take(total % n) {
        expected[i] += 1;
    }
    let worst = (0..n)
        .map(|i| deviation(masters[i].slots.len() as f64, expected[i] as f64))
        .fold(0.0, f64::max);
    if worst <= threshold {
        return Vec::new();
    }
    let mut pool: Vec<(u16, &str)> = Vec::new();
    for &i in &order {
        let surplus = masters[i].slots.len().saturating_sub(expected[i]);
        let slots = &masters[i].slots;
        pool.extend(
            slots[slots.len() - surplus..]
                .iter()
                .map(|&s| (s, masters[i].id.as_str())),
        );
    }
    let mut moves = Vec::new();
    let mut pool = pool.into_iter();
    for i in order.iter().rev() {
        let deficit = expected[*i].saturating_sub(masters[*i].slots.len());
        for (slot, from) in pool.by_ref().take(deficit) {
            moves.push(Move {
                slot,
                from: from.to_string(),
                to: masters[*i].id.clone(),
            });
        }
    }
    moves
}

/// Evens out the keys: repeatedly moves, from the master with most keys to the one with
/// fewest, the slot whose key count is closest to half their difference, until every master
/// is within `threshold` percent of the average (or no slot helps).
pub fn rebalance_keys(
    masters: &[&NodeInfo],
    keys_in_slot: &HashMap<u16, u64>,
    threshold: f64,
) -> Vec<Move> {
    let n = masters.len();
    if n < 2 {
        return Vec::new();
    }
    let weight = |slot: &u16| keys_in_slot.get(slot).copied().unwrap_or(0);
    let mut owned: Vec<Vec<u16>> = masters.iter().map(|m| m.slots.clone()).collect();
    let mut keys: Vec<u64> = owned.iter().map(|s| s.iter().map(weight).sum()).collect();
    let total: u64 = keys.iter().sum();
    if total == 0 {
        return rebalance_slots(masters, threshold);
    }
    let average = total as f64 / n as f64;
    let mut moves = Vec::new();
    for _ in 0..crate::cluster::SLOT_COUNT {
        let worst = keys
            .iter()
            .map(|&k| deviation(k as f64, average))
            .fold(0.0, f64::max);
        if worst <= threshold {
            break;
        }
        let donor = (0..n).max_by_key(|&i| keys[i]).unwrap_or(0);
        let receiver = (0..n).min_by_key(|&i| keys[i]).unwrap_or(0);
        let gap = keys[donor] - keys[receiver];
        // A slot of weight w narrows the gap when 0 < w < gap; best near gap / 2.
        let best = owned[donor]
            .iter()
            .enumerate()
            .filter(|(_, s)| weight(s) > 0 && weight(s) < gap)
            .min_by_key(|(_, s)| weight(s).abs_diff(gap / 2));
        let Some((index, &slot)) = best else { break };
        owned[donor].swap_remove(index);
        owned[receiver].push(slot);
        keys[donor] -= weight(&slot);
        keys[receiver] += weight(&slot);
        moves.push(Move {
            slot,
            from: masters[donor].id.clone(),
            to: masters[receiver].id.clone(),
        });
    }
    moves
}

/// Every slot of `id`, each to the other master holding fewest slots at that point.
pub fn drain(view: &ClusterView, id: &str) -> Result<Vec<Move>, String> {
    let node = view
        .by_id(id)
        .ok_or_else(|| format!("node {id} is no longer in the cluster"))?;
    let others: Vec<&NodeInfo> = view
        .live_masters()
        .into_iter()
        .filter(|m| m.id != id)
        .collect();
    if others.is_empty() {
        return Err("no other live master to move the slots to".into());
    }
    let mut counts: Vec<usize> = others.iter().map(|m| m.slots.len()).collect();
    let mut moves = Vec::with_capacity(node.slots.len());
    for &slot in &node.slots {
        let i = (0..others.len())
            .min_by_key(|&i| (counts[i], &others[i].id))
            .unwrap_or(0);
        counts[i] += 1;
        moves.push(Move {
            slot,
            from: id.to_string(),
            to: others[i].id.clone(),
        });
    }
    Ok(moves)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(id: &str, slots: std::ops::Range<u16>) -> NodeInfo {
        NodeInfo {
            id: id.into(),
            addr: format!("127.0.0.1:{}", 7000 + id.len()),
            flags: vec!["master".into()],
            master_of: "-".into(),
            slots: slots.collect(),
            migrating: Vec::new(),
            importing: Vec::new(),
        }
    }

    #[test]
    fn rebalance_onto_an_empty_master() {
        let (a, b, c) = (
            master("a", 0..8192),
            master("b", 8192..16384),
            master("c", 0..0),
        );
        let moves = rebalance_slots(&[&a, &b, &c], 2.0);
        assert_eq!(moves.len(), 5461);
        assert!(moves.iter().all(|m| m.to == "c"));
        assert!(rebalance_slots(&[&a, &b], 2.0).is_empty());
    }

    #[test]
    fn rebalance_by_keys_moves_heavy_slots() {
        let (a, b) = (master("a", 0..100), master("b", 100..200));
        let mut weights = HashMap::new();
        for s in 0..200u16 {
            weights.insert(s, if s < 100 { 30 } else { 10 });
        }
        let moves = rebalance_keys(&[&a, &b], &weights, 5.0);
        assert!(!moves.is_empty());
        let moved: u64 = moves.iter().map(|m| weights[&m.slot]).sum();
        // 3000 vs 1000 keys: about 1000 keys must move from a to b.
        assert!((900..=1100).contains(&moved), "{moved}");
    }

    #[test]
    fn drain_spreads_evenly() {
        let view = ClusterView {
            nodes: vec![
                master("a", 0..100),
                master("b", 100..150),
                master("c", 150..200),
            ],
        };
        let moves = drain(&view, "a").expect("plan");
        assert_eq!(moves.len(), 100);
        let to_b = moves.iter().filter(|m| m.to == "b").count();
        assert_eq!(to_b, 50);
    }
}
