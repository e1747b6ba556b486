//! The cluster high-availability tests' shared fixture: CLUSTER NODES parsed, the shape of
//! a reply (its structure without the values that differ between two clusters), waiting
//! for a cluster's replica topology to settle, and a writer that records every write a
//! node acknowledged, for the failover tests to read back from the final topology.

#![allow(dead_code)]

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{wait_until, Cluster, RawClient};

/// How long a cluster step may take on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(90);

pub fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

/// One line of CLUSTER NODES.
#[derive(Clone, Debug)]
pub struct NodeLine {
    pub id: String,
    pub port: u16,
    pub flags: Vec<String>,
    /// The master's id, or `-`.
    pub master: String,
    pub config_epoch: u64,
    pub link: String,
    pub slots: Vec<String>,
}

impl NodeLine {
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// CLUSTER NODES of the node on `port`, parsed (empty if it does not answer).
pub fn cluster_nodes(port: u16) -> Vec<NodeLine> {
    let Ok(stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return Vec::new();
    };
    let mut client = RawClient::from_stream(stream);
    let reply = client.call(&["CLUSTER", "NODES"]);
    let body = text(reply.as_bytes().unwrap_or(b""));
    body.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let port = fields.get(1)?.split('@').next()?.rsplit(':').next()?;
            Some(NodeLine {
                id: fields[0].to_string(),
                port: port.parse().ok()?,
                flags: fields.get(2)?.split(',').map(str::to_string).collect(),
                master: fields.get(3)?.to_string(),
                config_epoch: fields.get(6)?.parse().ok()?,
                link: fields.get(7)?.to_string(),
                slots: fields[8..].iter().map(|s| s.to_string()).collect(),
            })
        })
        .collect()
}

pub fn myid(port: u16) -> String {
    let mut c = RawClient::connect(port);
    text(c.call(&["CLUSTER", "MYID"]).as_bytes().expect("id"))
}

pub fn cluster_info(port: u16) -> String {
    match std::net::TcpStream::connect(("127.0.0.1", port)) {
        Ok(stream) => {
            let mut c = RawClient::from_stream(stream);
            text(c.call(&["CLUSTER", "INFO"]).as_bytes().unwrap_or(b""))
        }
        Err(_) => String::new(),
    }
}

