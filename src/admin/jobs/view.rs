//! What the nodes say about the cluster, read from `CLUSTER NODES`: ids, addresses, roles,
//! slot ownership, and the slots each master has left open (MIGRATING / IMPORTING).
//!
//! Jobs plan and recover from this view, never from proxy memory: a slot's migration state
//! lives on the nodes (`[slot->-id]` on the source, `[slot-<-id]` on the target, each shown
//! only on the node's own `myself` line), so every master is asked for its own line.

use crate::cluster::SLOT_COUNT;
use crate::resp::Frame;

use super::link::{cmd, Links};

/// One node as a `CLUSTER NODES` line describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    pub id: String,
    /// `ip:port` for clients.
    pub addr: String,
    pub flags: Vec<String>,
    /// The id of the master a replica follows (`-` for masters).
    pub master_of: String,
    pub slots: Vec<u16>,
    /// Open slots on this node's own line: `(slot, peer id)`.
    pub migrating: Vec<(u16, String)>,
    pub importing: Vec<(u16, String)>,
}

impl NodeInfo {
    pub fn is_master(&self) -> bool {
        self.flags.iter().any(|f| f == "master")
    }

    /// Failed, without an address, or still in handshake: not usable for a job.
    pub fn is_down(&self) -> bool {
        self.flags
            .iter()
            .any(|f| matches!(f.as_str(), "fail" | "fail?" | "noaddr" | "handshake"))
    }

    fn is_myself(&self) -> bool {
        self.flags.iter().any(|f| f == "myself")
    }
}

/// Parses one `CLUSTER NODES` line. `asked` stands in for a node that does not know its own
/// IP yet (a fresh node shows `:port`).
pub fn parse_line(line: &str, asked: &str) -> Option<NodeInfo> {
    let mut words = line.split_whitespace();
    let id = words.next()?.to_string();
    let address = words.next()?;
    let flags: Vec<String> = words.next()?.split(',').map(str::to_string).collect();
    let master_of = words.next()?.to_string();
    // ping-sent, pong-recv, config-epoch, link-state
    for _ in 0..4 {
        words.next()?;
    }
    let client_addr = address.split(['@', ',']).next()?;
    let addr = match client_addr.rsplit_once(':') {
        Some(("", port)) => {
            let host = asked.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
            format!("{host}:{port}")
        }
        Some(_) => client_addr.to_string(),
        None => return None,
    };
    let mut node = NodeInfo {
        id,
        addr,
        flags,
        master_of,
        slots: Vec::new(),
        migrating: Vec::new(),
        importing: Vec::new(),
    };
    for word in words {
        if let Some(open) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            if let Some((slot, peer)) = open.split_once("->-") {
                node.migrating.push((slot.parse().ok()?, peer.to_string()));
            } else if let Some((slot, peer)) = open.split_once("-<-") {
                node.importing.push((slot.parse().ok()?, peer.to_string()));
            }
            continue;
        }
        let (start, end) = match word.split_once('-') {
            Some((a, b)) => (a.parse::<u16>().ok()?, b.parse::<u16>().ok()?),
            None => {
                let slot = word.parse::<u16>().ok()?;
                (slot, slot)
            }
        };
        if usize::from(end) >= SLOT_COUNT || start > end {
            return None;
        }
        node.slots.extend(start..=end);
    }
    node.slots.sort_unstable();
    Some(node)
}

/// Parses a whole `CLUSTER NODES` reply.
pub fn parse_nodes(text: &str, asked: &str) -> Vec<NodeInfo> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| parse_line(l, asked))
        .collect()
}

/// The cluster as one node sees it, plus every reachable master's own open slots.
#[derive(Debug, Clone, Default)]
pub struct ClusterView {
    pub nodes: Vec<NodeInfo>,
}

