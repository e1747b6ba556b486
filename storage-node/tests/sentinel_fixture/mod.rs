//! A group Sentinel manages: one master and two replicas, each started from a config file
//! of its own (Sentinel's `CONFIG REWRITE` writes there, and a restarted server reads it
//! back), and three Debian `redis-sentinel` 7.0 processes monitoring the master with
//! quorum 2. The servers are either storage-nodes or redis-servers, so one scenario shows
//! what Sentinel does with redis-server and that it does the same with storage-nodes.
//!
//! Used with `mod persistence_fixture;` and `mod replication_fixture;` next to it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::process::storage_node_binary;
use test_harness::{free_port, RawClient, ServerProcess};

use crate::persistence_fixture::{scratch_dir, ScratchDir};
use crate::replication_fixture::wait_for;

/// The name the sentinels know the group by.
pub const GROUP: &str = "mymaster";
/// Sentinel's `down-after-milliseconds`: how long a master may be silent before a
/// sentinel thinks it is down. At 1000 ms, under the full suite's load, one sentinel once
/// judged the just-promoted master down within a second of the switch and the sentinels
/// failed over a second time (to the other replica), which the scenario does not expect.
pub const DOWN_AFTER_MS: u64 = 2000;

/// Which server the group is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    StorageNode,
    RedisServer,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::StorageNode => "storage-node",
            Kind::RedisServer => "redis-server",
        }
    }

    fn program(self) -> PathBuf {
        match self {
            Kind::StorageNode => storage_node_binary(),
            Kind::RedisServer => PathBuf::from("redis-server"),
        }
    }
}

/// Held by each test while its group runs: sentinels judge a master down after one
/// second of silence, so groups are not run side by side (one test's busy script or
/// writer would starve another's servers into a false failover, and the failover times
/// printed would measure the neighbours).
static ONE_GROUP_AT_A_TIME: Mutex<()> = Mutex::new(());

pub struct Group {
    pub kind: Kind,
    /// The servers' ports, the first server being the initial master.
    pub ports: Vec<u16>,
    /// The servers, `None` while one is stopped.
    pub servers: Vec<Option<ServerProcess>>,
    pub sentinels: Vec<ServerProcess>,
    dir: ScratchDir,
    /// Last: released after the servers are stopped.
    _turn: MutexGuard<'static, ()>,
}

impl Group {
    /// Starts the master and its two replicas (`priorities[i]` is server i's
    /// `replica-priority`), waits until both replicas are in sync, then starts the three
    /// sentinels and waits until each knows both replicas and the other two sentinels
    /// (which it learns from the hello messages on the master's `__sentinel__:hello`).
    pub fn start(kind: Kind, priorities: [u32; 3]) -> Group {
        // A test that failed while holding it poisoned it; the next may still run.
        let turn = ONE_GROUP_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut ports: Vec<u16> = Vec::new();
        while ports.len() < 6 {
            let port = free_port();
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
        let sentinel_ports = ports.split_off(3);
        let dir = scratch_dir(&format!("sentinel-{}-{}", kind.name(), ports[0]));
        let mut group = Group {
            kind,
            ports: ports.clone(),
            servers: Vec::new(),
            sentinels: Vec::new(),
            dir,
            _turn: turn,
        };
        for (i, priority) in priorities.iter().enumerate() {
            let data = group.dir.join(format!("server-{i}"));
            std::fs::create_dir_all(&data).expect("the server's directory");
            let mut conf = format!(
                "port {}\nbind 127.0.0.1\ndir {}\nsave \"\"\nappendonly no\ndaemonize no\n\
                 logfile \"\"\nrepl-diskless-sync-delay 0\nreplica-priority {priority}\n",
                ports[i],
                data.display()
            );
            if i > 0 {
                conf.push_str(&format!("replicaof 127.0.0.1 {}\n", ports[0]));
            }
            std::fs::write(group.config_file(i), conf).expect("write the server's config");
            group.servers.push(Some(group.start_server(i)));
        }
        for replica in [1, 2] {
            group.wait_following(replica, ports[0]);
        }
        for port in sentinel_ports {
            group.sentinels.push(group.start_sentinel(port));
        }
        wait_for(
            "every sentinel to know the replicas and the other sentinels",
            || {
                (0..3).all(|s| {
                    let master = group.sentinel_master(s);
                    master.get("num-slaves").map(String::as_str) == Some("2")
                        && master.get("num-other-sentinels").map(String::as_str) == Some("2")
                })
            },
        );
        group
    }

    pub fn config_file(&self, server: usize) -> PathBuf {
        self.dir.join(format!("server-{server}.conf"))
    }

    /// Starts server `i` from its config file (again after a kill: on the same port).
    pub fn start_server(&self, i: usize) -> ServerProcess {
        ServerProcess::spawn(
            self.kind.name(),
            &self.kind.program(),
            &[self.config_file(i).display().to_string()],
            self.ports[i],
            "Ready to accept connections",
        )
    }

    fn start_sentinel(&self, port: u16) -> ServerProcess {
        let data = self.dir.join(format!("sentinel-{port}"));
        std::fs::create_dir_all(&data).expect("the sentinel's directory");
        let conf = data.join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndir {}\ndaemonize no\nlogfile \"\"\n\
             sentinel monitor {GROUP} 127.0.0.1 {} 2\n\
             sentinel down-after-milliseconds {GROUP} {DOWN_AFTER_MS}\n\
             sentinel failover-timeout {GROUP} 10000\n",
            data.display(),
            self.ports[0]
        );
        std::fs::write(&conf, text).expect("write the sentinel's config");
        ServerProcess::spawn(
            "redis-sentinel",
            &PathBuf::from("redis-sentinel"),
            &[conf.display().to_string()],
            port,
            "+monitor master",
        )
    }

