//! What every scenario shares: the profile, the JSON row, RSS readings, a configured proxy.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

pub use test_harness::signal;
use test_harness::ServerProcess;

/// `FAULT_PROFILE=full` runs the full counts; anything else the short CI profile.
pub fn full_profile() -> bool {
    std::env::var("FAULT_PROFILE").is_ok_and(|p| p == "full")
}

/// `short` in the CI profile, `full` in the full one.
pub fn scaled(short: usize, full: usize) -> usize {
    if full_profile() {
        full
    } else {
        short
    }
}

/// One scenario's outcome, printed as one JSON line.
#[derive(Debug, Default, Clone)]
pub struct Row {
    pub scenario: String,
    pub acked: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub errors: u64,
    pub max_unavailable_s: f64,
    pub p99_ms: f64,
    pub peak_rss_mb: f64,
    pub crashes: u64,
}

impl Row {
    pub fn new(scenario: &str) -> Row {
        Row {
            scenario: scenario.to_string(),
            ..Row::default()
        }
    }

    /// Prints the row (run with `--nocapture` to see it).
    pub fn print(&self) {
        println!(
            "{{\"scenario\":\"{}\",\"acked\":{},\"lost\":{},\"duplicated\":{},\"errors\":{},\"max_unavailable_s\":{:.3},\"p99_ms\":{:.3},\"peak_rss_mb\":{:.2},\"crashes\":{}}}",
            self.scenario,
            self.acked,
            self.lost,
            self.duplicated,
            self.errors,
            self.max_unavailable_s,
            self.p99_ms,
            self.peak_rss_mb,
            self.crashes
        );
    }
}

/// A process's memory from /proc/PID/status, in kB: (VmRSS, VmHWM).
pub fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub fn rss_kb(pid: u32) -> u64 {
    memory_kb(pid).0
}

/// The peak RSS (VmHWM) in MB.
pub fn peak_rss_mb(pid: u32) -> f64 {
    memory_kb(pid).1 as f64 / 1024.0
}

/// The 99th percentile of `samples`, in milliseconds (0 for none).
pub fn p99_ms(samples: &mut [Duration]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_unstable();
    let index = (samples.len() * 99).div_ceil(100).saturating_sub(1);
    samples[index].as_secs_f64() * 1000.0
}

/// 1 if the process has exited (crashed: nothing in the suite stops a proxy on purpose).
pub fn crashed(process: &mut ServerProcess) -> u64 {
    u64::from(process.wait_exit(Duration::from_millis(1)))
}

/// A proxy started from a YAML configuration: `listen`, `seeds` and the admin endpoint on
/// free ports are filled in; `extra` adds sections (`timeouts:`, `limits:`, `users:` ...).
pub fn proxy_with_config(seeds: &[String], extra: &str) -> ServerProcess {
    test_harness::cluster::start_proxy_with_config(seeds, "  token: fault-token\n", extra).0
}

/// What a server does with raw bytes: everything it answers until it closes the connection
/// or `quiet` passes without a byte, and whether it closed.
pub fn answer_to(port: u16, bytes: &[u8], quiet: Duration) -> (Vec<u8>, bool) {
    use std::io::Write;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(quiet)).expect("timeout");
    // A server may close before reading everything: a failed write is part of the answer.
    let _ = stream.write_all(bytes);
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        match stream.read(&mut chunk) {
            Ok(0) => return (answer, true),
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (answer, true),
            Err(_) => return (answer, false),
        }
    }
    (answer, false)
}

/// Which node (by index into `cluster.nodes`) serves each slot, read once.
pub struct SlotOwners(Vec<usize>);

impl SlotOwners {
    pub fn read(cluster: &test_harness::Cluster) -> SlotOwners {
        let mut client = test_harness::RawClient::connect(cluster.nodes[0].port);
        let reply = client.call(&["CLUSTER", "SLOTS"]);
        let mut owners = vec![usize::MAX; slotproxy::cluster::SLOT_COUNT];
        for range in reply.as_array().unwrap_or(&[]) {
            let items = range.as_array().expect("slot range");
            let start = items[0].as_integer().expect("start") as usize;
            let end = items[1].as_integer().expect("end") as usize;
            let port = items[2].as_array().and_then(|m| m[1].as_integer());
            let node = cluster
                .nodes
                .iter()
                .position(|n| Some(n.port as i64) == port)
                .expect("a known node");
            owners[start..=end].fill(node);
        }
        SlotOwners(owners)
    }

    pub fn node_of(&self, key: &str) -> usize {
        self.0[usize::from(slotproxy::cluster::key_slot(key.as_bytes()))]
    }

    /// The first key `prefix<n>` served by node `index` (or, with `other`, by another node).
    pub fn key_on(&self, index: usize, other: bool, prefix: &str) -> String {
        (0..100_000)
            .map(|i| format!("{prefix}{i}"))
            .find(|k| (self.node_of(k) == index) != other)
            .expect("a key for the node")
    }
}

/// Reads replies off a socket another thread writes requests to (a client pipeline).
pub struct ReplyReader {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Where the next reply starts in `buffer` (consumed bytes are dropped in bulk, not
    /// moved once per reply).
    start: usize,
}

impl ReplyReader {
    pub fn new(stream: TcpStream) -> ReplyReader {
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        ReplyReader {
            stream,
            buffer: Vec::new(),
            start: 0,
        }
    }

    /// The next reply, or None once the server closed the connection.
    pub fn next(&mut self) -> Option<slotproxy::resp::Frame> {
        loop {
            if let Some((frame, used)) =
                slotproxy::resp::parse_frame(&self.buffer[self.start..]).expect("valid RESP")
            {
                self.start += used;
                return Some(frame);
            }
            self.buffer.drain(..self.start);
            self.start = 0;
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// `args` as one RESP request.
pub fn request(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    test_harness::RawClient::encode(&args)
}

/// Whether an error reply's text contains `needle`.
pub fn error_contains(frame: &slotproxy::resp::Frame, needle: &str) -> bool {
    match frame {
        slotproxy::resp::Frame::Error(e) => String::from_utf8_lossy(e).contains(needle),
        _ => false,
    }
}

/// Polls `condition` until it holds or `limit` passes; whether it held.
pub fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    condition()
}
