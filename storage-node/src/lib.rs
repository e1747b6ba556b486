//! storage-node: a Redis-compatible server for slotproxy clusters.
//!
//! # Layout
//! - [`config`]: settings from flags, redis.conf files and CONFIG SET.
//! - [`server`]: listener, connections, the client registry, counters.
//! - [`keyspace`]: databases sharded by hash slot, expiry.
//! - [`types`]: the values held in the keyspace, one module per data type.
//! - [`persistence`]: Redis's serialisation formats (RDB encoding, DUMP payloads, LZF, CRC-64).
//! - [`propagation`]: the stream of writes the AOF logs (and replicas will receive).
//! - [`cmd`]: dispatch and one module per command family.
//! - [`scripting`]: Lua scripts and functions (mlua, Lua 5.1).
//! - [`cluster`]: cluster mode: slots, the bus, redirects, MIGRATE.
//! - [`log`]: the log (`loglevel`, `logfile`) in Redis's format.
//! - [`process`]: the process around the server: `daemonize`, `pidfile`, the way out.
//!
//! The RESP codec, slot function and command table come from the `slotproxy` library,
//! built without its proxy feature.

#![forbid(unsafe_code)]

pub mod acl;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod keyspace;
pub mod log;
pub mod persistence;
pub mod process;
pub mod propagation;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod types;

/// The global allocator the running binary linked, as INFO `mem_allocator` names it; set
/// once by the binary at startup. Code that links this library without naming its
/// allocator (tests, embedders) reports `libc`, Rust's default system allocator.
static MEM_ALLOCATOR: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Records the binary's global allocator (call once, before serving).
pub fn set_mem_allocator(name: &'static str) {
    let _ = MEM_ALLOCATOR.set(name);
}

pub fn mem_allocator() -> &'static str {
    MEM_ALLOCATOR.get().copied().unwrap_or("libc")
}