/// Reads `CLUSTER NODES` from `addr`.
pub async fn nodes_of(links: &mut Links, addr: &str) -> Result<Vec<NodeInfo>, String> {
    let frame = links.ok(addr, cmd(&["CLUSTER", "NODES"])).await?;
    let text = match &frame {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Verbatim { text, .. } => String::from_utf8_lossy(text).into_owned(),
        _ => return Err(format!("{addr}: CLUSTER NODES reply is not text")),
    };
    Ok(parse_nodes(&text, addr))
}

impl ClusterView {
    /// Learns the cluster from the first of `candidates` that answers, then asks every live
    /// master for its own line (the only place its open slots are shown).
    pub async fn load(links: &mut Links, candidates: &[String]) -> Result<ClusterView, String> {
        let mut last_error = "no node to ask (no seeds, no known masters)".to_string();
        let mut base = None;
        for addr in candidates {
            match nodes_of(links, addr).await {
                // A node that knows nobody but itself and serves nothing (a reset or fresh
                // node) does not speak for the cluster.
                Ok(nodes) if nodes.len() > 1 || nodes.iter().any(|n| !n.slots.is_empty()) => {
                    base = Some(nodes);
                    break;
                }
                Ok(_) => last_error = format!("{addr} is not part of a cluster"),
                Err(e) => last_error = e,
            }
        }
        let Some(mut nodes) = base else {
            return Err(last_error);
        };
        for node in &mut nodes {
            if !node.is_master() || node.is_down() {
                continue;
            }
            let addr = node.addr.clone();
            // The view stays usable when one master cannot be asked; its open slots are
            // then unknown until the next job.
            if let Ok(own) = nodes_of(links, &addr).await {
                if let Some(me) = own.into_iter().find(|n| n.is_myself()) {
                    node.migrating = me.migrating;
                    node.importing = me.importing;
                }
            }
        }
        Ok(ClusterView { nodes })
    }

    /// Masters that can take part in a job.
    pub fn live_masters(&self) -> Vec<&NodeInfo> {
        self.nodes
            .iter()
            .filter(|n| n.is_master() && !n.is_down())
            .collect()
    }

    /// A node by id (or unique id prefix of 8+ characters) or by `host:port`.
    pub fn find(&self, wanted: &str) -> Option<&NodeInfo> {
        if let Some(node) = self
            .nodes
            .iter()
            .find(|n| n.id == wanted || n.addr == wanted)
        {
            return Some(node);
        }
        if wanted.len() >= 8 {
            let mut matches = self.nodes.iter().filter(|n| n.id.starts_with(wanted));
            let first = matches.next()?;
            return matches.next().is_none().then_some(first);
        }
        None
    }

    pub fn by_id(&self, id: &str) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The master owning `slot`.
    pub fn owner(&self, slot: u16) -> Option<&NodeInfo> {
        self.nodes
            .iter()
            .find(|n| n.is_master() && n.slots.binary_search(&slot).is_ok())
    }

    /// Addresses of every live master except the listed ids.
    pub fn master_addrs_except(&self, except: &[&str]) -> Vec<String> {
        self.live_masters()
            .into_iter()
            .filter(|n| !except.contains(&n.id.as_str()))
            .map(|n| n.addr.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_ranges_and_open_slots() {
        let line = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-10 12 [11->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f] [13-<-abc]";
        let node = parse_line(line, "x:1").expect("parses");
        assert_eq!(node.addr, "127.0.0.1:30001");
        assert!(node.is_master() && node.is_myself() && !node.is_down());
        assert_eq!(node.slots.len(), 12);
        assert_eq!(
            node.migrating,
            vec![(11, "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f".into())]
        );
        assert_eq!(node.importing, vec![(13, "abc".into())]);
        let fresh = parse_line(
            "abc :7005@17005 myself,master - 0 0 0 connected",
            "10.0.0.2:7005",
        )
        .expect("parses");
        assert_eq!(fresh.addr, "10.0.0.2:7005");
        let hostname = parse_line(
            "abc 10.0.0.3:7000@17000,host.example master - 0 0 1 connected 5",
            "x:1",
        )
        .expect("parses");
        assert_eq!(hostname.addr, "10.0.0.3:7000");
        assert_eq!(hostname.slots, vec![5]);
    }
}
