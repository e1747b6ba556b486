//! SIGTERM and SIGINT end the node cleanly (the pid file is removed), as in Redis.

use crate::log;

/// Waits for SIGTERM or SIGINT and returns the signal's name. If the handlers cannot be
/// installed, never returns (the default action, ending the process, then applies).
pub async fn shutdown_requested() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        log::warning!("cannot watch SIGTERM/SIGINT; they end the node without cleanup");
        return std::future::pending().await;
    };
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    log::notice!("Received {name} scheduling shutdown...");
    name
}
