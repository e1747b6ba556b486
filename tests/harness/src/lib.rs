//! The test harness every test in the workspace uses.
//!
//! # Layout
//! - [`process`]: servers as child processes on free loopback ports, ready when they say so,
//!   stopped by PID when the guard drops (also when a test panics).
//! - [`cluster`]: real Redis Clusters (and the proxy in front of them) for proxy tests.
//! - [`client`]: a raw RESP client that returns replies byte for byte.
//! - [`http`]: a minimal HTTP client for the admin API.
//! - [`differential`]: the same commands against a storage-node and a real redis-server,
//!   with the replies compared byte for byte.
//! - [`difffuzz`]: the differential command fuzzer (hostile commands from the command
//!   table, on the subject and on redis-server side by side).
//! - [`transcript`]: several clients' commands and replies as text, compared across servers.
//! - [`notifications`]: the keyspace notifications commands cause, on both servers.

pub mod client;
pub mod cluster;
pub mod differential;
pub mod difffuzz;
pub mod http;
pub mod notifications;
pub mod poll;
pub mod process;
pub mod run;
pub mod transcript;

pub use client::{blocked_clients, info_field, show, wait_blocked, RawClient};
pub use cluster::{start_proxy, Cluster};
pub use differential::Differential;
pub use poll::wait_until;
pub use process::{free_port, signal, ServerProcess};
pub use run::run_logged;