    pub fn client(&self, server: usize) -> RawClient {
        RawClient::connect(self.ports[server])
    }

    /// The index of the server on `port`.
    pub fn server_on(&self, port: u16) -> usize {
        self.ports
            .iter()
            .position(|&p| p == port)
            .unwrap_or_else(|| panic!("no server of the group on port {port}"))
    }

    /// Kills server `i` with SIGKILL (by its PID).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut server) = self.servers[i].take() {
            server.kill();
        }
    }

    /// The master's port sentinel `s` gives clients (`SENTINEL get-master-addr-by-name`).
    pub fn master_port(&self, s: usize) -> Option<u16> {
        let reply = RawClient::connect(self.sentinels[s].port).call(&[
            "SENTINEL",
            "get-master-addr-by-name",
            GROUP,
        ]);
        match reply {
            Frame::Array(addr) => match addr.as_slice() {
                [_, Frame::Bulk(port)] => String::from_utf8_lossy(port).parse().ok(),
                _ => None,
            },
            _ => None,
        }
    }

    /// `SENTINEL MASTER` of sentinel `s`, as field → value.
    pub fn sentinel_master(&self, s: usize) -> std::collections::HashMap<String, String> {
        let reply = RawClient::connect(self.sentinels[s].port).call(&["SENTINEL", "MASTER", GROUP]);
        pairs(&reply)
    }

    /// `SENTINEL REPLICAS` of sentinel `s`, one field → value map per replica.
    pub fn sentinel_replicas(&self, s: usize) -> Vec<std::collections::HashMap<String, String>> {
        let reply =
            RawClient::connect(self.sentinels[s].port).call(&["SENTINEL", "REPLICAS", GROUP]);
        match reply {
            Frame::Array(replicas) => replicas.iter().map(pairs).collect(),
            other => panic!("SENTINEL REPLICAS answered {other:?}"),
        }
    }

    /// ROLE of server `i`: its role and, for a replica, its master's port and link state.
    /// None when the server cannot be asked or cut the connection (Sentinel ends its
    /// reconfigurations with `CLIENT KILL TYPE normal`, which may catch this one).
    pub fn role(&self, i: usize) -> Option<(String, Option<u16>, Option<String>)> {
        let stream = std::net::TcpStream::connect(("127.0.0.1", self.ports[i])).ok()?;
        let mut client = RawClient::from_stream(stream);
        client.try_send_raw(&RawClient::encode(&[b"ROLE"])).ok()?;
        let Frame::Array(role) = client.try_read_reply()?.0 else {
            return None;
        };
        let text = |f: &Frame| match f {
            Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => format!("{other:?}"),
        };
        let kind = text(role.first()?);
        if kind != "slave" {
            return Some((kind, None, None));
        }
        let port = match role.get(2)? {
            Frame::Integer(port) => u16::try_from(*port).ok(),
            other => text(other).parse().ok(),
        };
        Some((kind, port, Some(text(role.get(3)?))))
    }

    /// Waits until server `i` replicates from `master_port` with its link up.
    pub fn wait_following(&self, i: usize, master_port: u16) {
        wait_for(
            &format!("server {i} to replicate from port {master_port}"),
            || self.role(i) == Some(("slave".into(), Some(master_port), Some("connected".into()))),
        );
    }

    /// Kills the master and waits until every sentinel names another one; returns the
    /// new master's index and how long that took from the kill.
    pub fn kill_master_and_wait_for_failover(&mut self, master: usize) -> (usize, Duration) {
        let killed_at = Instant::now();
        self.kill(master);
        let old = self.ports[master];
        let mut new = None;
        wait_for("the sentinels to fail over", || {
            let named: Vec<Option<u16>> = (0..3).map(|s| self.master_port(s)).collect();
            let agreed = named[0].filter(|&p| p != old && named.iter().all(|n| *n == Some(p)));
            new = agreed;
            agreed.is_some()
        });
        let elapsed = killed_at.elapsed();
        let new = self.server_on(new.expect("a new master"));
        (new, elapsed)
    }

    /// The sentinels' logs, for failure messages.
    pub fn sentinel_logs(&self) -> String {
        self.sentinels
            .iter()
            .map(|s| format!("--- sentinel {}\n{}", s.port, s.log()))
            .collect()
    }
}

/// A reply of name/value pairs as a map.
fn pairs(reply: &Frame) -> std::collections::HashMap<String, String> {
    let Frame::Array(items) = reply else {
        panic!("not name/value pairs: {reply:?}");
    };
    items
        .chunks(2)
        .filter_map(|pair| match pair {
            [Frame::Bulk(name), Frame::Bulk(value)] => Some((
                String::from_utf8_lossy(name).into_owned(),
                String::from_utf8_lossy(value).into_owned(),
            )),
            _ => None,
        })
        .collect()
}
