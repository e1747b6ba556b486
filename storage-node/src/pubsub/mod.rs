//! Pub/sub: who listens to which channel, pattern or shard channel, and delivery.
//!
//! The [`Registry`] lives in the keyspace, so PUBLISH, keyspace notifications and the
//! subscription commands all run under the keyspace lock, in the node's one serial order of
//! commands. A message is encoded once per protocol and queued on each subscriber's mailbox
//! (`ClientHandle::deliver`); a message for the client whose command is running goes straight
//! into its reply buffer instead, so it keeps its place among that command's replies, as in
//! Redis. A subscriber whose undelivered messages pass its `client-output-buffer-limit pubsub`
//! is disconnected instead of growing memory without bound.
//!
//! The connection keeps its own subscriptions in [`Subscriptions`] (for the counts in
//! confirmations and for unsubscribing everything); the registry keeps the reverse maps.

pub mod limits;
pub mod notify;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use slotproxy::glob::glob_match;
use slotproxy::resp::{Proto, ReplyBuf};

use crate::server::clients::ClientHandle;
pub use limits::{BufferLimit, OutputBufferLimits};

/// The three kinds of subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// What other connections may read of a client's subscriptions (CLIENT LIST `sub`, `psub`,
/// `ssub`, the `P` flag) and when it first went over the soft output limit.
#[derive(Debug, Default)]
pub struct HandleState {
    pub channels: AtomicUsize,
    pub patterns: AtomicUsize,
    pub shard_channels: AtomicUsize,
    /// Unix milliseconds when the soft limit was first exceeded; 0 while under it.
    soft_limit_since_ms: AtomicU64,
}

impl HandleState {
    /// Whether the client is in pub/sub mode (Redis's `CLIENT_PUBSUB`).
    pub fn is_subscriber(&self) -> bool {
        self.channels.load(Relaxed)
            + self.patterns.load(Relaxed)
            + self.shard_channels.load(Relaxed)
            > 0
    }
}

/// One connection's subscriptions.
#[derive(Debug, Default)]
pub struct Subscriptions {
    channels: HashSet<Bytes>,
    patterns: HashSet<Bytes>,
    shard_channels: HashSet<Bytes>,
}

impl Subscriptions {
    fn set(&mut self, kind: Kind) -> &mut HashSet<Bytes> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard_channels,
        }
    }

    /// The count a confirmation shows: channels and patterns together, shard channels
    /// apart (Redis's `clientSubscriptionsCount` / `clientShardSubscriptionsCount`).
    pub fn count_for(&self, kind: Kind) -> usize {
        match kind {
            Kind::Channel | Kind::Pattern => self.channels.len() + self.patterns.len(),
            Kind::Shard => self.shard_channels.len(),
        }
    }

    /// Whether the client is in pub/sub mode.
    pub fn active(&self) -> bool {
        !(self.channels.is_empty() && self.patterns.is_empty() && self.shard_channels.is_empty())
    }

    /// Every subscription of one kind, for mass unsubscription.
    pub fn all(&self, kind: Kind) -> Vec<Bytes> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Pattern => self.patterns.iter().cloned().collect(),
            Kind::Shard => self.shard_channels.iter().cloned().collect(),
        }
    }

    fn publish_counts(&self, handle: &ClientHandle) {
        handle.pubsub.channels.store(self.channels.len(), Relaxed);
        handle.pubsub.patterns.store(self.patterns.len(), Relaxed);
        handle
            .pubsub
            .shard_channels
            .store(self.shard_channels.len(), Relaxed);
    }
}

type Listeners = HashMap<u64, Arc<ClientHandle>>;

/// Subscribers of every channel, pattern and shard channel of the node.
#[derive(Default)]
pub struct Registry {
    channels: HashMap<Bytes, Listeners>,
    patterns: HashMap<Bytes, Listeners>,
    shard_channels: HashMap<Bytes, Listeners>,
    /// The `client-output-buffer-limit pubsub` class, copied from the settings.
    pub limit: BufferLimit,
    /// Where pushes for the client whose command runs (confirmations, its own messages)
    /// were written into its reply buffer: CLIENT REPLY OFF/SKIP silence replies but not
    /// pushes (see `cmd::execute`). A cell, because PUBLISH delivers through `&self`.
    own_pushes: RefCell<Vec<Range<usize>>>,
}

