//! The slot map: which master serves each slot, learned from the nodes.
//!
//! A [`Topology`] is immutable; the proxy swaps in a new one atomically (arc-swap) after a
//! refresh or a MOVED redirect, so routing never takes a lock.

use bytes::{Bytes, BytesMut};

use crate::cluster::SLOT_COUNT;
use crate::resp::{encode_request, parse_frame, Frame, Proto};

use super::pool::Pool;

/// Marks a slot no master serves.
pub const UNASSIGNED: u16 = u16::MAX;

/// One node (a master, or a replica in [`Topology::replicas`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `host:port` clients use.
    pub addr: String,
    /// The node's cluster id, when known.
    pub id: String,
}

/// Slot ownership at one moment.
#[derive(Debug, Clone)]
pub struct Topology {
    /// For each slot, an index into `masters`, or [`UNASSIGNED`].
    slots: Vec<u16>,
    pub masters: Vec<Node>,
    /// The healthy replicas of each master, indexed like `masters` (the targets of
    /// `read_from`, and the nodes a failed master's slots may move to).
    pub replicas: Vec<Vec<Node>>,
    /// The addresses of the replicas that are not failed, healthy or still in their first
    /// sync: nodes a failover could promote.
    pub standby: Vec<String>,
    /// Incremented on every change, for metrics and debugging.
    pub version: u64,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            slots: vec![UNASSIGNED; SLOT_COUNT],
            masters: Vec::new(),
            replicas: Vec::new(),
            standby: Vec::new(),
            version: 0,
        }
    }
}

impl Topology {
    /// The master serving `slot`.
    pub fn master_for(&self, slot: u16) -> Option<&Node> {
        self.masters.get(self.master_of_slot(slot)?)
    }

    /// The position in `masters` of the master serving `slot`.
    pub fn master_of_slot(&self, slot: u16) -> Option<usize> {
        let index = *self.slots.get(slot as usize)? as usize;
        (index < self.masters.len()).then_some(index)
    }

    /// Whether `addr` is one of the masters.
    pub fn knows(&self, addr: &str) -> bool {
        self.masters.iter().any(|m| m.addr == addr)
    }

    /// The healthy replicas of the master serving `slot`.
    pub fn replicas_for(&self, slot: u16) -> &[Node] {
        self.master_of_slot(slot)
            .and_then(|index| self.replicas.get(index))
            .map_or(&[], Vec::as_slice)
    }

    /// Whether any master has a replica that is not failed: only then can a failed
    /// master's slots come back on another node without an operator, so a request is worth
    /// holding for a failover. (A replica Redis still shows as `loading`, whose offset the
    /// others have not heard of yet, counts: it can be promoted.)
    pub fn has_replicas(&self) -> bool {
        !self.standby.is_empty()
    }

    /// Whether two slot maps differ in what routing sees (masters, slots or replicas).
    pub fn differs_from(&self, other: &Topology) -> bool {
        self.masters != other.masters
            || self.replicas != other.replicas
            || self.standby != other.standby
            || self.ranges() != other.ranges()
    }

    /// The failovers since the refreshes that filled `replicas_seen`: masters of this map
    /// that were last seen as replicas. `replicas_seen` is then brought up to date (nodes
    /// that are masters now leave it, replicas join it; nodes this map does not show keep
    /// their last role, as a failed master's replicas do while its shard has no master).
    pub fn count_promotions(&self, replicas_seen: &mut std::collections::HashSet<String>) -> usize {
        let promoted = self
            .masters
            .iter()
            .filter(|m| replicas_seen.contains(&m.addr))
            .count();
        for master in &self.masters {
            replicas_seen.remove(&master.addr);
        }
        replicas_seen.extend(self.standby.iter().cloned());
        promoted
    }

    /// Whether any slot has a master.
    pub fn serves_any(&self) -> bool {
        self.slots.iter().any(|&owner| owner != UNASSIGNED)
    }

