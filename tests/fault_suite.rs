//! The fault suite (issue 20): the proxy and the storage-node under failures and hostile
//! input, each scenario printing one JSON row
//! `{"scenario", "acked", "lost", "duplicated", "errors", "max_unavailable_s", "p99_ms",
//! "peak_rss_mb", "crashes"}` and asserting its target (see each scenario's module doc).
//!
//! Two profiles: the short one runs under `cargo test` (small counts, seconds per
//! scenario); `FAULT_PROFILE=full cargo test --release --test fault_suite -- --nocapture
//! --test-threads 1` runs the full counts.

mod fault_suite {
    pub mod admin;
    pub mod common;
    pub mod connections;
    pub mod hostile_backend;
    pub mod idle;
    pub mod malformed;
    pub mod no_resend;
    pub mod node_loss;
    pub mod slow_readers;
}

use fault_suite::*;

#[test]
fn node_sigkill_mid_pipeline() {
    node_loss::node_killed_mid_pipeline();
}

#[test]
fn node_sigstop() {
    node_loss::node_stopped();
}

#[test]
fn non_idempotent_timeout() {
    no_resend::no_resend_after_timeout();
}

#[test]
fn slow_readers() {
    slow_readers::slow_readers();
}

#[test]
fn big_bulk_announce_proxy() {
    connections::big_bulks_proxy();
}

#[test]
fn big_bulk_announce_node() {
    connections::big_bulks_node();
}

#[test]
fn pre_auth_limits_of_redis_server() {
    connections::pre_auth_texts_of_redis();
}

#[test]
fn idle_connections() {
    idle::idle_connections();
}

#[test]
fn malformed_protocol() {
    malformed::malformed_protocol();
}

#[test]
fn hostile_backend() {
    hostile_backend::hostile_backend();
}

#[test]
fn admin_api() {
    admin::admin_api();
}
