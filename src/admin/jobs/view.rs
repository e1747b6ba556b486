//! What the nodes say about the cluster, read from `CLUSTER NODES`: ids, addresses, roles,
//! slot ownership, and the slots each master has left open (MIGRATING / IMPORTING).
//!
//! Jobs plan and recover from this view, never from proxy memory: a slot's migration state
//! lives on the nodes (`[slot->-id]` on the source, `[slot-<-id]` on the target, each shown
//! only on the node's own `myself` line), so every master is asked for its own line.

use crate::cluster::nodes::parse_nodes;
pub use crate::cluster::nodes::NodeInfo;
use crate::resp::Frame;

use super::link::{cmd, Links};

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
