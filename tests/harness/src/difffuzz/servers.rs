//! The two sides of a run: the subject (a storage-node, or slotproxy in front of a
//! storage-node cluster) and the reference (a standalone redis-server 7.0).

use std::process::Command;
use std::time::Duration;

use crate::cluster::{start_proxy, Cluster};
use crate::process::ServerProcess;

use super::conn::{words, Conn, Failure};

/// Address space each server process may use. A command that asks for absurd amounts of
/// memory then fails inside that one process instead of pushing the whole machine into
/// the kernel's OOM killer (which a shared test machine cannot afford).
const ADDRESS_SPACE_LIMIT: u64 = 6 * 1024 * 1024 * 1024;

/// What is under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A standalone storage-node.
    Node,
    /// slotproxy in front of three cluster-mode storage-nodes.
    Proxy,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Node => "node",
            Target::Proxy => "proxy",
        }
    }
}

/// Both sides, running.
pub struct Sides {
    pub target: Target,
    /// The process clients talk to (the node, or the proxy).
    pub subject: ServerProcess,
    /// The storage-nodes behind the proxy (empty for [`Target::Node`]).
    pub cluster: Option<Cluster>,
    pub reference: ServerProcess,
}

impl Sides {
    pub fn start(target: Target) -> Sides {
        let (subject, cluster) = match target {
            Target::Node => (ServerProcess::storage_node(&[]), None),
            Target::Proxy => {
                let cluster = Cluster::storage_nodes(3);
                (start_proxy(&cluster.seeds(), &[]), Some(cluster))
            }
        };
        let reference = ServerProcess::redis_server(&[]);
        let sides = Sides {
            target,
            subject,
            cluster,
            reference,
        };
        for pid in sides.pids() {
            limit_address_space(pid);
        }
        sides
    }

    fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.subject.pid(), self.reference.pid()];
        if let Some(cluster) = &self.cluster {
            pids.extend(cluster.nodes.iter().map(|n| n.pid()));
        }
        pids
    }

    /// The subject's processes as (name, port): the node or proxy first, then the cluster.
    pub fn subject_ports(&self) -> Vec<(String, u16)> {
        let mut ports = vec![(self.subject.name.clone(), self.subject.port)];
        if let Some(cluster) = &self.cluster {
            ports.extend(
                cluster
                    .nodes
                    .iter()
                    .map(|n| (format!("cluster {}", n.name), n.port)),
            );
        }
        ports
    }

    /// None when every subject process answers PING on a new connection within `timeout`;
    /// otherwise which one did not, and how.
    pub fn subject_liveness(&self, timeout: Duration) -> Option<(String, Failure)> {
        for (name, port) in self.subject_ports() {
            let ping = Conn::connect(port, timeout).and_then(|mut c| c.call(&words(&["PING"])));
            if let Err(failure) = ping {
                return Some((format!("{name} on port {port}"), failure));
            }
        }
        None
    }

    /// Whether the reference answers PING within `timeout`.
    pub fn reference_alive(&self, timeout: Duration) -> bool {
        Conn::connect(self.reference.port, timeout)
            .and_then(|mut c| c.call(&words(&["PING"])))
            .is_ok()
    }

    /// The subject's logs (the last lines of each), for a crash report.
    pub fn subject_log_tail(&self) -> String {
        let mut logs = vec![(self.subject.name.clone(), self.subject.log())];
        if let Some(cluster) = &self.cluster {
            logs.extend(cluster.nodes.iter().map(|n| (n.name.clone(), n.log())));
        }
        logs.iter()
            .map(|(name, log)| {
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                format!("--- {name} ---\n{tail}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Caps a running process's address space with `prlimit --pid` (util-linux).
fn limit_address_space(pid: u32) {
    let limit = ADDRESS_SPACE_LIMIT.to_string();
    let status = Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--as={limit}:{limit}"))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("difffuzz: could not limit the address space of pid {pid}");
    }
}
