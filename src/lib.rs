//! slotproxy: a stateless Redis cluster proxy, and the protocol core it shares with the
//! storage node.
//!
//! # Layout
//! - [`resp`]: RESP2/RESP3 frames, the incremental request decoder, reply parser, encoder.
//! - [`cluster`]: the slot function (CRC16 + hash tags) and the Redis 7.0 command table.
//! - [`glob`]: Redis glob patterns (KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE).
//! - [`registry`]: connected clients by id, random 40-hex ids.
//! - [`numbers`]: integers and doubles read with Redis's strictness.
//! - [`protocol`]: what both servers say the same way: error texts, HELLO/AUTH, COMMAND.
//!
//! These are the shared core, compiled with default features off for `storage-node`.
//! The proxy modules sit behind the default `proxy` feature:
//! - [`config`]: the YAML configuration.
//! - [`metrics`]: the metrics registry the request path records into (below both the proxy
//!   and the admin endpoint).
//! - [`backend`]: node connections (multiplexed and dedicated), the pool, the slot map.
//! - [`admin`]: the HTTP admin API (metrics, health, topology, resharding jobs). It uses the
//!   proxy; the proxy never uses it.
//! - [`local`]: `slotproxy --local N`, a cluster of local storage-nodes to serve in front of.
//! - [`proxy`]: listener, sessions, routing, fan-out, transactions, blocking, pub/sub.

#![forbid(unsafe_code)]

pub mod cluster;
pub mod glob;
pub mod numbers;
pub mod protocol;
pub mod registry;
pub mod resp;

#[cfg(feature = "proxy")]
pub mod admin;
#[cfg(feature = "proxy")]
pub mod backend;
#[cfg(feature = "proxy")]
pub mod config;
#[cfg(feature = "proxy")]
pub mod local;
#[cfg(feature = "proxy")]
pub mod metrics;
#[cfg(feature = "proxy")]
pub mod proxy;
