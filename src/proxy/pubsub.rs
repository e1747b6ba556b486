//! SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs through the proxy.
//!
//! In Redis Cluster a PUBLISH reaches the subscribers on every node, so all of a client's
//! channel and pattern subscriptions live on one dedicated connection to one master. Shard
//! channels (SSUBSCRIBE) live on the master of their slot, one dedicated connection per
//! master. A reader task per connection forwards messages to the session, which writes them
//! to the client as they come (push frames in RESP3, arrays in RESP2).
//!
//! To keep a subscribe command's confirmations in order with the client's other replies, the
//! session sends `PING` right after it and forwards everything up to that PING's answer
//! before serving the next request.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::forward::error_reply;
use super::router::CROSSSLOT;
use super::Proxy;
use crate::backend::dedicated::{Dedicated, DedicatedWriter};
use crate::cluster::key_slot;
use crate::resp::{encode_request, parse_frame, Frame, Proto, ReplyScanner};

/// Something a subscription connection produced.
pub enum Event {
    Frame(usize, Bytes),
    Closed(usize),
}

struct Conn {
    id: usize,
    addr: String,
    shard: bool,
    writer: DedicatedWriter,
    reader: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A client's subscription connections.
pub struct PubSub {
    events_tx: mpsc::UnboundedSender<Event>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    conns: Vec<Conn>,
    counts: HashMap<usize, i64>,
    next_id: usize,
}

impl Default for PubSub {
    fn default() -> Self {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        PubSub {
            events_tx,
            events_rx,
            conns: Vec::new(),
            counts: HashMap::new(),
            next_id: 0,
        }
    }
}

fn is_pong(frame: &[u8]) -> bool {
    frame == b"+PONG\r\n"
        || frame.starts_with(b"*2\r\n$4\r\npong\r\n")
        || frame.starts_with(b">2\r\n$4\r\npong\r\n")
}

const KINDS: &[&[u8]] = &[
    b"subscribe",
    b"psubscribe",
    b"unsubscribe",
    b"punsubscribe",
    b"ssubscribe",
    b"sunsubscribe",
];

/// The subscription count a confirmation frame reports, if it is one.
fn confirmation_count(frame: &[u8]) -> Option<i64> {
    let (frame, _) = parse_frame(frame).ok()??;
    let items = frame.as_array()?;
    let kind = items.first()?.as_bytes()?;
    if !KINDS.contains(&kind) {
        return None;
    }
    items.get(2).and_then(Frame::as_integer)
}

async fn read_frames(
    id: usize,
    mut read: tokio::net::tcp::OwnedReadHalf,
    mut buf: BytesMut,
    events: mpsc::UnboundedSender<Event>,
) {
    let mut scanner = ReplyScanner::default();
    loop {
        while let Ok(Some(len)) = scanner.scan(&buf) {
            if events
                .send(Event::Frame(id, buf.split_to(len).freeze()))
                .is_err()
            {
                return;
            }
        }
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(16 * 1024);
        }
        match read.read_buf(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = events.send(Event::Closed(id));
                return;
            }
            Ok(_) => {}
        }
    }
}

impl Proxy {
    /// The master that holds the proxy's channel and pattern subscriptions: the first master
    /// by address, so every session and PUBLISH agree on it.
    pub fn pubsub_home(&self) -> Result<String, crate::backend::BackendError> {
        let topology = self.topology.load();
        topology
            .masters
            .iter()
            .map(|m| m.addr.clone())
            .min()
            .ok_or(crate::backend::BackendError::NoNode { slot: 0 })
    }
}

impl PubSub {
    /// Whether any connection is open (its messages must be read).
    pub fn is_active(&self) -> bool {
        !self.conns.is_empty()
    }

    /// Whether the client has any subscription (RESP2 subscriber mode).
    pub fn subscribed(&self) -> bool {
        self.counts.values().any(|&c| c > 0)
    }

    pub fn reset(&mut self) {
        self.conns.clear();
        self.counts.clear();
        while self.events_rx.try_recv().is_ok() {}
    }

