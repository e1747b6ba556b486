//! `pidfile`: the node's pid, written at start and removed at exit, as Redis does.
//!
//! Redis writes it when `pidfile` is set, or when daemonized (then `/var/run/redis.pid` if
//! none is set). Writing it is best effort: a failure is logged and the node runs on.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::log;

/// Redis's pid file for a daemon that names none.
const DEFAULT_DAEMON_PIDFILE: &str = "/var/run/redis.pid";

/// The file written, so that exit removes exactly it.
static WRITTEN: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Writes the pid file if the settings ask for one.
pub fn create(pidfile: &str, daemonized: bool) {
    let path = match (pidfile.is_empty(), daemonized) {
        (false, _) => PathBuf::from(pidfile),
        (true, true) => PathBuf::from(DEFAULT_DAEMON_PIDFILE),
        (true, false) => return,
    };
    match std::fs::write(&path, format!("{}\n", std::process::id())) {
        Ok(()) => {
            *WRITTEN.lock().unwrap_or_else(|p| p.into_inner()) = Some(path);
        }
        Err(e) => log::warning!("Failed to write PID file {}: {e}", path.display()),
    }
}

/// Removes the pid file written at start (call on every way out).
pub fn remove() {
    let written = WRITTEN.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(path) = written {
        log::notice!("Removing the pid file.");
        let _ = std::fs::remove_file(path);
    }
}
