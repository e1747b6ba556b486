//! Outbound links: one task per known node connects to its bus port, sends MEET (once,
//! for CLUSTER MEET) or PINGs, reads the PONGs, and carries broadcasts and UPDATEs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::codec::{self, Body, Decoded};
use super::gossip::{self, Link, Origin};
use super::{apply, cluster, commit};
use crate::cluster::node::{Flags, NodeId};
use crate::cluster::Cluster;
use crate::keyspace::unix_time_ms;
use crate::server::clients::lock;
use crate::server::Shared;

const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Claims the link to `id`; `None` if a task already runs it.
pub fn register(cluster: &Cluster, id: NodeId) -> Option<mpsc::UnboundedReceiver<Vec<u8>>> {
    let mut links = lock(&cluster.links);
    if links.contains_key(&id) {
        return None;
    }
    let (outbox, receiver) = mpsc::unbounded_channel();
    links.insert(id, outbox);
    Some(receiver)
}

/// How often a link pings: often enough that a silent node is noticed within the timeout.
fn ping_interval(node_timeout: u64) -> Duration {
    Duration::from_millis((node_timeout / 2).clamp(50, 1000))
}

/// Where to connect for `id`, or `None` once the node is gone. Counts the attempt as a
/// ping, so a node that cannot be reached is flagged `fail?` after the timeout.
fn target(cluster: &Cluster, id: &NodeId) -> Option<SocketAddr> {
    let mut state = cluster.lock();
    let node = state.nodes.get_mut(id)?;
    if node.flags.has(Flags::NOADDR) {
        return None;
    }
    if node.ping_sent_ms == 0 {
        node.ping_sent_ms = unix_time_ms();
    }
    let ip = node.ip.parse().ok()?;
    Some(SocketAddr::new(ip, node.cport))
}

/// Runs the link to `id` until the node is forgotten.
pub async fn run(
    shared: Arc<Shared>,
    mut id: NodeId,
    mut outbox: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let cluster = cluster(&shared);
    let mut broadcast = cluster.broadcast.subscribe();
    let mut backoff = Duration::from_millis(100);
    while let Some(addr) = target(cluster, &id) {
        let node_timeout = shared.config().cluster_node_timeout.max(100);
        let connect = tokio::time::timeout(
            Duration::from_millis(node_timeout),
            TcpStream::connect(addr),
        );
        let stream = match connect.await {
            Ok(Ok(stream)) => stream,
            _ => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        let _ = stream.set_nodelay(true);
        let ended = session(&shared, &mut id, stream, &mut outbox, &mut broadcast).await;
        if let Some(node) = cluster.lock().nodes.get_mut(&id) {
            node.link_since_ms = None;
        }
        if ended == Ended::Stop {
            break;
        }
    }
    let mut links = lock(&cluster.links);
    links.remove(&id);
}

#[derive(PartialEq, Eq)]
enum Ended {
    /// Reconnect (the connection broke or the peer went quiet).
    Reconnect,
    /// The node is gone, or another link serves it.
    Stop,
}

/// Builds the next PING (or the one MEET) for `id` and notes the ping time.
fn next_ping(cluster: &Cluster, id: &NodeId) -> Option<Vec<u8>> {
    let mut state = cluster.lock();
    let now = unix_time_ms();
    let node = state.nodes.get_mut(id)?;
    let meet = node.flags.has(Flags::MEET);
    node.flags.set(Flags::MEET, false);
    if node.ping_sent_ms == 0 {
        node.ping_sent_ms = now;
    }
    let message = gossip::ping(&state, if meet { Body::Meet } else { Body::Ping });
    state.stats.sent[message.type_code() as usize] += 1;
    Some(codec::encode(&message))
}

async fn session(
    shared: &Shared,
    id: &mut NodeId,
    mut stream: TcpStream,
    outbox: &mut mpsc::UnboundedReceiver<Vec<u8>>,
    broadcast: &mut watch::Receiver<u64>,
) -> Ended {
    let cluster = cluster(shared);
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else {
        return Ended::Reconnect;
    };
    match cluster.lock().nodes.get_mut(id) {
        Some(node) => node.link_since_ms = Some(unix_time_ms()),
        None => return Ended::Stop,
    }
    let Some(first) = next_ping(cluster, id) else {
        return Ended::Stop;
    };
    if stream.write_all(&first).await.is_err() {
        return Ended::Reconnect;
    }
    broadcast.borrow_and_update();
    let node_timeout = shared.config().cluster_node_timeout.max(100);
    let mut ticker = tokio::time::interval(ping_interval(node_timeout));
    let mut input = BytesMut::with_capacity(4096);
    loop {
        tokio::select! {
            read = stream.read_buf(&mut input) => {
                if !matches!(read, Ok(n) if n > 0) {
                    return Ended::Reconnect;
                }
                loop {
                    let message = match codec::decode(&mut input) {
                        Ok(Some(Decoded::Message(message))) => message,
                        Ok(Some(Decoded::UnknownType(_))) => continue,
                        Ok(None) => break,
                        Err(_) => return Ended::Reconnect,
                    };
                    let origin = Origin { link: Link::Outbound(*id), local_ip: local.ip(), peer_ip: peer.ip() };
                    let outcome = {
                        let mut state = cluster.lock();
                        let outcome = gossip::process(&mut state, &message, &origin, unix_time_ms());
                        if let Some(new_id) = outcome.renamed {
                            let mut links = lock(&cluster.links);
                            if let Some(outbox) = links.remove(id) {
                                links.insert(new_id, outbox);
                            }
                            *id = new_id;
                        }
                        commit(shared, &mut state);
                        outcome
                    };
                    let close = outcome.close;
                    apply(shared, outcome);
                    if close {
                        return if cluster.lock().nodes.contains_key(id) { Ended::Reconnect } else { Ended::Stop };
                    }
                }
            }
            frame = outbox.recv() => {
                let Some(frame) = frame else { return Ended::Stop };
                if stream.write_all(&frame).await.is_err() {
                    return Ended::Reconnect;
                }
            }
            _ = ticker.tick() => {
                let now = unix_time_ms();
                let (pending, quiet) = {
                    let state = cluster.lock();
                    let Some(node) = state.nodes.get(id) else { return Ended::Stop };
                    let half = node_timeout / 2;
                    (node.ping_sent_ms != 0, node.ping_sent_ms != 0
                        && now.saturating_sub(node.ping_sent_ms) > half
                        && now.saturating_sub(node.data_received_ms) > half)
                };
                if quiet {
                    return Ended::Reconnect;
                }
                if !pending {
                    let Some(ping) = next_ping(cluster, id) else { return Ended::Stop };
                    if stream.write_all(&ping).await.is_err() {
                        return Ended::Reconnect;
                    }
                }
            }
            changed = broadcast.changed() => {
                if changed.is_err() {
                    return Ended::Stop;
                }
                let frame = {
                    let mut state = cluster.lock();
                    let message = gossip::ping(&state, Body::Pong);
                    state.stats.sent[message.type_code() as usize] += 1;
                    codec::encode(&message)
                };
                if stream.write_all(&frame).await.is_err() {
                    return Ended::Reconnect;
                }
            }
        }
    }
}
