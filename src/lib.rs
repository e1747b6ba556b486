//! slotproxy: a stateless Redis cluster proxy, and the protocol core it shares with the
//! storage node.
//!
//! # Layout
//! - [`resp`]: RESP2/RESP3 frames, the incremental request decoder, reply parser, encoder.
//! - [`cluster`]: the slot function (CRC16 + hash tags) and the Redis 7.0 command table.
//! - [`glob`]: Redis glob patterns (KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE).
//! - [`numbers`]: integers and doubles read with Redis's strictness.
//!
//! These three are the shared core, compiled with default features off for `storage-node`.
//! The proxy modules sit behind the default `proxy` feature.

#![forbid(unsafe_code)]

pub mod cluster;
pub mod glob;
pub mod numbers;
pub mod resp;
