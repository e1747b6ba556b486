//! The link task: one per REPLICAOF, connecting again a second after every failure
//! (Redis's `replicationCron`) until a newer REPLICAOF ends its generation.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::handshake::{self, Conn, Hello, Psync, TryLater};
use super::{apply, transfer, Link, State};
use crate::server::Shared;

/// Pause between two connection attempts.
const RETRY: Duration = Duration::from_secs(1);

pub async fn run(shared: Arc<Shared>, generation: u64, host: String, port: u16) {
    let link = &shared.replication.link;
    while link.current(generation) {
        let result = tokio::select! {
            result = session(&shared, generation, &host, port) => result,
            () = ended(link, generation) => return,
        };
        if !link.current(generation) {
            return;
        }
        link.set_state(State::Connect);
        match result {
            Ok(()) => crate::log::notice!("Connection with master lost."),
            Err(e) if e.get_ref().is_some_and(|inner| inner.is::<TryLater>()) => {
                crate::log::notice!("{e}")
            }
            Err(e) => crate::log::warning!("Replication with MASTER {host}:{port}: {e}"),
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = ended(link, generation) => return,
        }
    }
}

/// Resolves when `generation` is no longer the link's.
pub(super) async fn ended(link: &Link, generation: u64) {
    loop {
        let notified = link.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !link.current(generation) {
            return;
        }
        notified.await;
    }
}

/// One connection: handshake, a full sync or a continuation, then the stream until the
/// link drops (an error) or the master closes it.
async fn session(shared: &Arc<Shared>, generation: u64, host: &str, port: u16) -> io::Result<()> {
    let link = &shared.replication.link;
    let hello = {
        let config = shared.config();
        let settings = &config.replica;
        Hello {
            masteruser: settings.masteruser.clone(),
            masterauth: settings.masterauth.clone(),
            listening_port: if settings.announce_port != 0 {
                settings.announce_port
            } else {
                shared.tcp_port
            },
            announce_ip: settings.announce_ip.clone(),
            history: None,
            failover: false,
        }
    };
    // `repl-timeout` (one setting for both sides, in `config::repl`): a master silent
    // this long is disconnected, and a transfer that stalls this long is dropped.
    let timeout = Duration::from_secs(shared.config().repl.timeout.max(1));
    link.set_state(State::Connecting);
    let mut conn = Conn::connect(host, port, timeout).await.map_err(|e| {
        io::Error::new(e.kind(), format!("Error condition on socket for SYNC: {e}"))
    })?;
    crate::log::notice!("MASTER <-> REPLICA sync started");
    link.set_state(State::Handshake);
    link.touch();
    let history = link.status().has_history.then(|| {
        let state = shared.replication.state();
        (state.replid.clone(), state.end())
    });
    let failover = shared.replication.failover.in_progress();
    let hello = Hello {
        history,
        failover,
        ..hello
    };
    let psync = handshake::run(&mut conn, &hello).await;
    if failover {
        match &psync {
            Ok(_) => crate::replication::failover::finish(shared),
            Err(_) => {
                let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(shared).await;
                crate::replication::failover::abort(
                    shared,
                    &mut keyspace,
                    "Failover target rejected psync request",
                );
            }
        }
    }
    match psync? {
        Psync::Full { replid, offset } => {
            crate::log::notice!("Full resync from master: {replid}:{offset}");
            transfer::receive_and_load(shared, &mut conn, generation, replid, offset).await?;
            link.status().has_history = true;
        }
        Psync::Continue { new_replid } => {
            let keyspace = crate::scripting::busy::lock_keyspace_patiently(shared).await;
            if !link.current(generation) {
                return Ok(());
            }
            let mut state = shared.replication.state();
            if let Some(new_replid) = new_replid.filter(|id| *id != state.replid) {
                // The master was promoted: our history goes on under its new id, the old
                // one kept as the second, so our own replicas can continue too.
                state.replid2 = std::mem::replace(&mut state.replid, new_replid);
                state.second_offset = state.end() as i64 + 1;
                crate::log::notice!("Master replication ID changed to {}", state.replid);
            }
            crate::log::notice!(
                "MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization."
            );
            drop(state);
            drop(keyspace);
        }
    }
    apply::run(shared, conn, generation).await
}
