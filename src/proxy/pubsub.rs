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
//!
//! The same barrier orders messages before a subscribed client's other commands
//! ([`PubSub::barrier`]): a message a node delivered before the client's next command
//! travels over a subscription connection while the command's reply comes over another
//! connection (or from the proxy itself), so without it the reply could overtake the
//! message. Before such a command the session sends `PING` on every subscription connection
//! and forwards everything read before the pongs; on one Redis server the message would also
//! come first.
//!
//! Keyspace notifications are the exception to "PUBLISH reaches every node": each node
//! publishes only the events of its own keys. So channels named `__keyspace@...` or
//! `__keyevent@...`, and patterns that can match such channels (`__key*`, `*`), are also
//! subscribed on every other master through "mirror" connections. The home connection
//! still carries every subscription and alone answers the client (confirmations, counts,
//! published messages); a mirror forwards only keyspace-event messages, so each event
//! reaches the client once, from the node where it happened. Mirrors follow the topology:
//! while keyspace subscriptions exist, the session checks the topology version every
//! [`TOPOLOGY_CHECK`] and subscribes on new masters, dropping mirrors of masters that left.
//! A PUBLISH by a client to a `__keyspace@...` channel itself arrives once per master.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

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

/// What the session is woken for by pub/sub.
pub enum Wake {
    /// A connection's frame or end (None: every connection is gone).
    Event(Option<Event>),
    /// Time to match the mirrors with the topology ([`PubSub::follow_topology`]).
    CheckTopology,
}

/// How often a session with keyspace subscriptions looks for topology changes.
pub const TOPOLOGY_CHECK: Duration = Duration::from_secs(1);

/// What a subscription connection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Channels and patterns; answers the client.
    Home,
    /// Shard channels of one master.
    Shard,
    /// Keyspace subscriptions on a master other than home; forwards events only.
    Mirror,
}

struct Conn {
    id: usize,
    addr: String,
    kind: Kind,
    /// The protocol the connection speaks: the client's when it was opened.
    proto: Proto,
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
    /// Keyspace channels and patterns the client holds, which every mirror subscribes to.
    keyspace_channels: BTreeSet<Bytes>,
    keyspace_patterns: BTreeSet<Bytes>,
    /// The topology version the mirrors were last matched with, and when to look again.
    topology_version: u64,
    next_check: Pin<Box<tokio::time::Sleep>>,
    /// The client's protocol: what it is sent is written in it.
    proto: Proto,
    /// Barrier PINGs whose pongs have not been read yet, per connection: a pong that comes
    /// after its barrier gave up waiting must not reach the client.
    owed_pongs: HashMap<usize, u32>,
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
            keyspace_channels: BTreeSet::new(),
            keyspace_patterns: BTreeSet::new(),
            topology_version: 0,
            next_check: Box::pin(tokio::time::sleep_until(Instant::now())),
            proto: Proto::Resp2,
            owed_pongs: HashMap::new(),
        }
    }
}

/// Channels where nodes publish keyspace notifications.
fn is_keyspace_channel(channel: &[u8]) -> bool {
    channel.starts_with(b"__keyspace@") || channel.starts_with(b"__keyevent@")
}

