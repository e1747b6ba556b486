//! Accepting clients: the acceptor on the control runtime hands each connection to one of
//! the worker threads, each with its own single-threaded runtime, where it is served by
//! [`super::session::serve`].

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::clients::ClientHandle;
use super::session::serve;
use super::stats::Stats;
use super::Proxy;

/// A client handed from the acceptor to a worker.
pub struct Accepted {
    stream: std::net::TcpStream,
    handle: Arc<ClientHandle>,
}

/// Starts worker thread `index` with its own single-threaded runtime; returns where to send
/// it clients.
pub fn spawn_worker(
    proxy: Arc<Proxy>,
    index: usize,
) -> std::io::Result<mpsc::UnboundedSender<Accepted>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Accepted>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name(format!("slotproxy-worker-{index}"))
        .spawn(move || {
            runtime.block_on(async move {
                while let Some(accepted) = rx.recv().await {
                    match TcpStream::from_std(accepted.stream) {
                        Ok(stream) => {
                            tokio::spawn(serve(proxy.clone(), stream, accepted.handle, index));
                        }
                        Err(e) => {
                            tracing::warn!("cannot adopt a client socket: {e}");
                            proxy.clients.unregister(accepted.handle.id);
                        }
                    }
                }
            })
        })?;
    Ok(tx)
}

pub async fn accept_loop(
    proxy: Arc<Proxy>,
    listener: TcpListener,
    workers: Vec<mpsc::UnboundedSender<Accepted>>,
) {
    let mut next = 0;
    loop {
        let (mut stream, addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if proxy.clients.count() >= proxy.config.load().limits.max_clients {
            Stats::inc(&proxy.stats.connections_rejected);
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        Stats::inc(&proxy.stats.connections_accepted);
        let _ = stream.set_nodelay(true);
        let local_addr = stream.local_addr().unwrap_or(addr);
        let handle = proxy
            .clients
            .register(|id| ClientHandle::new(id, addr, local_addr));
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(_) => {
                proxy.clients.unregister(handle.id);
                continue;
            }
        };
        // A panic in a session ends that task only; its guard unregisters the client.
        next = (next + 1) % workers.len().max(1);
        if let Some(worker) = workers.get(next) {
            if worker.send(Accepted { stream, handle }).is_err() {
                tracing::error!("worker {next} is gone");
            }
        }
    }
}
