//! Inbound bus connections: peers send PING / MEET (answered with PONG), broadcast PONGs
//! and UPDATEs. Anything that is not a well-formed frame closes the connection; the node
//! itself is never affected.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::codec::{self, Decoded};
use super::gossip::{self, Link, Origin};
use super::{apply, cluster, commit};
use crate::cluster::node::NodeId;
use crate::keyspace::unix_time_ms;
use crate::server::Shared;

pub async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(shared.clone(), stream));
            }
            Err(e) => {
                crate::log::warning!("cluster bus accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn serve(shared: Arc<Shared>, stream: TcpStream) {
    let cluster = cluster(&shared);
    cluster.inbound_links.fetch_add(1, Relaxed);
    let sender = connection(&shared, stream).await;
    cluster.inbound_links.fetch_sub(1, Relaxed);
    if let Some(id) = sender {
        if let Some(node) = cluster.lock().nodes.get_mut(&id) {
            node.inbound_since_ms = None;
        }
    }
}

/// Serves one connection; returns the node it turned out to come from, if any.
async fn connection(shared: &Shared, mut stream: TcpStream) -> Option<NodeId> {
    let cluster = cluster(shared);
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else {
        return None;
    };
    let mut input = BytesMut::with_capacity(4096);
    let mut sender = None;
    loop {
        // A peer pings at least every second; one silent for much longer is gone.
        let idle = Duration::from_millis(shared.config().cluster_node_timeout.max(1000) * 2);
        let read = tokio::time::timeout(idle, stream.read_buf(&mut input)).await;
        if !matches!(read, Ok(Ok(n)) if n > 0) {
            return sender;
        }
        loop {
            let message = match codec::decode(&mut input) {
                Ok(Some(Decoded::Message(message))) => message,
                Ok(Some(Decoded::UnknownType(_))) => continue,
                Ok(None) => break,
                Err(_) => return sender,
            };
            let origin = Origin {
                link: Link::Inbound,
                local_ip: local.ip(),
                peer_ip: peer.ip(),
            };
            let (outcome, reply) = {
                let mut state = cluster.lock();
                let mut outcome = gossip::process(&mut state, &message, &origin, unix_time_ms());
                if state
                    .nodes
                    .get(&message.header.sender)
                    .is_some_and(|n| !n.in_handshake())
                {
                    sender = Some(message.header.sender);
                }
                let reply = outcome.reply.take().map(|reply| {
                    state.stats.sent[reply.type_code() as usize] += 1;
                    codec::encode(&reply)
                });
                commit(shared, &mut state);
                (outcome, reply)
            };
            apply(shared, outcome);
            if let Some(reply) = reply {
                if stream.write_all(&reply).await.is_err() {
                    return sender;
                }
            }
        }
    }
}
