//! Binding, accepting, and the background cycles (active expiry).

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::clients::ClientHandle;
use super::stats::Stats;
use super::{connection, protection, Shared};
use crate::config::Config;
use crate::keyspace::unix_time_ms;

/// A running node: its shared state and the addresses it listens on.
pub struct Server {
    pub shared: Arc<Shared>,
    pub local_addrs: Vec<SocketAddr>,
}

/// Binds every configured address, then serves until the process ends.
pub async fn run(config: Config) -> std::io::Result<()> {
    let mut listeners = Vec::new();
    super::sockets::warn_if_capped(config.tcp_backlog);
    for address in &config.bind {
        listeners.extend(super::sockets::listen(address, config.port, config.tcp_backlog).await?);
    }
    let port = listeners
        .first()
        .map(|l| l.local_addr().map(|a| a.port()))
        .transpose()?
        .unwrap_or(config.port);
    let cluster = if config.cluster_enabled {
        let cluster = crate::cluster::Cluster::load_or_create(&config, port)
            .map_err(std::io::Error::other)?;
        Some(Arc::new(cluster))
    } else {
        None
    };
    let mut shared = Shared::new(config, port);
    shared.cluster = cluster;
    crate::acl::load_at_start(&shared.acl, &shared.config()).map_err(std::io::Error::other)?;
    let shared = Arc::new(shared);
    crate::scripting::Scripting::attach(&shared);
    crate::persistence::disk::load_at_start(&shared)?;
    shared.aof.spawn_background()?;
    crate::replication::replica::start_at_boot(&shared);
    if shared.cluster.is_some() {
        crate::cluster::bus::start(shared.clone()).await?;
    }
    tokio::spawn(active_expire_cycle(shared.clone()));
    tokio::spawn(super::signals::shut_down_on_signals(shared.clone()));
    tokio::spawn(crate::persistence::save_points::check_forever(
        shared.clone(),
    ));
    tokio::spawn(super::stats::sample_forever(shared.clone()));
    tokio::spawn(super::client_peaks::sample_forever(shared.clone()));
    // Test harnesses wait for this line instead of sleeping. It is written before the
    // accept loops start (the sockets already listen), so whoever is answered has seen it.
    crate::log::notice!("Ready to accept connections on port {port}");
    crate::process::daemon::notify_ready();
    crate::process::supervised::notify_ready(&shared.config().supervised);
    for listener in listeners {
        super::busy_poll::watch(&listener);
        tokio::spawn(accept_loop(shared.clone(), listener));
    }
    std::future::pending::<()>().await;
    Ok(())
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        let (mut stream, addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                crate::log::warning!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        Stats::add(&shared.stats.total_connections_received, 1);
        crate::log::verbose!("Accepted {addr}");
        if shared.clients.count() >= shared.config().maxclients {
            Stats::add(&shared.stats.rejected_connections, 1);
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        let default_nopass = shared.acl.default_has_nopass();
        if protection::refuses_connection(&shared.config(), default_nopass, &addr) {
            Stats::add(&shared.stats.rejected_connections, 1);
            tokio::spawn(async move {
                let _ = stream.write_all(protection::DENIED.as_bytes()).await;
            });
            continue;
        }
        let _ = stream.set_nodelay(true);
        super::sockets::keepalive(&stream, shared.config().tcp_keepalive);
        super::busy_poll::watch(&stream);
        let local = stream.local_addr().unwrap_or(addr);
        let handle = shared
            .clients
            .register(|id| ClientHandle::counted_in(id, addr, local, shared.client_memory.total()));
        handle.fd.store(stream.as_raw_fd(), Relaxed);
        tokio::spawn(connection::serve(shared.clone(), stream, handle));
    }
}

/// An eviction pass that ran out of time goes on here until memory is under the limit
/// (Redis's `evictionTimeProc`), even if no command comes to trigger it.
async fn continue_evictions(shared: &Arc<Shared>) {
    if shared.pause.is_paused() || crate::replication::replica::is_replica(shared) {
        return;
    }
    let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(shared).await;
    if !keyspace.eviction.running {
        return;
    }
    keyspace.set_now(unix_time_ms());
    let not_counted = || super::client_memory::not_counted_for_evict(shared);
    // No client runs this: nobody's reply buffer receives the notifications.
    keyspace.perform_evictions(0, not_counted, 0, &mut bytes::BytesMut::new());
    crate::propagation::publish(shared, &mut keyspace);
}

/// Redis's active expiry: `hz` times a second, sweep a share of the slot tables so expired
/// keys nobody reads are still reclaimed (a full sweep about once a second). The same
/// cron starts the automatic AOF rewrite when the log has grown enough.
async fn active_expire_cycle(shared: Arc<Shared>) {
    loop {
        let (hz, enabled) = {
            let config = shared.config();
            (config.hz.max(1), config.active_expire_enabled)
        };
        tokio::time::sleep(Duration::from_millis(1000 / u64::from(hz))).await;
        super::client_memory::check(&shared);
        continue_evictions(&shared).await;
        if crate::persistence::aof::files::wants_auto_rewrite(&shared) {
            let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
            println!("Starting automatic rewriting of AOF on growth");
            let _ = crate::persistence::aof::rewrite::begin(&shared, &mut keyspace, false);
        }
        // A replica's keys expire when its master's DEL arrives; paused clients' keys wait.
        if !enabled || crate::replication::replica::is_replica(&shared) || shared.pause.is_paused()
        {
            continue;
        }
        let budget = slotproxy::cluster::SLOT_COUNT / hz as usize + 1;
        let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(&shared).await;
        keyspace.set_now(unix_time_ms());
        keyspace.active_expire_step(budget);
        crate::propagation::publish(&shared, &mut keyspace);
    }
}
