//! The process around the server: `daemonize`, `pidfile`, `supervised`, and the signals
//! that end it.
//!
//! These run in `main` before the Tokio runtime starts (daemonizing needs a process with
//! one thread) and when it ends.

pub mod daemon;
pub mod pidfile;
pub mod signals;
pub mod supervised;
