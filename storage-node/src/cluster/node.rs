//! Node identities, flags and the per-node facts the cluster keeps.

use std::fmt;

/// A node id: 40 lower-case hex digits, as Redis names nodes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId([u8; 40]);

impl NodeId {
    pub fn random() -> NodeId {
        use rand::Rng;
        let mut rng = rand::thread_rng();
        let mut id = [0u8; 40];
        for byte in id.iter_mut() {
            *byte = b"0123456789abcdef"[rng.gen_range(0..16)];
        }
        NodeId(id)
    }

    /// A node id as commands and files write it. Redis accepts 40 characters of `[a-z0-9]`.
    pub fn parse(text: &[u8]) -> Option<NodeId> {
        let bytes: [u8; 40] = text.try_into().ok()?;
        bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            .then_some(NodeId(bytes))
    }

    pub fn as_bytes(&self) -> &[u8; 40] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII ever gets in (see `parse` and `random`).
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Node flags. The bits are also the wire encoding in bus messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u16);

impl Flags {
    pub const MYSELF: u16 = 1;
    pub const MASTER: u16 = 1 << 1;
    pub const REPLICA: u16 = 1 << 2;
    pub const PFAIL: u16 = 1 << 3;
    pub const FAIL: u16 = 1 << 4;
    pub const HANDSHAKE: u16 = 1 << 5;
    pub const NOADDR: u16 = 1 << 6;
    pub const NOFAILOVER: u16 = 1 << 7;
    /// A handshake started by CLUSTER MEET: the first message on the link is a MEET.
    pub const MEET: u16 = 1 << 8;
    /// Wire only (Redis's `CLUSTERMSG_FLAG0_PAUSED`): the sender is a master whose clients
    /// are paused for a manual failover; its replication offset is final.
    pub const PAUSED: u16 = 1 << 9;
    /// Wire only (Redis's `CLUSTERMSG_FLAG0_FORCEACK`): an election request masters grant
    /// even though the replica's master is not failing (manual failover).
    pub const FORCEACK: u16 = 1 << 10;
    /// Flags that describe a message rather than a node, never kept in the node table.
    pub const MESSAGE_ONLY: u16 = Flags::MEET | Flags::PAUSED | Flags::FORCEACK;

    pub fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }

    pub fn set(&mut self, bit: u16, on: bool) {
        if on {
            self.0 |= bit;
        } else {
            self.0 &= !bit;
        }
    }

    /// The flags column of CLUSTER NODES, in Redis's order.
    pub fn describe(self) -> String {
        const NAMES: &[(u16, &str)] = &[
            (Flags::MYSELF, "myself"),
            (Flags::MASTER, "master"),
            (Flags::REPLICA, "slave"),
            (Flags::PFAIL, "fail?"),
            (Flags::FAIL, "fail"),
            (Flags::HANDSHAKE, "handshake"),
            (Flags::NOADDR, "noaddr"),
            (Flags::NOFAILOVER, "nofailover"),
        ];
        let names: Vec<&str> = NAMES
            .iter()
            .filter(|(bit, _)| self.has(*bit))
            .map(|(_, name)| *name)
            .collect();
        if names.is_empty() {
            "noflags".into()
        } else {
            names.join(",")
        }
    }
}

/// What the cluster knows about one node (itself included).
#[derive(Clone, Debug)]
pub struct Node {
    pub id: NodeId,
    /// Empty until learned (a node learns its own address from the first peer that
    /// connects to it).
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub flags: Flags,
    pub config_epoch: u64,
    /// Unix ms of the PING still waiting for its PONG (0: none).
    pub ping_sent_ms: u64,
    pub pong_received_ms: u64,
    /// Unix ms of the last message of any kind from the node.
    pub data_received_ms: u64,
    pub created_ms: u64,
    /// Unix ms when our outbound link to the node connected, while it is up.
    pub link_since_ms: Option<u64>,
    /// Unix ms when the node's inbound link was identified, while it is up.
    pub inbound_since_ms: Option<u64>,
    /// The master this node replicates (replicas only).
    pub master: Option<NodeId>,
    /// The replication offset the node last announced.
    pub repl_offset: u64,
    /// Masters that said this node is failing, and when they last said so.
    pub fail_reports: Vec<(NodeId, u64)>,
    /// Unix ms when the node was flagged `fail` (0: it is not).
    pub fail_time_ms: u64,
    /// Unix ms when this node last voted for a replica of this master (masters only).
    pub voted_time_ms: u64,
    /// The node had replicas, or took over from a master that had (Redis's `MIGRATE_TO`
    /// flag, kept in memory only): a master replicas may migrate to once it has none
    /// left. A master that never had replicas is left alone.
    pub migrate_to: bool,
    /// Unix ms since when this master has been seen orphaned (0: it is not), for the
    /// delay before a replica migrates to it.
    pub orphaned_since_ms: u64,
}

impl Node {
    pub fn new(id: NodeId, ip: &str, port: u16, cport: u16, flags: u16, now_ms: u64) -> Node {
        Node {
            id,
            ip: ip.to_string(),
            port,
            cport,
            flags: Flags(flags),
            config_epoch: 0,
            ping_sent_ms: 0,
            pong_received_ms: 0,
            data_received_ms: 0,
            created_ms: now_ms,
            link_since_ms: None,
            inbound_since_ms: None,
            master: None,
            repl_offset: 0,
            fail_reports: Vec::new(),
            fail_time_ms: 0,
            voted_time_ms: 0,
            migrate_to: false,
            orphaned_since_ms: 0,
        }
    }

    pub fn is_myself(&self) -> bool {
        self.flags.has(Flags::MYSELF)
    }

    pub fn is_master(&self) -> bool {
        self.flags.has(Flags::MASTER)
    }

    pub fn is_replica(&self) -> bool {
        self.flags.has(Flags::REPLICA)
    }

    pub fn in_handshake(&self) -> bool {
        self.flags.has(Flags::HANDSHAKE)
    }

    pub fn failing(&self) -> bool {
        self.flags.has(Flags::PFAIL) || self.flags.has(Flags::FAIL)
    }

    /// `ip:port@cport`, as CLUSTER NODES and the nodes file write the address.
    pub fn address(&self) -> String {
        format!("{}:{}@{}", self.ip, self.port, self.cport)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_only_redis_names() {
        let id = NodeId::random();
        assert_eq!(NodeId::parse(id.as_bytes()), Some(id));
        assert_eq!(NodeId::parse(b"abc"), None);
        assert_eq!(NodeId::parse(&[b'A'; 40]), None);
    }

    #[test]
    fn flags_describe_in_redis_order() {
        assert_eq!(
            Flags(Flags::MASTER | Flags::MYSELF).describe(),
            "myself,master"
        );
        assert_eq!(
            Flags(Flags::MASTER | Flags::PFAIL).describe(),
            "master,fail?"
        );
        assert_eq!(Flags(0).describe(), "noflags");
    }
}
