//! Server processes on free loopback ports.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};

use slotproxy::cluster::ports::PortPicker;
use std::time::Duration;

/// How long a server may take to say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A loopback port that is free now, and whose cluster-bus port (`port + 10000`) is free
/// too, so the same helper serves cluster tests. Chosen below the kernel's ephemeral range
/// (see [`slotproxy::cluster::ports`]), never twice in one test process.
pub fn free_port() -> u16 {
    static PICKER: OnceLock<Mutex<PortPicker>> = OnceLock::new();
    let picker = PICKER.get_or_init(|| {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Mutex::new(PortPicker::new(u64::from(std::process::id()) ^ clock))
    });
    picker
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .pick()
        .expect("a free loopback port pair below the ephemeral range")
}

/// Sends the signal `name` (`STOP`, `CONT`, `TERM` ...) to the process `pid`.
pub fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// A running server. Dropping it kills the process by its PID and reaps it.
pub struct ServerProcess {
    child: Child,
    pub port: u16,
    pub name: String,
    pub log_path: PathBuf,
}

impl ServerProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the signal `name` (`STOP`, `CONT`, `TERM` ...) to the server.
    pub fn signal(&self, name: &str) {
        signal(self.pid(), name);
    }

    /// Kills the process now (same as dropping it, but keeps the value for inspection).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits (bounded) for the process to exit on its own; true if it did.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The admin port a proxy announced (`Admin API on http://host:port`).
    pub fn admin_port(&self) -> Option<u16> {
        self.log()
            .lines()
            .find_map(|l| l.strip_prefix("Admin API on http://"))
            .and_then(|addr| addr.rsplit(':').next())
            .and_then(|port| port.trim().parse().ok())
    }

    /// The server's log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Waits until the log holds `text`, for at most `limit`; fails with the log. The
    /// server's output reaches the file through a copying thread, so a line written before
    /// an event the test has seen (a replica gone from INFO) can land a moment after it.
    pub fn wait_for_log(&self, text: &str, limit: Duration) {
        if !crate::poll::poll_until(limit, || self.log().contains(text)) {
            panic!(
                "{} never logged {text:?}; its log:\n{}",
                self.name,
                self.log()
            );
        }
    }

    /// Spawns `program args...` and waits until a line of its output (stdout or stderr; some
    /// servers, e.g. Prometheus, log on stderr) contains `ready_line`.
    pub fn spawn(
        name: &str,
        program: &PathBuf,
        args: &[String],
        port: u16,
        ready_line: &str,
    ) -> ServerProcess {
        Self::try_spawn(name, program, args, port, ready_line).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Spawns a server on a port chosen here, built into its arguments by `args`; a port
    /// taken between choosing and binding it (by a program outside this test process) is
    /// replaced by another, a few times.
    fn spawn_on_free_port(
        name: &str,
        program: &PathBuf,
        ready_line: &str,
        args: impl Fn(u16) -> Vec<String>,
    ) -> ServerProcess {
        let mut attempts = 0;
        loop {
            let port = free_port();
            match Self::try_spawn(name, program, &args(port), port, ready_line) {
                Ok(process) => return process,
                Err(e) if attempts < 4 && e.contains("Address already in use") => attempts += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// As [`Self::spawn`], with the failure (the server's log) returned.
    fn try_spawn(
        name: &str,
        program: &PathBuf,
        args: &[String],
        port: u16,
        ready_line: &str,
    ) -> Result<ServerProcess, String> {
        let log_dir = std::env::temp_dir().join("slotproxy-test-logs");
        let _ = std::fs::create_dir_all(&log_dir);
        let log_path = log_dir.join(format!("{name}-{port}.log"));
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let ready_line = ready_line.to_string();
        let log = File::create(&log_path).expect("create log file");
        let mut log_err = log.try_clone().expect("clone log file");
        let (ready_err_tx, ready_line_err) = (ready_tx.clone(), ready_line.clone());
        std::thread::spawn(move || {
            let mut signalled = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(log_err, "{line}");
                if !signalled && line.contains(&ready_line_err) {
                    signalled = true;
                    let _ = ready_err_tx.send(());
                }
            }
        });
        std::thread::spawn(move || {
            let mut log = log;
            let mut signalled = false;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = writeln!(log, "{line}");
                if !signalled && line.contains(&ready_line) {
                    signalled = true;
                    let _ = ready_tx.send(());
                }
            }
        });
        let mut process = ServerProcess {
            child,
            port,
            name: name.to_string(),
            log_path,
        };
        if ready_rx.recv_timeout(READY_TIMEOUT).is_err() {
            let log = process.log();
            process.kill();
            return Err(format!(
                "{name} on port {port} did not become ready; log:\n{log}"
            ));
        }
        Ok(process)
    }

    /// A storage-node on a free port with the given extra arguments. Without save points
    /// (as [`Self::redis_server`]), and with a `dir` of its own, emptied first: whatever
    /// a test makes it write (an RDB file, an AOF directory, nodes.conf) never lands in the
    /// source tree or in the next test's way. `extra` may set `--save` or `--dir` again.
    pub fn storage_node(extra: &[&str]) -> ServerProcess {
        Self::spawn_on_free_port(
            "storage-node",
            &storage_node_binary(),
            "Ready to accept connections",
            |port| {
                let dir = emptied_dir(std::env::temp_dir().join(format!("slotproxy-node-{port}")));
                let mut args = vec![
                    "--port".to_string(),
                    port.to_string(),
                    "--save".to_string(),
                    String::new(),
                    "--dir".to_string(),
                    dir.display().to_string(),
                ];
                args.extend(extra.iter().map(|s| s.to_string()));
                args
            },
        )
    }

    /// A real redis-server (Debian's package) on a free port, without persistence.
    pub fn redis_server(extra: &[&str]) -> ServerProcess {
        Self::spawn_on_free_port(
            "redis-server",
            &PathBuf::from("redis-server"),
            "Ready to accept connections",
            |port| {
                // Emptied first: a nodes.conf left by an earlier run on the same port would
                // bring back that run's slots and epochs.
                let dir = emptied_dir(std::env::temp_dir().join(format!("slotproxy-redis-{port}")));
                redis_server_args(port, &dir, extra)
            },
        )
    }

    /// A real redis-server on the given port and working directory.
    pub fn redis_server_on(port: u16, dir: &std::path::Path, extra: &[&str]) -> ServerProcess {
        ServerProcess::spawn(
            "redis-server",
            &PathBuf::from("redis-server"),
            &redis_server_args(port, dir, extra),
            port,
            "Ready to accept connections",
        )
    }
}

/// redis-server's arguments for a test: loopback, no persistence, in the foreground,
/// logging to stdout, in `dir`, then `extra`.
fn redis_server_args(port: u16, dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--logfile",
        "",
        "--dir",
        &dir.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `dir`, created empty (whatever an earlier run left there is removed).
pub(crate) fn emptied_dir(dir: PathBuf) -> PathBuf {
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// The storage-node binary: `$STORAGE_NODE_BIN`, or the one cargo built next to the test.
pub fn storage_node_binary() -> PathBuf {
    if let Ok(path) = std::env::var("STORAGE_NODE_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/<test> -> target/<profile>/storage-node
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in target/<profile>/deps");
    let binary = profile_dir.join("storage-node");
    assert!(
        binary.exists(),
        "{} is missing: run the tests with `cargo test --workspace`",
        binary.display()
    );
    binary
}
