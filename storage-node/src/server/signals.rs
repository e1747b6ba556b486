//! SIGTERM and SIGINT: the node shuts down as after a plain SHUTDOWN (stopping a running
//! BGSAVE, saving first when save points are set), as Redis 7.0 does with its default
//! `shutdown-on-sigterm` / `shutdown-on-sigint`. If that save fails the node logs it and
//! keeps running, as Redis does.

use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};

use super::Shared;

/// Runs for the life of the node.
pub async fn shut_down_on_signals(shared: Arc<Shared>) {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        crate::log::warning!("cannot watch SIGTERM/SIGINT: they will stop the node without a save");
        return;
    };
    loop {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        crate::log::notice!("Received {name} scheduling shutdown...");
        let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
        if crate::cmd::shutdown::prepare(&shared, &mut keyspace, false, false, false) {
            crate::log::notice!("Redis is now ready to exit, bye bye...");
            crate::process::exit(0);
        }
        crate::log::warning!(
            "{name} received but errors trying to shut down the server, check the logs for \
             more information"
        );
    }
}
