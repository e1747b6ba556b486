//! The admin HTTP endpoint: Prometheus metrics, health, the topology as JSON, and resharding
//! jobs.
//!
//! It listens on its own address (default `127.0.0.1:9121`, loopback unless configured
//! otherwise). Reads are open; calls that change anything (POST, DELETE) need
//! `Authorization: Bearer <admin.token>` and answer 401 without it, or when no token is
//! configured. Every answer is JSON except `/metrics`; errors are `{"error": "..."}` with a
//! 4xx status for the caller's mistakes and 5xx for the proxy's.

pub mod http;
pub mod jobs;
pub mod metrics;
pub mod routes;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::proxy::Proxy;

/// Binds the admin endpoint and serves it on the current runtime. Returns the bound address.
pub async fn start(proxy: Arc<Proxy>, listen: &str) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(http::serve(listener, proxy));
    Ok(addr)
}
