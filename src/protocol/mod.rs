//! The protocol identity both servers present: Redis 7.0's error texts, `HELLO`/`AUTH`
//! parsing and replies, and the `COMMAND` command, written once.
//!
//! The storage node and the proxy answer these from this module alone, so a client sees the
//! same words whichever of the two it talks to, and both match redis-server 7.0 (the tests
//! compare them byte for byte). Part of the shared core: no proxy dependencies.

pub mod command;
pub mod errors;
pub mod hello;

pub use errors::{error_reply, lookup, unknown_command, unknown_subcommand, wrong_arity};
pub use hello::{HelloReply, HelloRequest, REDIS_VERSION};