/// `master` or `slave`, as ROLE says.
/// A replica of `master` with its replication link up.
pub fn replicates(port: u16, master: u16) -> bool {
    let Ok(stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let mut c = RawClient::from_stream(stream);
    let info = text(c.call(&["INFO", "replication"]).as_bytes().unwrap_or(b""));
    info.contains("role:slave")
        && info.contains(&format!("master_port:{master}\r"))
        && info.contains("master_link_status:up")
}

pub fn role(port: u16) -> String {
    let mut c = RawClient::connect(port);
    let reply = c.call(&["ROLE"]);
    reply
        .as_array()
        .and_then(|items| items.first())
        .and_then(|r| r.as_bytes())
        .map(text)
        .unwrap_or_default()
}

/// The structure of a reply: arrays and maps with their lengths, scalars by kind. Map keys
/// stay, and so do the values of `role` and `health` (the same in any healthy cluster).
pub fn shape(frame: &Frame) -> String {
    match frame {
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            let inner: Vec<String> = items.iter().map(shape).collect();
            format!("[{}]", inner.join(","))
        }
        Frame::Map(pairs) => {
            let inner: Vec<String> = pairs
                .iter()
                .map(|(k, v)| {
                    let key = k.as_bytes().map(text).unwrap_or_else(|| shape(k));
                    let value = match key.as_str() {
                        "role" | "health" => v.as_bytes().map(text).unwrap_or_else(|| shape(v)),
                        _ => shape(v),
                    };
                    format!("{key}:{value}")
                })
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Frame::Integer(_) => "int".into(),
        Frame::Bulk(_) => "bulk".into(),
        Frame::Simple(_) => "simple".into(),
        Frame::Error(e) => format!("error({})", text(e)),
        Frame::Null => "null".into(),
        other => format!("{other:?}"),
    }
}

/// What a CLUSTER NODES line says, without ids, ports and times: flags, whether it has a
/// master, link state, and whether it lists slots.
pub fn line_shape(line: &NodeLine) -> String {
    let master = if line.master == "-" { "-" } else { "<master>" };
    format!(
        "{} {master} {} slots:{}",
        line.flags.join(","),
        line.link,
        !line.slots.is_empty()
    )
}

/// Waits until every node in `ports` sees `masters` masters serving slots and
/// `replicas_each` replicas of each, every link connected and `cluster_state:ok`.
pub fn wait_replica_topology(ports: &[u16], masters: usize, replicas_each: usize) {
    wait_until(DEADLINE, "the replica topology to settle", || {
        ports.iter().all(|&port| {
            let lines = cluster_nodes(port);
            let serving: Vec<&NodeLine> = lines
                .iter()
                .filter(|l| l.has("master") && !l.slots.is_empty())
                .collect();
            let all_replicated = serving.iter().all(|m| {
                lines
                    .iter()
                    .filter(|l| l.has("slave") && l.master == m.id)
                    .count()
                    == replicas_each
            });
            serving.len() == masters
                && all_replicated
                && lines
                    .iter()
                    .all(|l| l.link == "connected" && !l.has("fail"))
                && cluster_info(port).contains("cluster_state:ok")
        })
    });
}

/// The ports of a cluster's nodes.
pub fn ports(cluster: &Cluster) -> Vec<u16> {
    cluster.nodes.iter().map(|n| n.port).collect()
}

/// Runs `redis-cli args...` and returns its output and whether it succeeded.
pub fn redis_cli(args: &[&str]) -> (bool, String) {
    let output = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("run redis-cli");
    let out = format!("{}{}", text(&output.stdout), text(&output.stderr));
    (output.status.success(), out)
}

/// `redis-cli --cluster check` finds nothing to complain about, with `masters` masters.
pub fn assert_check_ok(port: u16, masters: usize) -> String {
    let (ok, out) = redis_cli(&["--cluster", "check", &format!("127.0.0.1:{port}")]);
    assert!(ok, "{out}");
    assert!(
        out.contains("[OK] All nodes agree about slots configuration."),
        "{out}"
    );
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
    assert!(
        !out.contains("[ERR]") && !out.contains("[WARNING]"),
        "{out}"
    );
    assert!(out.contains(&format!("in {masters} masters.")), "{out}");
    out
}

/// What a writer saw: every write a node acknowledged (key → value), and every attempt.
#[derive(Debug, Default)]
pub struct Written {
    pub acknowledged: Vec<(String, String)>,
    /// Writes a replica also acknowledged (`WAIT 1` answered 1 or more).
    pub replicated: Vec<(String, String)>,
    /// Every attempt: Unix ms, the key's slot, whether the write was acknowledged.
    pub attempts: Vec<(u64, u16, bool)>,
}

impl Written {
    /// How long writes to `slots` failed after `since_ms`: from `since_ms` to the first
    /// acknowledged write to one of them after their last failure (0 if none failed).
    pub fn outage_ms(&self, slots: &[u16], since_ms: u64) -> u64 {
        let ours = |slot: &u16| slots.contains(slot);
        let last_failure = self
            .attempts
            .iter()
            .filter(|(at, slot, ok)| *at >= since_ms && !ok && ours(slot))
            .map(|(at, _, _)| *at)
            .max();
        let Some(last_failure) = last_failure else {
            return 0;
        };
        let recovered = self
            .attempts
            .iter()
            .filter(|(at, slot, ok)| *at >= last_failure && *ok && ours(slot))
            .map(|(at, _, _)| *at)
            .min()
            .unwrap_or(last_failure);
        recovered - since_ms
    }
}

pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One connection of the writer: every call is bounded by a read timeout, and any
/// failure drops the connection (a stopped or killed node must not hang the writer).
struct Link {
    stream: std::net::TcpStream,
    buffer: Vec<u8>,
}

impl Link {
    fn open(port: u16) -> Option<Link> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let stream =
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_millis(1500)))
            .ok()?;
        stream.set_nodelay(true).ok()?;
        Some(Link {
            stream,
            buffer: Vec::new(),
        })
    }

    fn call(&mut self, args: &[&[u8]]) -> Option<Frame> {
        use std::io::{Read, Write};
        self.stream.write_all(&RawClient::encode(args)).ok()?;
        loop {
            if let Some((frame, used)) = slotproxy::resp::parse_frame(&self.buffer).ok()? {
                self.buffer.drain(..used);
                return Some(frame);
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.stream.read(&mut chunk).ok()?;
            if n == 0 {
                return None;
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }
}

/// A cluster-aware writer straight to the nodes: it routes each key by the slot map it
/// read with CLUSTER SLOTS and reads the map again after any failure or redirect.
struct Router {
    ports: Vec<u16>,
    owner: Vec<u16>,
    links: std::collections::HashMap<u16, Link>,
}

impl Router {
    fn refresh(&mut self) {
        for &port in &self.ports.clone() {
            let Some(mut link) = Link::open(port) else {
                continue;
            };
            let Some(Frame::Array(ranges)) = link.call(&[b"CLUSTER", b"SLOTS"]) else {
                continue;
            };
            let mut owner = vec![0u16; slotproxy::cluster::SLOT_COUNT];
            for range in ranges {
                let items = range.as_array().unwrap_or(&[]);
                let (Some(first), Some(last)) = (
                    items.first().and_then(Frame::as_integer),
                    items.get(1).and_then(Frame::as_integer),
                ) else {
                    continue;
                };
                let port = items
                    .get(2)
                    .and_then(Frame::as_array)
                    .and_then(|m| m.get(1))
                    .and_then(Frame::as_integer)
                    .unwrap_or(0) as u16;
                let (first, last) = (first as usize, last as usize);
                if let Some(range) = owner.get_mut(first..=last) {
                    range.fill(port);
                }
            }
            if owner.iter().all(|&p| p != 0) {
                self.owner = owner;
                return;
            }
        }
    }

    fn call(&mut self, port: u16, args: &[&[u8]]) -> Option<Frame> {
        let link = match self.links.entry(port) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => entry.insert(Link::open(port)?),
        };
        let reply = link.call(args);
        if reply.is_none() {
            self.links.remove(&port);
        }
        reply
    }
}

/// Writes distinct keys (`prefix:n`), each once, to the node that serves its slot, until
/// `stop` (bounded in count and time). With `wait_ms`, every acknowledged write is
/// followed by `WAIT 1 wait_ms` on the same connection. `ports` are every node that may
/// serve (the writer asks them for the slot map).
pub fn write_load(
    ports: Vec<u16>,
    prefix: &'static str,
    wait_ms: Option<u64>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Written> {
    std::thread::spawn(move || {
        let mut router = Router {
            ports,
            owner: Vec::new(),
            links: Default::default(),
        };
        router.refresh();
        let mut written = Written::default();
        let deadline = Instant::now() + Duration::from_secs(240);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline && n < 2_000_000 {
            let key = format!("{prefix}:{n}");
            let value = format!("v{n}");
            n += 1;
            let slot = slotproxy::cluster::key_slot(key.as_bytes());
            let port = router.owner.get(slot as usize).copied().unwrap_or(0);
            let reply = router.call(port, &[b"SET", key.as_bytes(), value.as_bytes()]);
            let ok = matches!(&reply, Some(Frame::Simple(s)) if &s[..] == b"OK");
            written.attempts.push((unix_ms(), slot, ok));
            if !ok {
                // A redirect, CLUSTERDOWN, a dead or stopped node: read the map again.
                std::thread::sleep(Duration::from_millis(20));
                router.refresh();
                continue;
            }
            written.acknowledged.push((key.clone(), value.clone()));
            if let Some(ms) = wait_ms {
                let ms = ms.to_string();
                let acked = router.call(port, &[b"WAIT", b"1", ms.as_bytes()]);
                if matches!(acked, Some(Frame::Integer(r)) if r >= 1) {
                    written.replicated.push((key, value));
                }
            }
        }
        written
    })
}

/// Reads every key back from the node that serves its slot now and returns the ones
/// whose value is missing or different.
pub fn lost_writes(ports: &[u16], written: &[(String, String)]) -> Vec<String> {
    let mut router = Router {
        ports: ports.to_vec(),
        owner: Vec::new(),
        links: Default::default(),
    };
    router.refresh();
    assert!(
        !router.owner.is_empty(),
        "no node serves the whole slot map"
    );
    written
        .iter()
        .filter(|(key, value)| {
            let port = router.owner[slotproxy::cluster::key_slot(key.as_bytes()) as usize];
            let got = router.call(port, &[b"GET", key.as_bytes()]);
            !matches!(got, Some(Frame::Bulk(v)) if v == value.as_bytes())
        })
        .map(|(key, _)| key.clone())
        .collect()
}
