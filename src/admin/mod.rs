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
pub mod shards;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::proxy::Proxy;

/// What the admin endpoint serves: the proxy it describes, and the jobs it started (state of
/// the admin side only; the proxy never sees it).
pub struct Admin {
    pub proxy: Arc<Proxy>,
    pub jobs: jobs::Jobs,
}

/// Binds the admin endpoint and serves it on the current runtime, and starts the background
/// poll of the nodes behind `/metrics`. Returns the bound address.
pub async fn start(proxy: Arc<Proxy>, listen: &str) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(metrics::poll::run(proxy.clone()));
    let admin = Arc::new(Admin {
        proxy,
        jobs: jobs::Jobs::default(),
    });
    tokio::spawn(http::serve(listener, admin));
    Ok(addr)
}
