//! Keeps the local cluster's storage-nodes running: a node that exits is reaped, reported
//! on the console and in the admin API (`/health`, `/ready`), and started again on the same
//! port and in the same directory. Its nodes file there (`nodes.conf`) brings back its id,
//! slots and epochs, and its append-only file its data.
//!
//! A node that keeps failing is restarted after a delay that doubles with every quick
//! failure ([`FIRST_DELAY`] up to [`MAX_DELAY`]); one that stayed up for [`STABLE_AFTER`]
//! starts again from the first delay.

use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How often the supervisor looks at its children.
const TICK: Duration = Duration::from_millis(100);
/// The wait before the first restart after a node exits.
pub const FIRST_DELAY: Duration = Duration::from_millis(200);
/// The longest wait between two restarts.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// A node that ran this long before exiting is restarted after [`FIRST_DELAY`] again.
pub const STABLE_AFTER: Duration = Duration::from_secs(30);

/// One node as the admin API shows it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeHealth {
    pub port: u16,
    /// The running process, if any.
    pub pid: Option<u32>,
    pub running: bool,
    /// Successful restarts since the proxy started.
    pub restarts: u32,
    /// How the last process ended, or why the last restart failed.
    pub last_exit: Option<String>,
}

/// The local nodes' state, for the admin API. The local cluster is one per process and
/// starts before the proxy, so it is published here rather than threaded through the proxy.
static HEALTH: OnceLock<Arc<Mutex<Vec<NodeHealth>>>> = OnceLock::new();

/// The local nodes' state, when this process runs `--local`.
pub fn local_nodes() -> Option<Vec<NodeHealth>> {
    let health = HEALTH.get()?;
    Some(crate::registry::lock(health).clone())
}

/// A node the supervisor owns.
struct Supervised {
    port: u16,
    child: Option<Child>,
    started: Instant,
    /// Quick failures in a row (exits before [`STABLE_AFTER`], failed restarts).
    failures: u32,
    restart_at: Option<Instant>,
}

/// The supervising thread; [`stop`](Self::stop) ends it and the nodes.
pub struct Supervisor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Supervisor {
    /// Takes over the running nodes (port and process each).
    pub fn start(binary: PathBuf, dir: PathBuf, nodes: Vec<(u16, Child)>) -> Supervisor {
        let health: Vec<NodeHealth> = nodes
            .iter()
            .map(|(port, child)| NodeHealth {
                port: *port,
                pid: Some(child.id()),
                running: true,
                restarts: 0,
                last_exit: None,
            })
            .collect();
        let shared = HEALTH.get_or_init(|| Arc::new(Mutex::new(Vec::new())));
        *crate::registry::lock(shared) = health;
        let supervised = nodes
            .into_iter()
            .map(|(port, child)| Supervised {
                port,
                child: Some(child),
                started: Instant::now(),
                failures: 0,
                restart_at: None,
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("local-supervisor".into())
                .spawn(move || run(binary, dir, supervised, &shared, &stop))
                .ok()
        };
        if thread.is_none() {
            tracing::error!("could not start the local cluster's supervisor thread");
        }
        Supervisor { stop, thread }
    }

    /// Stops supervising, then kills and reaps every node.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The wait before restart number `failures` (1 for the first) of a node failing quickly.
pub fn restart_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_DELAY.saturating_mul(1 << doublings).min(MAX_DELAY)
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended".to_string(),
    }
}

fn run(
    binary: PathBuf,
    dir: PathBuf,
    mut nodes: Vec<Supervised>,
    health: &Mutex<Vec<NodeHealth>>,
    stop: &AtomicBool,
) {
    let update = |port: u16, change: &dyn Fn(&mut NodeHealth)| {
        if let Some(node) = crate::registry::lock(health)
            .iter_mut()
            .find(|n| n.port == port)
        {
            change(node);
        }
    };
    while !stop.load(Ordering::Relaxed) {
        for node in &mut nodes {
            let port = node.port;
            if let Some(child) = node.child.as_mut() {
                let status = match child.try_wait() {
                    Ok(Some(status)) => status,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!("cannot check the storage-node on port {port}: {e}");
                        continue;
                    }
                };
                let pid = child.id();
                node.child = None;
                node.failures = if node.started.elapsed() >= STABLE_AFTER {
                    1
                } else {
                    node.failures + 1
                };
                let delay = restart_delay(node.failures);
                node.restart_at = Some(Instant::now() + delay);
                let how = describe(status);
                tracing::warn!(
                    "storage-node on port {port} (pid {pid}) {how}; restarting in {} ms",
                    delay.as_millis()
                );
                update(port, &|n| {
                    n.running = false;
                    n.pid = None;
                    n.last_exit = Some(how.clone());
                });
            } else if node.restart_at.is_some_and(|at| Instant::now() >= at) {
                match super::start_node(&binary, &dir, port) {
                    Ok(child) => {
                        let pid = child.id();
                        tracing::info!("storage-node on port {port} restarted (pid {pid})");
                        node.child = Some(child);
                        node.started = Instant::now();
                        node.restart_at = None;
                        update(port, &|n| {
                            n.running = true;
                            n.pid = Some(pid);
                            n.restarts += 1;
                        });
                    }
                    Err(e) => {
                        node.failures += 1;
                        let delay = restart_delay(node.failures);
                        node.restart_at = Some(Instant::now() + delay);
                        tracing::warn!(
                            "storage-node on port {port} did not restart: {e}; next attempt in {} ms",
                            delay.as_millis()
                        );
                        let why = format!("restart failed: {e}");
                        update(port, &|n| n.last_exit = Some(why.clone()));
                    }
                }
            }
        }
        std::thread::sleep(TICK);
    }
    for node in &mut nodes {
        if let Some(mut child) = node.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_delay_doubles_up_to_the_cap() {
        assert_eq!(restart_delay(1), FIRST_DELAY);
        assert_eq!(restart_delay(2), FIRST_DELAY * 2);
        assert_eq!(restart_delay(3), FIRST_DELAY * 4);
        assert_eq!(restart_delay(40), MAX_DELAY);
        assert_eq!(restart_delay(u32::MAX), MAX_DELAY);
    }
}
