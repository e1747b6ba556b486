//! `GET /metrics` in the Prometheus text format (`text/plain; version=0.0.4`): the registry
//! ([`crate::metrics`]) plus the families gathered at scrape time ([`collect`]) and the
//! background poll of the cluster ([`poll`]).

pub mod collect;
pub mod family;
pub mod poll;
pub mod replication;

use prometheus::TextEncoder;

use crate::proxy::Proxy;

/// The content type of `/metrics`.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// The text exposition of everything.
pub fn render(proxy: &Proxy) -> String {
    let mut families = proxy.metrics.registry().gather();
    families.extend(collect::families(proxy));
    families.sort_by(|a, b| a.name().cmp(b.name()));
    let mut out = String::with_capacity(64 * 1024);
    if let Err(e) = TextEncoder::new().encode_utf8(&families, &mut out) {
        tracing::warn!("metrics encoding failed: {e}");
    }
    out
}
