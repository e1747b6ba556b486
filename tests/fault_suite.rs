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

/// The scenarios run one at a time: each injects faults (SIGSTOP, floods, thousands of
/// connections) and measures timeouts and memory, which a scenario running beside it would
/// disturb (a stopped node's timeouts were once not seen with the others in parallel).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn node_sigkill_mid_pipeline() {
    let _serial = serial();
    node_loss::node_killed_mid_pipeline();
}

#[test]
fn node_sigstop() {
    let _serial = serial();
    node_loss::node_stopped();
}

#[test]
fn non_idempotent_timeout() {
    let _serial = serial();
    no_resend::no_resend_after_timeout();
}

#[test]
fn slow_readers() {
    let _serial = serial();
    slow_readers::slow_readers();
}

#[test]
fn big_bulk_announce_proxy() {
    let _serial = serial();
    connections::big_bulks_proxy();
}

#[test]
fn big_bulk_announce_node() {
    let _serial = serial();
    connections::big_bulks_node();
}

#[test]
fn pre_auth_limits_of_redis_server() {
    let _serial = serial();
    connections::pre_auth_texts_of_redis();
}

#[test]
fn idle_connections() {
    let _serial = serial();
    idle::idle_connections();
}

#[test]
fn malformed_protocol() {
    let _serial = serial();
    malformed::malformed_protocol();
}

#[test]
fn hostile_backend() {
    let _serial = serial();
    hostile_backend::hostile_backend();
}

#[test]
fn admin_api() {
    let _serial = serial();
    admin::admin_api();
}
