//! `daemonize yes`: the node goes to the background and the command that started it
//! returns once the node serves (or has failed to start).
//!
//! Redis forks twice. A Rust program cannot fork safely once it has threads, and our code
//! may not use `unsafe` to call `fork` at all, so the node re-executes itself instead:
//!
//! 1. The process started by the user (the *launcher*) reads the configuration (so a bad
//!    setting is still reported on the terminal), then starts the same binary with the same
//!    arguments and `STORAGE_NODE_DAEMON_CHILD=1` in its environment, standard input and
//!    error on /dev/null and standard output on a pipe.
//! 2. The child makes itself a session leader (`setsid`, through rustix's safe wrapper),
//!    so it has no controlling terminal and a closed terminal's SIGHUP does not reach it.
//!    This happens before the Tokio runtime starts any thread.
//! 3. When the child listens, it writes `ready` on the pipe and points its standard output
//!    at /dev/null; if it fails to start, it writes `error: <why>` instead.
//! 4. The launcher exits 0 on `ready`; on an error or on the child's exit it prints why and
//!    exits non-zero, so init scripts see a start that failed.
//!
//! The daemon's pid is the child's, and the child writes the `pidfile`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set in the environment of the re-executed child.
const CHILD_MARK: &str = "STORAGE_NODE_DAEMON_CHILD";
const READY: &str = "ready";
const ERROR_PREFIX: &str = "error: ";

static IS_DAEMON_CHILD: AtomicBool = AtomicBool::new(false);

/// Whether this process is the daemonized node.
pub fn is_daemon() -> bool {
    IS_DAEMON_CHILD.load(Ordering::Relaxed)
}

/// With `daemonize yes`, either becomes the daemon (in the re-executed child) and returns,
/// or launches it and exits with the outcome of its start (in the launcher). Call before any
/// thread is started.
pub fn daemonize_if_asked(daemonize: bool) {
    if !daemonize {
        return;
    }
    if std::env::var_os(CHILD_MARK).is_some() {
        // Fails only for a process-group leader, which a child `launch` started is not.
        let _ = rustix::process::setsid();
        IS_DAEMON_CHILD.store(true, Ordering::Relaxed);
        return;
    }
    std::process::exit(launch());
}

/// Starts the daemon and waits for its word; returns the launcher's exit code.
fn launch() -> i32 {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("storage-node: cannot daemonize (own executable unknown): {e}");
            return 1;
        }
    };
    // A configuration read from stdin (`-`) is passed on the same way; then the child's
    // stdin is that text, else /dev/null.
    let stdin_text = crate::config::stdin_config();
    let spawned = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_MARK, "1")
        .stdin(if stdin_text.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("storage-node: cannot daemonize: {e}");
            return 1;
        }
    };
    if let (Some(text), Some(mut stdin)) = (stdin_text, child.stdin.take()) {
        // Dropping `stdin` closes the pipe: the child reads to its end.
        let _ = stdin.write_all(text.as_bytes());
    }
    let Some(word) = child.stdout.take() else {
        return 1;
    };
    // Bounded by the child: it writes one line, or exits and so closes the pipe.
    let mut explained = false;
    for line in BufReader::new(word).lines().map_while(Result::ok) {
        if line == READY {
            return 0;
        }
        if let Some(why) = line.strip_prefix(ERROR_PREFIX) {
            eprintln!("storage-node: {why}");
            explained = true;
        }
    }
    match child.wait() {
        Ok(status) => {
            if !explained {
                eprintln!(
                    "storage-node: the daemonized node exited before it was ready ({status})"
                );
            }
            status.code().filter(|&c| c != 0).unwrap_or(1)
        }
        Err(e) => {
            eprintln!("storage-node: cannot wait for the daemonized node: {e}");
            1
        }
    }
}

/// Tells the launcher that the node serves, then detaches standard output from the pipe
/// (the launcher is gone after this; a stray write must not fail).
pub fn notify_ready() {
    if !is_daemon() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{READY}");
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
}

/// Tells the launcher why the node could not start.
pub fn notify_failed(why: &str) {
    if !is_daemon() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{ERROR_PREFIX}{}", why.replace('\n', " "));
    let _ = out.flush();
}