    /// The masters' addresses, sorted, so every caller sees them in the same order (SCAN
    /// cursors index into it; the pub/sub home is the first).
    pub fn master_addrs(&self) -> Vec<String> {
        let mut addrs: Vec<String> = self.masters.iter().map(|m| m.addr.clone()).collect();
        addrs.sort();
        addrs
    }

    /// Slot ranges `(start, end, master index)`, merged.
    pub fn ranges(&self) -> Vec<(u16, u16, usize)> {
        let mut ranges: Vec<(u16, u16, usize)> = Vec::new();
        for (slot, &owner) in self.slots.iter().enumerate() {
            if owner == UNASSIGNED {
                continue;
            }
            match ranges.last_mut() {
                Some((_, end, who)) if *who == owner as usize && *end as usize + 1 == slot => {
                    *end = slot as u16
                }
                _ => ranges.push((slot as u16, slot as u16, owner as usize)),
            }
        }
        ranges
    }

    fn master_index(&mut self, addr: &str, id: &str) -> u16 {
        if let Some(i) = self.masters.iter().position(|m| m.addr == addr) {
            if self.masters[i].id.is_empty() {
                self.masters[i].id = id.to_string();
            }
            return i as u16;
        }
        self.masters.push(Node {
            addr: addr.to_string(),
            id: id.to_string(),
        });
        self.replicas.push(Vec::new());
        (self.masters.len() - 1) as u16
    }

    fn add_replica(&mut self, master: u16, replica: Node) {
        if let Some(replicas) = self.replicas.get_mut(master as usize) {
            if !replicas.contains(&replica) {
                replicas.push(replica);
                replicas.sort_by(|a, b| a.addr.cmp(&b.addr));
            }
        }
    }

    /// A copy where `slot` belongs to `addr` (what a MOVED redirect says).
    pub fn with_moved(&self, slot: u16, addr: &str) -> Topology {
        let mut next = self.clone();
        let index = next.master_index(addr, "");
        if let Some(owner) = next.slots.get_mut(slot as usize) {
            *owner = index;
        }
        next.version += 1;
        next
    }

    /// Parses a `CLUSTER SLOTS` reply. `asked` stands in for nodes that report no address.
    pub fn from_cluster_slots(reply: &Frame, asked: &str) -> Option<Topology> {
        let mut topology = Topology::default();
        for range in reply.as_array()? {
            let items = range.as_array()?;
            let start = items.first()?.as_integer()?;
            let end = items.get(1)?.as_integer()?;
            let master = items.get(2)?.as_array()?;
            let addr = node_addr(master.first()?, master.get(1)?, asked)?;
            let id = master
                .get(2)
                .and_then(Frame::as_bytes)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            let index = topology.master_index(&addr, &id);
            for slot in start.max(0)..=end.min(SLOT_COUNT as i64 - 1) {
                topology.slots[slot as usize] = index;
            }
            // Redis lists a range's replicas after its master, failed ones left out.
            for replica in items.iter().skip(3).filter_map(Frame::as_array) {
                let (Some(ip), Some(port)) = (replica.first(), replica.get(1)) else {
                    continue;
                };
                if let Some(addr) = node_addr(ip, port, asked) {
                    topology.standby.push(addr.clone());
                    let id = replica
                        .get(2)
                        .and_then(Frame::as_bytes)
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .unwrap_or_default();
                    topology.add_replica(index, Node { addr, id });
                }
            }
        }
        topology.standby.sort();
        Some(topology)
    }

