//! The cluster as the last background poll saw it (the poll itself is the admin side's:
//! `admin::metrics::poll`). The proxy's INFO and the scrapes read it.

/// One node as its last poll saw it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSample {
    pub addr: String,
    /// `master` or `slave`, as INFO says.
    pub role: String,
    pub used_memory: u64,
    pub keys: u64,
    pub ops_per_sec: u64,
    pub connected_clients: u64,
    pub repl_offset: u64,
    /// `cluster_current_epoch` (masters only).
    pub epoch: Option<u64>,
    /// Replicas announced in INFO replication.
    pub replicas: Vec<String>,
    /// Nodes this node's `CLUSTER NODES` lists: `(addr, is_master)` (masters only).
    pub known: Vec<(String, bool)>,
    /// For a replica: its master (`master_host:master_port`) and whether the link to it is
    /// up (`master_link_status:up`), from its INFO replication.
    pub master_link: Option<(String, bool)>,
}

/// The last poll.
#[derive(Debug, Clone, Default)]
pub struct ClusterSnapshot {
    /// Masters of the slot map, and whether they answered.
    pub up: Vec<(String, bool)>,
    /// Every node that answered (masters and replicas).
    pub nodes: Vec<NodeSample>,
    /// The top slots by keys, `(slot, owner, keys)`, from the last slot count.
    pub slot_keys: Vec<(u16, String, u64)>,
}

impl ClusterSnapshot {
    /// The highest `cluster_current_epoch` any master reported.
    pub fn epoch(&self) -> Option<u64> {
        self.nodes.iter().filter_map(|n| n.epoch).max()
    }
}
