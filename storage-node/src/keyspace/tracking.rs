//! Client-side caching (CLIENT TRACKING): which clients may have cached which keys, and the
//! invalidation messages sent when those keys change (Redis 7.0's tracking.c model).
//!
//! - Default mode: a read-only command run by a tracking client adds its keys to the
//!   invalidation table (key → ids of clients that read it; one table for all databases, as
//!   in Redis). When such a key changes (a write, an expiry, an eviction) every client in its
//!   row is sent `invalidate [key]` once and the row is dropped: the client reads the key
//!   again to be told again. OPTIN remembers keys only for the command after `CLIENT CACHING
//!   yes`, OPTOUT all but the one after `CLIENT CACHING no`.
//! - BCAST mode: nothing is remembered; every changed key that starts with one of the
//!   client's prefixes ("" by default) is collected and sent, sorted and without repeats, at
//!   the end of the command that changed it (Redis sends them before it sleeps, so a
//!   pipeline's keys share one message there and get one message each here).
//! - NOLOOP: no message about keys the client changed itself.
//! - A message for the client whose command runs is sent after that command's reply (after
//!   EXEC's whole reply inside a transaction), as Redis 7.0 does.
//! - FLUSHDB / FLUSHALL send every tracking client a null invalidation and empty the table.
//! - Delivery ([`Tracking::message_for`]): a RESP3 connection gets a `>invalidate` push; with
//!   REDIRECT the message goes to the other client instead, as a push if it speaks RESP3 or
//!   as a `__redis__:invalidate` pub/sub message if it is a RESP2 subscriber. A redirect
//!   whose client has gone is broken: the tracking client gets `tracking-redir-broken` (in
//!   RESP3) and the `R` flag.
//! - `tracking-table-max-keys` bounds the table: past it, keys are invalidated (an arbitrary
//!   one at a time, where Redis picks them at random) until it fits.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Proto, ReplyBuf};

use crate::server::clients::ClientHandle;

/// The pub/sub channel RESP2 redirect targets receive invalidations on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Keys removed per end of command when the table is over `tracking-table-max-keys`, so one
/// lowered limit does not stall the node (Redis bounds its effort too).
const MAX_KEYS_EVICTED_PER_CALL: usize = 1000;

/// The options of `CLIENT TRACKING on`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

/// What other connections may read of a client's tracking (CLIENT LIST flags `t`, `R`, `B`
/// and `redir=`).
#[derive(Debug)]
pub struct HandleTracking {
    pub on: AtomicBool,
    pub bcast: AtomicBool,
    pub broken_redirect: AtomicBool,
    /// The REDIRECT id while tracking is on (0: none), -1 while it is off.
    pub redirect: AtomicI64,
}

impl Default for HandleTracking {
    fn default() -> Self {
        HandleTracking {
            on: AtomicBool::new(false),
            bcast: AtomicBool::new(false),
            broken_redirect: AtomicBool::new(false),
            redirect: AtomicI64::new(-1),
        }
    }
}

/// One tracking client.
struct Tracker {
    handle: Arc<ClientHandle>,
    /// The REDIRECT id, 0 for none.
    redirect: u64,
    /// The redirect target while it is connected.
    redirect_to: Option<Arc<ClientHandle>>,
    mode: Mode,
    /// `CLIENT CACHING yes|no` was given for the next command.
    caching: bool,
    prefixes: BTreeSet<Bytes>,
}

/// A BCAST prefix: its clients and the keys under it changed since the last message, each
/// with the id of the client that changed it last (for NOLOOP).
#[derive(Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    changed: BTreeMap<Bytes, u64>,
}

/// What an invalidation message carries.
enum Payload<'a> {
    Keys(&'a [Bytes]),
    /// Everything (FLUSHDB / FLUSHALL).
    All,
}

/// Bytes for one client's connection.
pub struct Delivery {
    pub to: Arc<ClientHandle>,
    pub bytes: Bytes,
}