impl Registry {
    /// The push ranges written for the running client since the last call.
    pub fn take_own_pushes(&self) -> Vec<Range<usize>> {
        std::mem::take(&mut *self.own_pushes.borrow_mut())
    }

    /// Records that bytes `range` of the running client's reply buffer are a push.
    pub fn note_own_push(&self, range: Range<usize>) {
        if !range.is_empty() {
            self.own_pushes.borrow_mut().push(range);
        }
    }

    fn map(&mut self, kind: Kind) -> &mut HashMap<Bytes, Listeners> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard_channels,
        }
    }

    fn map_ref(&self, kind: Kind) -> &HashMap<Bytes, Listeners> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard_channels,
        }
    }

    /// Subscribes and writes the confirmation (`subscribe`, `psubscribe`, `ssubscribe`).
    pub fn subscribe(
        &mut self,
        kind: Kind,
        name: &Bytes,
        subs: &mut Subscriptions,
        handle: &Arc<ClientHandle>,
        out: &mut ReplyBuf<'_>,
    ) {
        if subs.set(kind).insert(name.clone()) {
            self.map(kind)
                .entry(name.clone())
                .or_default()
                .insert(handle.id, handle.clone());
        }
        subs.publish_counts(handle);
        let start = out.buf.len();
        confirmation(out, kind.subscribe_word(), Some(name), subs.count_for(kind));
        self.note_own_push(start..out.buf.len());
    }

    /// Unsubscribes from one name; writes the confirmation when `notify` is set.
    pub fn unsubscribe(
        &mut self,
        kind: Kind,
        name: &Bytes,
        subs: &mut Subscriptions,
        handle: &ClientHandle,
        out: Option<&mut ReplyBuf<'_>>,
    ) {
        if subs.set(kind).remove(name) {
            let map = self.map(kind);
            if let Some(listeners) = map.get_mut(name) {
                listeners.remove(&handle.id);
                if listeners.is_empty() {
                    map.remove(name);
                }
            }
        }
        subs.publish_counts(handle);
        if let Some(out) = out {
            let start = out.buf.len();
            confirmation(
                out,
                kind.unsubscribe_word(),
                Some(name),
                subs.count_for(kind),
            );
            self.note_own_push(start..out.buf.len());
        }
    }

    /// Unsubscribes from every name of one kind, confirming each; a client subscribed to
    /// nothing still gets one confirmation with a null name.
    pub fn unsubscribe_all(
        &mut self,
        kind: Kind,
        subs: &mut Subscriptions,
        handle: &ClientHandle,
        out: &mut ReplyBuf<'_>,
    ) {
        let names = subs.all(kind);
        if names.is_empty() {
            let start = out.buf.len();
            confirmation(out, kind.unsubscribe_word(), None, subs.count_for(kind));
            self.note_own_push(start..out.buf.len());
        }
        for name in &names {
            self.unsubscribe(kind, name, subs, handle, Some(out));
        }
    }

    /// Drops every subscription of a client silently (RESET, disconnect).
    pub fn forget(&mut self, subs: &mut Subscriptions, handle: &ClientHandle) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in subs.all(kind) {
                self.unsubscribe(kind, &name, subs, handle, None);
            }
        }
    }

    /// Sends `message` to the subscribers of `channel` (and, unless `shard`, to those of
    /// matching patterns). Returns the number of deliveries, as PUBLISH answers. The client
    /// `me` (whose command runs) gets its copy in `my_out`.
    pub fn publish(
        &self,
        channel: &[u8],
        message: &[u8],
        shard: bool,
        me: u64,
        my_out: &mut BytesMut,
    ) -> usize {
        let mut receivers = 0;
        let kind = if shard { Kind::Shard } else { Kind::Channel };
        if let Some(listeners) = self.map_ref(kind).get(channel) {
            let word: &[u8] = if shard { b"smessage" } else { b"message" };
            let mut encoded = Encoded::default();
            for handle in listeners.values() {
                let bytes = encoded.get(handle, |out| {
                    out.push(3);
                    out.bulk(word);
                    out.bulk(channel);
                    out.bulk(message);
                });
                self.send(handle, bytes, me, my_out);
                receivers += 1;
            }
        }
        if shard {
            return receivers;
        }
        for (pattern, listeners) in &self.patterns {
            if !glob_match(pattern, channel, false) {
                continue;
            }
            let mut encoded = Encoded::default();
            for handle in listeners.values() {
                let bytes = encoded.get(handle, |out| {
                    out.push(4);
                    out.bulk(b"pmessage");
                    out.bulk(pattern);
                    out.bulk(channel);
                    out.bulk(message);
                });
                self.send(handle, bytes, me, my_out);
                receivers += 1;
            }
        }
        receivers
    }

    /// Queues one message for a subscriber, cutting it off past the output buffer limit.
    fn send(&self, handle: &ClientHandle, bytes: Bytes, me: u64, my_out: &mut BytesMut) {
        if handle.id == me {
            let start = my_out.len();
            my_out.extend_from_slice(&bytes);
            self.note_own_push(start..my_out.len());
            return;
        }
        if handle.killed.load(Relaxed) {
            return;
        }
        let waiting = handle.deliver(bytes);
        if self.over_limit(handle, waiting) {
            crate::log::warning!(
                "closing client {} for overcoming of output buffer limits (pubsub, {waiting} bytes pending)",
                handle.addr
            );
            handle.request_kill();
        }
    }

    /// Redis's `checkClientOutputBufferLimits`: over the hard limit at once, or over the
    /// soft limit for longer than its seconds.
    fn over_limit(&self, handle: &ClientHandle, waiting: usize) -> bool {
        let limit = self.limit;
        if limit.hard > 0 && waiting as u64 >= limit.hard {
            return true;
        }
        let state = &handle.pubsub;
        if limit.soft == 0 || (waiting as u64) < limit.soft {
            state.soft_limit_since_ms.store(0, Relaxed);
            return false;
        }
        let now = crate::keyspace::unix_time_ms();
        let since = state.soft_limit_since_ms.load(Relaxed);
        if since == 0 {
            state.soft_limit_since_ms.store(now, Relaxed);
            return false;
        }
        now - since > limit.soft_seconds * 1000
    }

    /// Active names of one kind matching an optional glob pattern (PUBSUB CHANNELS /
    /// SHARDCHANNELS).
    pub fn names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.map_ref(kind)
            .keys()
            .filter(|name| pattern.is_none_or(|p| glob_match(p, name, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of one channel or shard channel (PUBSUB NUMSUB / SHARDNUMSUB).
    pub fn subscriber_count(&self, kind: Kind, name: &[u8]) -> usize {
        self.map_ref(kind).get(name).map_or(0, HashMap::len)
    }

    /// The channels (plain and shard) and the patterns one client subscribes to, for ACL
    /// SETUSER's check of a narrowed user's subscribers. Walks every name: rare and
    /// administrative, so no per-client index is kept for it.
    pub fn subscriptions_of(&self, client: &ClientHandle) -> (Vec<Bytes>, Vec<Bytes>) {
        let of = |map: &HashMap<Bytes, Listeners>| -> Vec<Bytes> {
            map.iter()
                .filter(|(_, listeners)| listeners.contains_key(&client.id))
                .map(|(name, _)| name.clone())
                .collect()
        };
        let mut channels = of(&self.channels);
        channels.extend(of(&self.shard_channels));
        (channels, of(&self.patterns))
    }

    /// Distinct names of one kind with at least one subscriber (PUBSUB NUMPAT, INFO).
    pub fn len(&self, kind: Kind) -> usize {
        self.map_ref(kind).len()
    }
}

/// A subscription confirmation: `[word, name or null, count]` as an array (RESP2) or a push.
fn confirmation(out: &mut ReplyBuf<'_>, word: &[u8], name: Option<&Bytes>, count: usize) {
    out.push(3);
    out.bulk(word);
    match name {
        Some(name) => out.bulk(name),
        None => out.null(),
    }
    out.integer(count as i64);
}

/// A message encoded at most once per protocol.
#[derive(Default)]
struct Encoded {
    resp2: Option<Bytes>,
    resp3: Option<Bytes>,
}

impl Encoded {
    fn get(&mut self, handle: &ClientHandle, write: impl Fn(&mut ReplyBuf<'_>)) -> Bytes {
        let proto = if handle.resp.load(Relaxed) == 3 {
            Proto::Resp3
        } else {
            Proto::Resp2
        };
        let slot = match proto {
            Proto::Resp2 => &mut self.resp2,
            Proto::Resp3 => &mut self.resp3,
        };
        slot.get_or_insert_with(|| {
            let mut buf = BytesMut::new();
            write(&mut ReplyBuf::new(&mut buf, proto));
            buf.freeze()
        })
        .clone()
    }
}
