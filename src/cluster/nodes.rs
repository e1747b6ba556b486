//! `CLUSTER NODES` as text: one line per node with its id, address, flags, master, and the
//! slots it serves, plus (on a node's own `myself` line) the slots it has open for a
//! migration (`[slot->-id]` migrating, `[slot-<-id]` importing).
//!
//! Shared core: the proxy's resharding jobs and its cluster-wide CONFIG both read it.

use super::SLOT_COUNT;

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

    pub fn is_myself(&self) -> bool {
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