/// The node's tracking state; lives in the keyspace so it changes in the order commands run.
#[derive(Default)]
pub struct Tracking {
    trackers: HashMap<u64, Tracker>,
    table: HashMap<Bytes, HashSet<u64>>,
    /// Client ids over all rows of `table` (INFO `tracking_total_items`).
    items: usize,
    prefixes: BTreeMap<Bytes, Prefix>,
    /// Invalidations for the client whose command runs, sent after its reply (None: all).
    own_pending: Vec<Option<Bytes>>,
    /// `tracking-table-max-keys` (0: no limit).
    pub max_keys: u64,
}

/// Whether one of two prefixes starts with the other (Redis forbids such pairs for one
/// client).
fn overlap(a: &[u8], b: &[u8]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl Tracking {
    /// Whether writes must report the keys they change.
    pub fn active(&self) -> bool {
        !self.trackers.is_empty() || !self.table.is_empty()
    }

    /// Whether the end of a command has nothing to do for tracking: no client tracks, no
    /// invalidation waits, the table is empty (the usual case, checked before every flush).
    pub fn idle(&self) -> bool {
        self.trackers.is_empty() && self.own_pending.is_empty() && self.table.is_empty()
    }

    pub fn is_tracking(&self, id: u64) -> bool {
        self.trackers.contains_key(&id)
    }

    pub fn mode(&self, id: u64) -> Option<Mode> {
        self.trackers.get(&id).map(|t| t.mode)
    }

    /// The first pair of overlapping prefixes among `new` and the client's own, as Redis's
    /// error text names them.
    pub fn prefix_collision(&self, id: u64, new: &[Bytes]) -> Option<String> {
        let own = self.trackers.get(&id).map(|t| &t.prefixes);
        for (i, prefix) in new.iter().enumerate() {
            let text = String::from_utf8_lossy(prefix);
            if let Some(existing) = own.and_then(|own| own.iter().find(|p| overlap(p, prefix))) {
                return Some(format!(
                    "ERR Prefix '{text}' overlaps with an existing prefix '{}'. Prefixes for a \
                     single client must not overlap.",
                    String::from_utf8_lossy(existing)
                ));
            }
            if let Some(other) = new[i + 1..].iter().find(|p| overlap(p, prefix)) {
                return Some(format!(
                    "ERR Prefix '{text}' overlaps with another provided prefix '{}'. Prefixes \
                     for a single client must not overlap.",
                    String::from_utf8_lossy(other)
                ));
            }
        }
        None
    }

    /// CLIENT TRACKING on (options already checked). Calling it again keeps the prefixes
    /// registered before and adds the new ones, as Redis does.
    pub fn enable(
        &mut self,
        handle: &Arc<ClientHandle>,
        redirect: u64,
        redirect_to: Option<Arc<ClientHandle>>,
        mode: Mode,
        prefixes: &[Bytes],
    ) {
        let id = handle.id;
        let tracker = self.trackers.entry(id).or_insert_with(|| Tracker {
            handle: handle.clone(),
            redirect: 0,
            redirect_to: None,
            mode: Mode::default(),
            caching: false,
            prefixes: BTreeSet::new(),
        });
        tracker.redirect = redirect;
        tracker.redirect_to = redirect_to;
        tracker.mode = mode;
        let mut added = Vec::new();
        if mode.bcast {
            if prefixes.is_empty() {
                added.push(Bytes::new());
            }
            added.extend(prefixes.iter().cloned());
        }
        for prefix in added {
            tracker.prefixes.insert(prefix.clone());
            self.prefixes.entry(prefix).or_default().clients.insert(id);
        }
        let state = &handle.tracking;
        state.on.store(true, Relaxed);
        state.bcast.store(mode.bcast, Relaxed);
        state.broken_redirect.store(false, Relaxed);
        state.redirect.store(redirect as i64, Relaxed);
    }

    /// CLIENT TRACKING off, RESET, disconnection. The keys it read stay in the table until
    /// they change, as in Redis.
    pub fn disable(&mut self, id: u64) {
        let Some(tracker) = self.trackers.remove(&id) else {
            return;
        };
        for prefix in &tracker.prefixes {
            if let Some(state) = self.prefixes.get_mut(prefix) {
                state.clients.remove(&id);
                if state.clients.is_empty() {
                    self.prefixes.remove(prefix);
                }
            }
        }
        let state = &tracker.handle.tracking;
        state.on.store(false, Relaxed);
        state.bcast.store(false, Relaxed);
        state.broken_redirect.store(false, Relaxed);
        state.redirect.store(-1, Relaxed);
    }

    /// A client disconnected: redirects to it are broken from now on.
    pub fn disconnected(&mut self, id: u64) {
        self.disable(id);
        for tracker in self.trackers.values_mut() {
            if tracker.redirect == id {
                tracker.redirect_to = None;
            }
        }
    }

    /// CLIENT CACHING yes|no for the client's next command.
    pub fn set_caching(&mut self, id: u64) {
        if let Some(tracker) = self.trackers.get_mut(&id) {
            tracker.caching = true;
        }
    }

    /// The CLIENT CACHING choice lasts one command (or one transaction).
    pub fn clear_caching(&mut self, id: u64) {
        if let Some(tracker) = self.trackers.get_mut(&id) {
            tracker.caching = false;
        }
    }

    /// CLIENT TRACKINGINFO's `flags`, in Redis's order.
    pub fn flags(&self, id: u64) -> Vec<&'static str> {
        let Some(tracker) = self.trackers.get(&id) else {
            return vec!["off"];
        };
        let mode = tracker.mode;
        let mut flags = vec!["on"];
        if mode.bcast {
            flags.push("bcast");
        }
        if mode.optin {
            flags.push("optin");
            if tracker.caching {
                flags.push("caching-yes");
            }
        }
        if mode.optout {
            flags.push("optout");
            if tracker.caching {
                flags.push("caching-no");
            }
        }
        if mode.noloop {
            flags.push("noloop");
        }
        if tracker.handle.tracking.broken_redirect.load(Relaxed) {
            flags.push("broken_redirect");
        }
        flags
    }

    /// CLIENT GETREDIR: the redirect id, 0 without one, -1 when not tracking.
    pub fn redirect(&self, id: u64) -> i64 {
        self.trackers.get(&id).map_or(-1, |t| t.redirect as i64)
    }

    pub fn prefixes_of(&self, id: u64) -> Vec<Bytes> {
        self.trackers
            .get(&id)
            .map(|t| t.prefixes.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// A read-only command of client `id` read `keys` (Redis's `trackingRememberKeys`).
    pub fn remember(&mut self, id: u64, keys: impl Iterator<Item = Bytes>) {
        let Some(tracker) = self.trackers.get(&id) else {
            return;
        };
        let mode = tracker.mode;
        if mode.bcast || (mode.optin && !tracker.caching) || (mode.optout && tracker.caching) {
            return;
        }
        for key in keys {
            if self.table.entry(key).or_default().insert(id) {
                self.items += 1;
            }
        }
    }

    /// `key` changed, by client `me` (0: none). Messages for other clients are returned;
    /// those for `me` wait for [`Tracking::take_own`].
    pub fn invalidate(&mut self, key: &Bytes, me: u64, out: &mut Vec<Delivery>) {
        for (prefix, state) in self.prefixes.iter_mut() {
            if key.starts_with(prefix) {
                state.changed.insert(key.clone(), me);
            }
        }
        let Some(ids) = self.table.remove(key) else {
            return;
        };
        self.items -= ids.len();
        for id in ids {
            let Some(tracker) = self.trackers.get(&id) else {
                continue;
            };
            // A client that switched to BCAST gets no messages for keys it read before.
            if tracker.mode.bcast || (tracker.mode.noloop && id == me) {
                continue;
            }
            if id == me {
                self.own_pending.push(Some(key.clone()));
            } else {
                self.message_for(id, Payload::Keys(std::slice::from_ref(key)), out);
            }
        }
    }

    /// FLUSHDB / FLUSHALL: every tracking client is told to drop everything, and the table
    /// is emptied (Redis's `trackingInvalidateKeysOnFlush`).
    pub fn flushed(&mut self, me: u64, out: &mut Vec<Delivery>) {
        let ids: Vec<u64> = self.trackers.keys().copied().collect();
        for id in ids {
            if id == me {
                self.own_pending.push(None);
            } else {
                self.message_for(id, Payload::All, out);
            }
        }
        self.table.clear();
        self.items = 0;
    }

    /// The messages held for client `me` until its command's reply was written, then the
    /// BCAST messages for the keys changed since last time, then the invalidations that bring
    /// the table back under `tracking-table-max-keys`.
    pub fn take_pending(&mut self, me: u64, out: &mut Vec<Delivery>) {
        for key in std::mem::take(&mut self.own_pending) {
            match key {
                Some(key) => self.message_for(me, Payload::Keys(std::slice::from_ref(&key)), out),
                None => self.message_for(me, Payload::All, out),
            }
        }
        self.broadcast(out);
        self.limit_table(out);
    }

    /// Redis's `trackingBroadcastInvalidationMessages`.
    fn broadcast(&mut self, out: &mut Vec<Delivery>) {
        if self.prefixes.values().all(|p| p.changed.is_empty()) {
            return;
        }
        let mut batches = Vec::new();
        for state in self.prefixes.values_mut() {
            if state.changed.is_empty() {
                continue;
            }
            let changed = std::mem::take(&mut state.changed);
            for &id in &state.clients {
                batches.push((id, changed.clone()));
            }
        }
        for (id, changed) in batches {
            let noloop = self.trackers.get(&id).is_some_and(|t| t.mode.noloop);
            let keys: Vec<Bytes> = changed
                .into_iter()
                .filter(|(_, by)| !(noloop && *by == id))
                .map(|(key, _)| key)
                .collect();
            if !keys.is_empty() {
                self.message_for(id, Payload::Keys(&keys), out);
            }
        }
    }

    /// Redis's `trackingLimitUsedSlots`.
    fn limit_table(&mut self, out: &mut Vec<Delivery>) {
        if self.max_keys == 0 {
            return;
        }
        for _ in 0..MAX_KEYS_EVICTED_PER_CALL {
            if self.table.len() as u64 <= self.max_keys {
                return;
            }
            let Some(key) = self.table.keys().next().cloned() else {
                return;
            };
            // Not a change by anyone: no prefix collects it, no client is "me".
            let ids = self.table.remove(&key).unwrap_or_default();
            self.items -= ids.len();
            for id in ids {
                if self.trackers.get(&id).is_some_and(|t| !t.mode.bcast) {
                    self.message_for(id, Payload::Keys(std::slice::from_ref(&key)), out);
                }
            }
        }
    }

    /// Redis's `sendTrackingMessage`: the bytes for the client that receives tracking
    /// client `id`'s messages, if any can be sent.
    fn message_for(&mut self, id: u64, payload: Payload<'_>, out: &mut Vec<Delivery>) {
        let Some(tracker) = self.trackers.get(&id) else {
            return;
        };
        let own_proto = proto_of(&tracker.handle);
        let target = match (tracker.redirect, &tracker.redirect_to) {
            (0, _) => tracker.handle.clone(),
            (_, Some(to)) => to.clone(),
            (redirect, None) => {
                tracker.handle.tracking.broken_redirect.store(true, Relaxed);
                if own_proto == Proto::Resp3 {
                    let mut buf = BytesMut::new();
                    let mut reply = ReplyBuf::new(&mut buf, Proto::Resp3);
                    reply.push(2);
                    reply.bulk(b"tracking-redir-broken");
                    reply.integer(redirect as i64);
                    out.push(Delivery {
                        to: tracker.handle.clone(),
                        bytes: buf.freeze(),
                    });
                }
                return;
            }
        };
        let target_proto = proto_of(&target);
        let mut buf = BytesMut::new();
        let mut reply = ReplyBuf::new(&mut buf, target_proto);
        if target_proto == Proto::Resp3 {
            reply.push(2);
            reply.bulk(b"invalidate");
        } else if tracker.redirect != 0 && target.pubsub.is_subscriber() {
            reply.array(3);
            reply.bulk(b"message");
            reply.bulk(INVALIDATE_CHANNEL);
        } else {
            // RESP2 has no pushes on the client's own connection.
            return;
        }
        match payload {
            Payload::Keys(keys) => {
                reply.array(keys.len());
                keys.iter().for_each(|key| reply.bulk(key));
            }
            // The null is written in the tracking client's protocol, as Redis does.
            Payload::All => ReplyBuf::new(&mut buf, own_proto).null(),
        }
        out.push(Delivery {
            to: target,
            bytes: buf.freeze(),
        });
    }

    /// INFO: `tracking_clients`.
    pub fn clients(&self) -> usize {
        self.trackers.len()
    }

    /// INFO: `tracking_total_keys`, `tracking_total_items`, `tracking_total_prefixes`.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.table.len(), self.items, self.prefixes.len())
    }
}

fn proto_of(handle: &ClientHandle) -> Proto {
    if handle.resp.load(Relaxed) == 3 {
        Proto::Resp3
    } else {
        Proto::Resp2
    }
}

/// The keys a database changed during a command, for the tracking table (recorded only while
/// [`Tracking::active`]). Write lookups count once the database's `dirty` counter moved, as
/// for WATCH.
#[derive(Default)]
pub struct ModifiedKeys {
    pub(super) on: bool,
    pub(super) keys: Vec<Bytes>,
    /// The database was emptied.
    pub(super) flushed: bool,
    lookups: Vec<Bytes>,
    lookups_since_dirty: u64,
}

impl ModifiedKeys {
    pub(super) fn changed(&mut self, key: &[u8]) {
        if self.on {
            self.keys.push(Bytes::copy_from_slice(key));
        }
    }

    pub(super) fn write_lookup(&mut self, key: &[u8], dirty: u64) {
        if self.on {
            if self.lookups.is_empty() {
                self.lookups_since_dirty = dirty;
            }
            self.lookups.push(Bytes::copy_from_slice(key));
        }
    }

    pub(super) fn settle(&mut self, dirty: u64) {
        if self.lookups.is_empty() {
            return;
        }
        let lookups = std::mem::take(&mut self.lookups);
        if dirty > self.lookups_since_dirty {
            self.keys.extend(lookups);
        }
    }

    pub(super) fn has_pending(&self) -> bool {
        !self.lookups.is_empty()
    }
}

impl super::Keyspace {
    /// Sends the invalidations the changes of the command that just ran call for; those for
    /// the running client `me` wait for [`Keyspace::flush_tracking`].
    pub(super) fn invalidate_changed(&mut self, me: u64, my_out: &mut BytesMut) {
        if !self.modified_recording {
            return;
        }
        let mut deliveries = Vec::new();
        // FLUSHALL empties every database but sends one message.
        let mut flushed = false;
        for index in 0..self.dbs.len() {
            let changed = &mut self.dbs[index].modified;
            if changed.keys.is_empty() && !changed.flushed {
                continue;
            }
            let keys = std::mem::take(&mut changed.keys);
            flushed |= std::mem::take(&mut changed.flushed);
            for key in &keys {
                self.tracking.invalidate(key, me, &mut deliveries);
            }
        }
        if flushed {
            self.tracking.flushed(me, &mut deliveries);
        }
        self.deliver(deliveries, me, my_out);
        if !self.tracking.active() {
            // Recording stops everywhere at once, so the next commands skip this loop.
            for db in &mut self.dbs {
                db.modified = ModifiedKeys::default();
            }
            self.modified_recording = false;
        }
    }

    /// Invalidates `key` as changed by no client (eviction calls this for each key it
    /// removes, if it removes keys other than through [`super::Db::remove`]).
    pub fn invalidate_key(&mut self, key: &[u8]) {
        let mut deliveries = Vec::new();
        self.tracking
            .invalidate(&Bytes::copy_from_slice(key), 0, &mut deliveries);
        self.deliver(deliveries, 0, &mut BytesMut::new());
    }

    /// At the end of a top-level command: the running client's own invalidations (after its
    /// reply), the BCAST messages and the table limit.
    pub fn flush_tracking(&mut self, me: u64, my_out: &mut BytesMut) {
        if self.tracking.idle() {
            return;
        }
        let mut deliveries = Vec::new();
        self.tracking.take_pending(me, &mut deliveries);
        self.deliver(deliveries, me, my_out);
    }

    fn deliver(&self, deliveries: Vec<Delivery>, me: u64, my_out: &mut BytesMut) {
        for Delivery { to, bytes } in deliveries {
            if to.id == me {
                let start = my_out.len();
                my_out.extend_from_slice(&bytes);
                self.pubsub.note_own_push(start..my_out.len());
            } else if !to.killed.load(Relaxed) {
                to.deliver(bytes);
            }
        }
    }
}