    /// Parses a `CLUSTER SHARDS` reply (RESP2 or RESP3).
    pub fn from_cluster_shards(reply: &Frame, asked: &str) -> Option<Topology> {
        let mut topology = Topology::default();
        for shard in reply.as_array()? {
            let slots = shard.map_get("slots")?.as_array()?;
            let nodes = shard.map_get("nodes")?.as_array()?;
            let replicas: Vec<&Frame> = nodes
                .iter()
                .filter(|n| shard_role(n) == Some(b"replica"))
                .collect();
            // Listed also in a shard whose master failed: one of them may replace it.
            topology.standby.extend(
                replicas
                    .iter()
                    .filter(|r| {
                        let health = r.map_get("health").and_then(Frame::as_bytes);
                        !matches!(health, Some(b"fail" | b"failed"))
                    })
                    .filter_map(|r| shard_node(r, asked))
                    .map(|node| node.addr),
            );
            // A failed master still owns its slots while no replica replaced it, as in Redis
            // Cluster's own slot map (CLUSTER SLOTS lists it; the other nodes answer MOVED to
            // it): requests wait for it or time out, and it is used again the moment it is
            // back, instead of the slots answering CLUSTERDOWN until every node cleared FAIL.
            let masters = || nodes.iter().filter(|n| shard_role(n) == Some(b"master"));
            let master = masters()
                .find(|n| shard_node_healthy(n))
                .or_else(|| masters().next());
            let Some(master) = master else { continue };
            let master = shard_node(master, asked)?;
            let index = topology.master_index(&master.addr, &master.id);
            for replica in replicas.into_iter().filter(|r| shard_node_healthy(r)) {
                if let Some(node) = shard_node(replica, asked) {
                    topology.add_replica(index, node);
                }
            }
            for pair in slots.chunks(2) {
                let (Some(start), Some(end)) = (
                    pair.first().and_then(Frame::as_integer),
                    pair.get(1).and_then(Frame::as_integer),
                ) else {
                    continue;
                };
                for slot in start.max(0)..=end.min(SLOT_COUNT as i64 - 1) {
                    topology.slots[slot as usize] = index;
                }
            }
        }
        topology.standby.sort();
        Some(topology)
    }
}

fn shard_role(node: &Frame) -> Option<&[u8]> {
    node.map_get("role").and_then(Frame::as_bytes)
}

/// Neither failed nor still loading its data (a replica in its first sync).
fn shard_node_healthy(node: &Frame) -> bool {
    !matches!(
        node.map_get("health").and_then(Frame::as_bytes),
        Some(b"fail" | b"failed" | b"loading")
    )
}

/// One node of a `CLUSTER SHARDS` shard: its client address and id.
fn shard_node(node: &Frame, asked: &str) -> Option<Node> {
    let ip = node.map_get("ip").or_else(|| node.map_get("endpoint"))?;
    let port = node.map_get("port").or_else(|| node.map_get("tls-port"))?;
    let addr = node_addr(ip, port, asked)?;
    let id = node
        .map_get("id")
        .and_then(Frame::as_bytes)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    Some(Node { addr, id })
}

fn node_addr(ip: &Frame, port: &Frame, asked: &str) -> Option<String> {
    let port = port.as_integer()?;
    let ip = ip
        .as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned());
    let host = match ip.as_deref() {
        Some("") | Some("?") | None => asked.rsplit_once(':').map(|(h, _)| h.to_string())?,
        Some(ip) => ip.to_string(),
    };
    Some(format!("{host}:{port}"))
}

async fn ask(
    pool: &Pool,
    addr: &str,
    args: &[&str],
    timeout: std::time::Duration,
) -> Option<Frame> {
    call_many(pool, addr, &[args], timeout).await?.pop()
}

/// Sends several commands to one node in one pipeline (RESP2, lane 0 of `pool`) and parses
/// the replies, in order. `None` if the node does not answer them all within `timeout`.
pub async fn call_many(
    pool: &Pool,
    addr: &str,
    commands: &[&[&str]],
    timeout: std::time::Duration,
) -> Option<Vec<Frame>> {
    let conn = pool.get(addr, Proto::Resp2, 0).ok()?;
    let receivers: Vec<_> = commands
        .iter()
        .map(|args| {
            let mut request = BytesMut::new();
            encode_request(&mut request, args);
            conn.send(request.freeze(), false)
        })
        .collect();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut frames = Vec::with_capacity(receivers.len());
    for rx in receivers {
        let reply: Bytes = tokio::time::timeout_at(deadline, rx)
            .await
            .ok()?
            .ok()?
            .ok()?;
        frames.push(parse_frame(&reply).ok()?.map(|(frame, _)| frame)?);
    }
    Some(frames)
}

