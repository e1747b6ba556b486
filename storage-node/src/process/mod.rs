//! The process around the server: `daemonize`, `pidfile`, `supervised`, and how it ends.
//!
//! These run in `main` before the Tokio runtime starts (daemonizing needs a process with
//! one thread) and when it ends.

pub mod daemon;
pub mod pidfile;
pub mod supervised;

/// Ends the node: removes the pid file, then exits. Every way out of a running node
/// (SHUTDOWN, SIGTERM/SIGINT, SHUTDOWN NOSAVE during a busy script) comes here.
pub fn exit(code: i32) -> ! {
    pidfile::remove();
    std::process::exit(code)
}