    /// The next message from any subscription connection.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events_rx.recv().await
    }

    /// Notes a frame from a connection (subscription counts) and says if it is forwarded.
    pub fn observe(&mut self, id: usize, frame: &[u8]) {
        if let Some(count) = confirmation_count(frame) {
            self.counts.insert(id, count);
        }
    }

    pub fn closed(&mut self, id: usize) {
        self.conns.retain(|c| c.id != id);
        self.counts.remove(&id);
    }

    async fn conn_for(
        &mut self,
        proxy: &Arc<Proxy>,
        shard_slot: Option<u16>,
        proto: Proto,
    ) -> Result<usize, Bytes> {
        let addr = match shard_slot {
            Some(slot) => proxy.master_addr(slot),
            None => {
                if let Some(c) = self.conns.iter().find(|c| !c.shard) {
                    return Ok(c.id);
                }
                proxy.pubsub_home()
            }
        }
        .map_err(|e| error_reply(&e.to_reply()))?;
        let shard = shard_slot.is_some();
        if let Some(c) = self
            .conns
            .iter()
            .find(|c| c.shard == shard && c.addr == addr)
        {
            return Ok(c.id);
        }
        let timeout = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
        let conn = Dedicated::open(&addr, proto, &proxy.dedicated, timeout)
            .await
            .map_err(|e| error_reply(&e.to_reply()))?;
        let (read, buffered, writer) = conn.into_split();
        self.next_id += 1;
        let id = self.next_id;
        let reader = tokio::spawn(read_frames(id, read, buffered, self.events_tx.clone()));
        self.conns.push(Conn {
            id,
            addr,
            shard,
            writer,
            reader,
        });
        Ok(id)
    }

    /// Runs a (P|S)(UN)SUBSCRIBE command. Returns the frames to write to the client, in
    /// order: the confirmations, and any messages that arrived meanwhile.
    pub async fn command(
        &mut self,
        proxy: &Arc<Proxy>,
        args: &[Bytes],
        proto: Proto,
    ) -> Vec<Bytes> {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        let sharded = name.starts_with("ssub") || name.starts_with("sunsub");
        let channels = &args[1..];
        let targets: Vec<usize> = if sharded && channels.is_empty() {
            let shard_ids: Vec<usize> = self
                .conns
                .iter()
                .filter(|c| c.shard)
                .map(|c| c.id)
                .collect();
            if shard_ids.is_empty() {
                match self.conn_for(proxy, None, proto).await {
                    Ok(id) => vec![id],
                    Err(e) => return vec![e],
                }
            } else {
                shard_ids
            }
        } else if sharded {
            let slot = key_slot(&channels[0]);
            if channels.iter().any(|c| key_slot(c) != slot) {
                return vec![error_reply(CROSSSLOT)];
            }
            match self.conn_for(proxy, Some(slot), proto).await {
                Ok(id) => vec![id],
                Err(e) => return vec![e],
            }
        } else {
            match self.conn_for(proxy, None, proto).await {
                Ok(id) => vec![id],
                Err(e) => return vec![e],
            }
        };
        let mut request = BytesMut::new();
        encode_request(&mut request, args);
        encode_request(&mut request, &["PING"]);
        for &id in &targets {
            if let Some(conn) = self.conns.iter_mut().find(|c| c.id == id) {
                if let Err(e) = conn.writer.send(&request).await {
                    return vec![error_reply(&e.to_reply())];
                }
            }
        }
        let mut waiting: Vec<usize> = targets;
        let mut out = Vec::new();
        while !waiting.is_empty() {
            match self.events_rx.recv().await {
                Some(Event::Frame(id, frame)) => {
                    if waiting.contains(&id) && is_pong(&frame) {
                        waiting.retain(|&w| w != id);
                        continue;
                    }
                    self.observe(id, &frame);
                    out.push(frame);
                }
                Some(Event::Closed(id)) => {
                    self.closed(id);
                    if waiting.contains(&id) {
                        waiting.retain(|&w| w != id);
                        out.push(error_reply("ERR slotproxy: subscription connection lost"));
                    }
                }
                None => break,
            }
        }
        // Shard connections with nothing left to listen to are given back.
        let idle: Vec<usize> = self
            .conns
            .iter()
            .filter(|c| c.shard && self.counts.get(&c.id) == Some(&0))
            .map(|c| c.id)
            .collect();
        for id in idle {
            self.closed(id);
        }
        out
    }
}