/// Learns the topology from the first of `candidates` that answers: CLUSTER SHARDS, or
/// CLUSTER SLOTS where SHARDS is not supported. Slots no node covers stay unassigned.
pub async fn fetch(
    pool: &Pool,
    candidates: &[String],
    timeout: std::time::Duration,
) -> Result<Topology, String> {
    let mut last_error = "no seed nodes configured".to_string();
    for addr in candidates {
        match ask(pool, addr, &["CLUSTER", "SHARDS"], timeout).await {
            Some(frame) if !frame.is_error() => {
                // A node that serves no slot (fresh, or reset after being forgotten) does
                // not speak for the cluster: ask the next one.
                if let Some(t) = Topology::from_cluster_shards(&frame, addr) {
                    if t.serves_any() {
                        return Ok(t);
                    }
                }
            }
            Some(_) => {}
            None => {
                last_error = format!("{addr} did not answer");
                continue;
            }
        }
        match ask(pool, addr, &["CLUSTER", "SLOTS"], timeout).await {
            Some(frame) if !frame.is_error() => {
                if let Some(t) = Topology::from_cluster_slots(&frame, addr) {
                    if t.serves_any() {
                        return Ok(t);
                    }
                }
                last_error = format!("{addr} reported no slots");
            }
            Some(frame) => last_error = format!("{addr}: {frame:?}"),
            None => last_error = format!("{addr} did not answer"),
        }
    }
    Err(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ip: &str, port: i64, id: &str) -> Frame {
        Frame::Array(vec![Frame::bulk(ip), Frame::Integer(port), Frame::bulk(id)])
    }

    fn slots_reply(replica_port: i64) -> Frame {
        Frame::Array(vec![
            Frame::Array(vec![
                Frame::Integer(0),
                Frame::Integer(8191),
                node("127.0.0.1", 7000, "a"),
                node("127.0.0.1", replica_port, "c"),
            ]),
            Frame::Array(vec![
                Frame::Integer(8192),
                Frame::Integer(16383),
                node("127.0.0.1", 7001, "b"),
            ]),
        ])
    }

    #[test]
    fn replicas_are_read_with_their_master() {
        let topology = Topology::from_cluster_slots(&slots_reply(7002), "x:1").expect("parses");
        assert_eq!(topology.replicas_for(5)[0].addr, "127.0.0.1:7002");
        assert!(topology.replicas_for(9000).is_empty());
        assert!(topology.has_replicas());
        assert!(topology.differs_from(
            &Topology::from_cluster_slots(&slots_reply(7003), "x:1").expect("parses")
        ));
    }

    #[test]
    fn a_replica_seen_as_master_is_a_failover() {
        let mut seen = std::collections::HashSet::new();
        let before = Topology::from_cluster_slots(&slots_reply(7002), "x:1").expect("parses");
        assert_eq!(before.count_promotions(&mut seen), 0);
        // The master failed: its slots have no master for a while, its replica is not shown.
        let unserved = Frame::Array(vec![Frame::Array(vec![
            Frame::Integer(8192),
            Frame::Integer(16383),
            node("127.0.0.1", 7001, "b"),
        ])]);
        let between = Topology::from_cluster_slots(&unserved, "x:1").expect("parses");
        assert_eq!(between.count_promotions(&mut seen), 0);
        let promoted = Frame::Array(vec![Frame::Array(vec![
            Frame::Integer(0),
            Frame::Integer(8191),
            node("127.0.0.1", 7002, "c"),
        ])]);
        let after = Topology::from_cluster_slots(&promoted, "x:1").expect("parses");
        assert_eq!(after.count_promotions(&mut seen), 1);
        assert_eq!(after.count_promotions(&mut seen), 0, "counted once");
    }
}