/// Whether a pattern can match a keyspace channel: its literal beginning (up to the first
/// glob character) is compatible with `__keyspace@` or `__keyevent@`.
fn pattern_may_match_keyspace(pattern: &[u8]) -> bool {
    let literal = pattern
        .iter()
        .position(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
        .map_or(pattern, |end| &pattern[..end]);
    [&b"__keyspace@"[..], b"__keyevent@"]
        .iter()
        .any(|prefix| prefix.starts_with(literal) || literal.starts_with(prefix))
}

/// The channel of a `message` or `pmessage` frame.
fn message_channel(frame: &[u8]) -> Option<Bytes> {
    let (frame, _) = parse_frame(frame).ok()??;
    let items = frame.as_array()?;
    let at = match items.first()?.as_bytes()? {
        b"message" => 1,
        b"pmessage" => 2,
        _ => return None,
    };
    Some(Bytes::copy_from_slice(items.get(at)?.as_bytes()?))
}

/// A frame from a subscription connection that speaks `from`, as a connection speaking `to`
/// would have sent it. A client may switch protocols (HELLO) while its connections stay
/// as they were opened: messages and confirmations are arrays in RESP2 and push frames in
/// RESP3, and a null (an UNSUBSCRIBE with nothing to leave) is written per protocol.
fn reshape(frame: Bytes, from: Proto, to: Proto) -> Bytes {
    if from == to {
        return frame;
    }
    let Ok(Some((parsed, _))) = parse_frame(&frame) else {
        return frame;
    };
    let parsed = match parsed {
        Frame::Array(items) if to == Proto::Resp3 => Frame::Push(items),
        other => other,
    };
    parsed.to_bytes(to).freeze()
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
        self.keyspace_channels.clear();
        self.keyspace_patterns.clear();
        while self.events_rx.try_recv().is_ok() {}
    }

    /// The next message from any subscription connection, or, while the client holds
    /// keyspace subscriptions, the time to keep the mirrors in step with the topology.
    /// A poll, not an async fn: the session waits on it in its select, and every client's
    /// task would carry the size of a future (a receiver and a timer) it rarely uses.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Wake> {
        if let Poll::Ready(event) = self.events_rx.poll_recv(cx) {
            return Poll::Ready(Wake::Event(event));
        }
        if self.keyspace_channels.is_empty() && self.keyspace_patterns.is_empty() {
            return Poll::Pending;
        }
        match self.next_check.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.next_check
                    .as_mut()
                    .reset(Instant::now() + TOPOLOGY_CHECK);
                Poll::Ready(Wake::CheckTopology)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Notes a frame from a connection (subscription counts) and returns it if it is
    /// forwarded to the client: everything from home and shard connections, only keyspace
    /// events from mirrors; in the client's protocol (see [`reshape`]).
    pub fn observe(&mut self, id: usize, frame: Bytes) -> Option<Bytes> {
        if self.take_owed_pong(id, &frame) {
            return None;
        }
        let conn = self.conns.iter().find(|c| c.id == id)?;
        let conn_proto = conn.proto;
        match conn.kind {
            Kind::Mirror if !message_channel(&frame).is_some_and(|c| is_keyspace_channel(&c)) => {
                return None
            }
            Kind::Mirror => {}
            _ => {
                if let Some(count) = confirmation_count(&frame) {
                    self.counts.insert(id, count);
                }
            }
        }
        Some(reshape(frame, conn_proto, self.proto))
    }

    /// Notes that the client now speaks `proto` (HELLO): what its subscription connections
    /// deliver from now on is written in it.
    pub fn follow_protocol(&mut self, proto: Proto) {
        self.proto = proto;
    }

    /// Whether `frame` is the pong of a barrier PING sent on connection `id` (then no
    /// longer owed).
    fn take_owed_pong(&mut self, id: usize, frame: &[u8]) -> bool {
        match self.owed_pongs.get_mut(&id) {
            Some(owed) if *owed > 0 && is_pong(frame) => {
                *owed -= 1;
                true
            }
            _ => false,
        }
    }

    pub fn closed(&mut self, id: usize) {
        self.conns.retain(|c| c.id != id);
        self.counts.remove(&id);
        self.owed_pongs.remove(&id);
    }

    /// Writes to `out` every message the subscription connections received before now, by
    /// sending `PING` on each and reading up to its pong. Called before a subscribed client's command, so
    /// the messages a node delivered first reach the client before that command's reply.
    /// Waits at most `timeouts.operation_ms`: a connection that does not answer in time
    /// holds the client's command back no longer (its late pong is dropped).
    pub async fn barrier(&mut self, proxy: &Proxy, out: &mut BytesMut) {
        let mut ping = BytesMut::new();
        encode_request(&mut ping, &["PING"]);
        let mut waiting = Vec::new();
        for conn in &mut self.conns {
            if conn.writer.send(&ping).await.is_ok() {
                *self.owed_pongs.entry(conn.id).or_default() += 1;
                waiting.push(conn.id);
            }
        }
        let budget = Duration::from_millis(proxy.config.load().timeouts.operation_ms.max(1));
        let deadline = Instant::now() + budget;
        while !waiting.is_empty() {
            let Ok(Some(event)) = tokio::time::timeout_at(deadline, self.events_rx.recv()).await
            else {
                return;
            };
            match event {
                Event::Frame(id, frame) => {
                    if self.take_owed_pong(id, &frame) {
                        // Once no pong is owed (a timed-out barrier's comes first), this
                        // barrier's own has come: the frames before it are all forwarded.
                        let owed = &self.owed_pongs;
                        waiting.retain(|w| owed.get(w).is_some_and(|&n| n > 0));
                    } else if let Some(frame) = self.observe(id, frame) {
                        out.extend_from_slice(&frame);
                    }
                }
                Event::Closed(id) => {
                    self.closed(id);
                    waiting.retain(|&w| w != id);
                }
            }
        }
    }

    /// Opens a subscription connection with its reader task. Not yet registered: the caller
    /// pushes it once it is set up, so a cancelled setup leaves nothing half-made (dropping a
    /// `Conn` stops its reader).
    async fn open(
        &mut self,
        proxy: &Arc<Proxy>,
        addr: String,
        kind: Kind,
        proto: Proto,
    ) -> Result<Conn, Bytes> {
        let timeout = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
        let conn = Dedicated::open(&addr, proto, &proxy.dedicated, timeout)
            .await
            .map_err(|e| error_reply(&e.to_reply()))?;
        let (read, buffered, writer) = conn.into_split();
        self.next_id += 1;
        let id = self.next_id;
        let reader = tokio::spawn(read_frames(id, read, buffered, self.events_tx.clone()));
        Ok(Conn {
            id,
            addr,
            kind,
            proto,
            writer,
            reader,
        })
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
                if let Some(c) = self.conns.iter().find(|c| c.kind == Kind::Home) {
                    return Ok(c.id);
                }
                proxy.pubsub_home()
            }
        }
        .map_err(|e| error_reply(&e.to_reply()))?;
        let kind = if shard_slot.is_some() {
            Kind::Shard
        } else {
            Kind::Home
        };
        if let Some(c) = self.conns.iter().find(|c| c.kind == kind && c.addr == addr) {
            return Ok(c.id);
        }
        let conn = self.open(proxy, addr, kind, proto).await?;
        let id = conn.id;
        self.conns.push(conn);
        Ok(id)
    }

    /// Notes the keyspace channels or patterns a non-shard command adds or removes, and
    /// returns the request every existing mirror must get (none if nothing changes there).
    fn track_keyspace(&mut self, name: &str, targets: &[Bytes]) -> Option<BytesMut> {
        let patterns = name.starts_with('p');
        let relevant = if patterns {
            pattern_may_match_keyspace
        } else {
            is_keyspace_channel
        };
        let set = if patterns {
            &mut self.keyspace_patterns
        } else {
            &mut self.keyspace_channels
        };
        let subscribe = !name.contains("unsub");
        let mut request = BytesMut::new();
        if !subscribe && targets.is_empty() {
            if set.is_empty() {
                return None;
            }
            set.clear();
            encode_request(&mut request, &[name]);
            return Some(request);
        }
        let picked: Vec<Bytes> = targets.iter().filter(|t| relevant(t)).cloned().collect();
        if picked.is_empty() {
            return None;
        }
        for target in &picked {
            if subscribe {
                set.insert(target.clone());
            } else {
                set.remove(target);
            }
        }
        let mut args: Vec<&[u8]> = vec![name.as_bytes()];
        args.extend(picked.iter().map(|t| &t[..]));
        encode_request(&mut request, &args);
        Some(request)
    }

    /// The request that subscribes a new mirror to everything the client holds.
    fn mirror_setup(&self) -> BytesMut {
        let mut request = BytesMut::new();
        for (command, set) in [
            ("SUBSCRIBE", &self.keyspace_channels),
            ("PSUBSCRIBE", &self.keyspace_patterns),
        ] {
            if !set.is_empty() {
                let mut args: Vec<&[u8]> = vec![command.as_bytes()];
                args.extend(set.iter().map(|t| &t[..]));
                encode_request(&mut request, &args);
            }
        }
        request
    }

    /// Makes the mirrors match the masters: one per master other than home while keyspace
    /// subscriptions exist, none otherwise. `ping` follows each new mirror's setup, so the
    /// caller can wait until the subscriptions are in place. Returns the new mirrors' ids.
    async fn sync_mirrors(&mut self, proxy: &Arc<Proxy>, ping: bool) -> Vec<usize> {
        // The version is recorded only once every mirror is in place: a set-up cut short
        // (a failed connection, or the session cancelling this future) is tried again.
        let topology = proxy.topology.load();
        let version = topology.version;
        let masters = topology.master_addrs();
        let home = self
            .conns
            .iter()
            .find(|c| c.kind == Kind::Home)
            .map(|c| c.addr.clone());
        let wanted = !(self.keyspace_channels.is_empty() && self.keyspace_patterns.is_empty());
        self.conns.retain(|c| {
            c.kind != Kind::Mirror
                || (wanted && masters.contains(&c.addr) && home != Some(c.addr.clone()))
        });
        let Some(home) = home.filter(|_| wanted) else {
            self.topology_version = version;
            return Vec::new();
        };
        let mut setup = self.mirror_setup();
        if ping {
            encode_request(&mut setup, &["PING"]);
        }
        let mut opened = Vec::new();
        let mut complete = true;
        for addr in masters {
            let mirrored = self
                .conns
                .iter()
                .any(|c| c.kind == Kind::Mirror && c.addr == addr);
            if addr == home || mirrored {
                continue;
            }
            let proto = self.proto;
            let Ok(mut conn) = self.open(proxy, addr, Kind::Mirror, proto).await else {
                complete = false;
                continue;
            };
            if conn.writer.send(&setup).await.is_ok() {
                opened.push(conn.id);
                self.conns.push(conn);
            } else {
                complete = false;
            }
        }
        if complete {
            self.topology_version = version;
        }
        opened
    }

    /// Called on the check timer: follows a topology change.
    pub async fn follow_topology(&mut self, proxy: &Arc<Proxy>) {
        if proxy.topology.load().version != self.topology_version {
            self.sync_mirrors(proxy, false).await;
        }
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
        self.proto = proto;
        let channels = &args[1..];
        let targets: Vec<usize> = if sharded && channels.is_empty() {
            let shard_ids: Vec<usize> = self
                .conns
                .iter()
                .filter(|c| c.kind == Kind::Shard)
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
        if !sharded {
            if let Some(mut request) = self.track_keyspace(&name, channels) {
                encode_request(&mut request, &["PING"]);
                for conn in self.conns.iter_mut().filter(|c| c.kind == Kind::Mirror) {
                    if conn.writer.send(&request).await.is_ok() {
                        waiting.push(conn.id);
                    }
                }
            }
            waiting.extend(self.sync_mirrors(proxy, true).await);
            // Mirrors dropped because nothing is left to mirror answer nothing more.
            let conns = &self.conns;
            waiting.retain(|id| conns.iter().any(|c| c.id == *id));
        }
        let mut out = Vec::new();
        while !waiting.is_empty() {
            match self.events_rx.recv().await {
                Some(Event::Frame(id, frame)) => {
                    if self.take_owed_pong(id, &frame) {
                        continue;
                    }
                    if waiting.contains(&id) && is_pong(&frame) {
                        waiting.retain(|&w| w != id);
                        continue;
                    }
                    if let Some(frame) = self.observe(id, frame) {
                        out.push(frame);
                    }
                }
                Some(Event::Closed(id)) => {
                    let mirror = self
                        .conns
                        .iter()
                        .any(|c| c.id == id && c.kind == Kind::Mirror);
                    self.closed(id);
                    if mirror {
                        // A master went away mid-command; the topology check follows it.
                        waiting.retain(|&w| w != id);
                        continue;
                    }
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
            .filter(|c| c.kind == Kind::Shard && self.counts.get(&c.id) == Some(&0))
            .map(|c| c.id)
            .collect();
        for id in idle {
            self.closed(id);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_that_can_match_keyspace_channels_are_mirrored() {
        for pattern in [
            "*",
            "__key*__:*",
            "__keyevent@0__:set",
            "__keyspace@?__:k",
            "_[_]x",
        ] {
            assert!(pattern_may_match_keyspace(pattern.as_bytes()), "{pattern}");
        }
        for pattern in ["news.*", "__other*", "k*"] {
            assert!(!pattern_may_match_keyspace(pattern.as_bytes()), "{pattern}");
        }
        assert!(is_keyspace_channel(b"__keyevent@0__:del"));
        assert!(!is_keyspace_channel(b"news"));
    }
}
