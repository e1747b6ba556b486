//! `slotproxy --local N [--replicas R]`: the embedded default. Starts N storage-nodes in
//! cluster mode on free loopback ports, joins them into one cluster with the slots split
//! evenly over them, makes R more nodes per master its replicas (`CLUSTER REPLICATE`), and
//! lets the proxy serve in front of them. A node that exits is restarted ([`supervise`]).
//! Everything it started is stopped (by PID) when the proxy exits or is interrupted.

mod supervise;

pub use supervise::{local_nodes, NodeHealth};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;

use crate::cluster::ports::PortPicker;
use crate::cluster::SLOT_COUNT;
use crate::resp::{encode_request, parse_frame, Frame};

/// How long the nodes may take to start and to agree on the slots.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The storage-nodes of a local cluster; dropping it kills them.
pub struct LocalCluster {
    ports: Vec<u16>,
    /// The nodes while the cluster forms; then the supervisor owns them.
    starting: Vec<(u16, Child)>,
    supervisor: Option<supervise::Supervisor>,
    pub dir: PathBuf,
}

impl LocalCluster {
    /// `host:port` of every node.
    pub fn seeds(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect()
    }

    /// Kills every node by PID and reaps it (and stops restarting them).
    pub fn stop(&mut self) {
        if let Some(mut supervisor) = self.supervisor.take() {
            supervisor.stop();
        }
        for (_, child) in &mut self.starting {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.starting.clear();
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The storage-node binary: `$STORAGE_NODE_BIN`, next to this executable, or on PATH.
fn storage_node_binary() -> PathBuf {
    if let Ok(path) = std::env::var("STORAGE_NODE_BIN") {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("storage-node")))
        .filter(|path| path.exists())
        .unwrap_or_else(|| PathBuf::from("storage-node"))
}

/// Starts the node of `port` in `dir/<port>` (where its nodes file is) and waits until it
/// listens.
fn start_node(binary: &Path, dir: &Path, port: u16) -> std::io::Result<Child> {
    let node_dir = dir.join(port.to_string());
    std::fs::create_dir_all(&node_dir)?;
    let mut child = Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ])
        .args(["--dir", &node_dir.display().to_string()])
        // A node the supervisor restarts comes back with its data: the AOF is written
        // before each reply leaves, so a killed process loses no acknowledged write
        // (`appendfsync everysec`, Redis's default, bounds what a machine crash loses).
        .args(["--appendonly", "yes"])
        // Its own process group: a terminal's Ctrl-C reaches the proxy only, which then stops
        // the nodes itself; otherwise the supervisor would see them die and restart them.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| std::io::Error::other(format!("cannot start {}: {e}", binary.display())))?;
    // The node says when it listens; then its output is drained in the background.
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("Ready to accept connections") => break,
            Some(Ok(_)) => continue,
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::other(format!(
                    "storage-node on port {port} did not start"
                )));
            }
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    Ok(child)
}

/// Sends one command on a fresh connection and returns the reply.
fn call(port: u16, args: &[&str]) -> std::io::Result<Frame> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut request = BytesMut::new();
    encode_request(&mut request, args);
    stream.write_all(&request)?;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::other("connection closed"));
        }
        buffer.extend_from_slice(&chunk[..n]);
        match parse_frame(&buffer) {
            Ok(Some((frame, _))) => return Ok(frame),
            Ok(None) => continue,
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
    }
}

fn check_ok(reply: Frame, what: &str) -> std::io::Result<()> {
    if reply.is_error() {
        return Err(std::io::Error::other(format!("{what}: {reply:?}")));
    }
    Ok(())
}

/// Starts `count` masters and `replicas` replicas of each under `dir` and forms the
/// cluster.
pub fn start(count: usize, replicas: usize, dir: PathBuf) -> std::io::Result<LocalCluster> {
    let count = count.max(1);
    let total = count * (1 + replicas);
    let binary = storage_node_binary();
    let mut cluster = LocalCluster {
        ports: Vec::new(),
        starting: Vec::new(),
        supervisor: None,
        dir: dir.clone(),
    };
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut picker = PortPicker::new(u64::from(std::process::id()) ^ clock);
    for _ in 0..total {
        // A port free when picked can be taken before the node binds it (another program
        // starting servers at the same moment): a few more ports are tried.
        let mut attempts = 0;
        let (port, child) = loop {
            let port = picker
                .pick()
                .ok_or_else(|| std::io::Error::other("no free port pair below 32768"))?;
            match start_node(&binary, &dir, port) {
                Ok(child) => break (port, child),
                Err(e) if attempts >= 4 => return Err(e),
                Err(_) => attempts += 1,
            }
        };
        cluster.starting.push((port, child));
        cluster.ports.push(port);
    }
    let ports = cluster.ports.clone();
    for &port in &ports[1..] {
        check_ok(
            call(
                ports[0],
                &["CLUSTER", "MEET", "127.0.0.1", &port.to_string()],
            )?,
            "CLUSTER MEET",
        )?;
    }
    let (masters, replica_ports) = ports.split_at(count);
    for (i, &port) in masters.iter().enumerate() {
        let start = i * SLOT_COUNT / count;
        let end = (i + 1) * SLOT_COUNT / count - 1;
        let range = [
            "CLUSTER",
            "ADDSLOTSRANGE",
            &start.to_string(),
            &end.to_string(),
        ];
        check_ok(call(port, &range)?, "CLUSTER ADDSLOTSRANGE")?;
    }
    let deadline = Instant::now() + START_TIMEOUT;
    // Every node must know every other before a replica can name its master.
    wait_for(
        &ports,
        deadline,
        "the local cluster did not converge",
        |info| {
            info.contains("cluster_state:ok")
                && info.contains(&format!("cluster_known_nodes:{total}"))
                && info.contains("cluster_slots_ok:16384")
        },
    )?;
    // Replica j of master i is `replica_ports[i * replicas + j]`.
    for (i, &master) in masters.iter().enumerate() {
        let id = call(master, &["CLUSTER", "MYID"])?;
        let id = id
            .as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .ok_or_else(|| std::io::Error::other(format!("CLUSTER MYID: {id:?}")))?;
        for &replica in &replica_ports[i * replicas..(i + 1) * replicas] {
            check_ok(
                call(replica, &["CLUSTER", "REPLICATE", &id])?,
                "CLUSTER REPLICATE",
            )?;
        }
    }
    wait_for(
        replica_ports,
        deadline,
        "the local replicas did not sync",
        |info| info.contains("master_link_status:up"),
    )?;
    let nodes = std::mem::take(&mut cluster.starting);
    cluster.supervisor = Some(supervise::Supervisor::start(binary, dir, nodes));
    Ok(cluster)
}

/// Waits until every node of `ports` answers an INFO (all sections, CLUSTER INFO's fields
/// added) for which `done` holds, or fails with `what` at `deadline`.
fn wait_for(
    ports: &[u16],
    deadline: Instant,
    what: &str,
    done: impl Fn(&str) -> bool,
) -> std::io::Result<()> {
    let text = |port: u16, args: &[&str]| {
        call(port, args)
            .ok()
            .and_then(|f| {
                f.as_bytes()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            })
            .unwrap_or_default()
    };
    loop {
        let all = ports.iter().all(|&port| {
            let info = text(port, &["CLUSTER", "INFO"]) + &text(port, &["INFO", "replication"]);
            done(&info)
        });
        if all {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(std::io::Error::other(what.to_string()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
