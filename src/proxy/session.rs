//! One client connection: decode requests, route them, and write replies in request order.
//!
//! Requests are dispatched as soon as they are decoded, so a client pipeline stays a
//! pipeline through the proxy; each dispatched request leaves a [`Pending`] in a FIFO, and the
//! session writes replies from the front as they complete, gathering all that are ready into
//! one write. Stateful commands (transactions, blocking commands, subscriptions) first let
//! the FIFO drain, then run inline.
//!
//! Where the parts are: [`super::listener`] accepts clients and hands them to workers;
//! [`super::client_io`] holds the socket and buffers; this file is the session loop (reads,
//! replies, timeouts, pub/sub events); [`super::dispatch`] decides how each request is
//! served.
//!
//! Metrics: each FIFO entry carries a [`Timing`] (the command's table id and the dispatch
//! instant, one clock read per decoded batch); when its reply is taken from the FIFO, the
//! worker's counters record the call, an error reply, and the latency (one clock read per
//! batch of ready replies).

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::net::TcpStream;

use super::answered_here::{ClientState, ReplyMode};
use super::batch::Batcher;
use super::client_io::ClientIo;
use super::clients::ClientHandle;
use super::forward::{error_reply, Pending};
use super::pubsub::{Event, PubSub, Wake};
use super::router::Route;
use super::stats::Stats;
use super::transaction::Transaction;
use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::backend::Lane;
use crate::metrics::workers::unknown_command;
use crate::metrics::{Timing, WorkerStats};
use crate::resp::{Limits, Proto, RequestDecoder};

/// Requests in flight per client before the session stops reading more.
pub(super) const MAX_PENDING: usize = 1024;

/// Requests in flight for a client that is behind: one that leaves at least [`FLUSH_AT`]
/// bytes of replies unread. Its replies in flight are memory the output limit does not see
/// (a node's reply waits in its read buffer until it is copied to the client's output), so
/// such a client gets a small window: 1024 replies of 512 bytes held for each of 100 slow
/// readers were some 50 MB over `limits.client_output_buffer_bytes` x clients.
pub(super) const MAX_PENDING_BEHIND: usize = 32;

/// The requests a client may have in flight now (see [`MAX_PENDING_BEHIND`]).
pub(super) fn pending_window(output: &BytesMut) -> usize {
    if output.len() >= FLUSH_AT {
        MAX_PENDING_BEHIND
    } else {
        MAX_PENDING
    }
}

/// Replies gathered for a client that are written even though some of its pipeline is
/// still waiting for a node.
pub(super) const FLUSH_AT: usize = 16 * 1024;

pub(super) struct Session {
    pub(super) proxy: Arc<Proxy>,
    pub(super) client: ClientState,
    /// Replies owed, in request order; `true` marks one CLIENT REPLY silences.
    pub(super) pending: VecDeque<(Pending, Timing, bool)>,
    /// The command table id of the request `step` last looked at.
    pub(super) command: usize,
    pub(super) tx: Transaction,
    /// Created by the first pub/sub command: most clients never subscribe, and an idle
    /// client should not carry an event channel.
    pub(super) pubsub: Option<Box<PubSub>>,
    /// Kept between blocking commands (boxed: every client carries this state).
    pub(super) blocking_conn: Option<Box<Dedicated>>,
    pub(super) closing: bool,
    /// Requests routed but not yet sent, per node; sent when the decoded batch is dispatched.
    pub(super) batcher: Batcher,
    /// A request waiting for the replies before it to complete.
    pub(super) parked: Option<Parked>,
    /// The masters this client's writes went to, for WAIT.
    pub(super) writes: super::wait::Writes,
}

/// Why a request waits for the replies before it.
pub(super) enum Parked {
    /// A stateful request (EXEC, WATCH, a blocking command, a subscription), to run inline.
    /// It is stepped once only: stepping it again would run its checks and counters twice.
    Inline(Route, Vec<Bytes>, Timing, bool),
    /// A subscribed client's request, not stepped yet: the messages its subscription
    /// connections received first go out before it (see `PubSub::barrier`).
    Barrier(Vec<Bytes>),
}

/// Moves every reply at the front of the FIFO that is already complete into `output`.
/// False when a reply would take `output` past `limit` (the client is then disconnected):
/// checked before the copy, so the buffer is never grown, and copied, past the limit.
pub(super) fn drain_ready(
    pending: &mut VecDeque<(Pending, Timing, bool)>,
    output: &mut BytesMut,
    limit: usize,
    stats: &WorkerStats,
    proxy: &Arc<Proxy>,
) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let mut now = None;
    while let Some((front, timing, silent)) = pending.front_mut() {
        match front.poll_reply(&mut cx, proxy) {
            Poll::Ready(bytes) => {
                let now = *now.get_or_insert_with(Instant::now);
                stats.record(*timing, &bytes, now);
                if !*silent {
                    if output.len() + bytes.len() > limit {
                        return false;
                    }
                    output.extend_from_slice(&bytes);
                }
                pending.pop_front();
            }
            Poll::Pending => break,
        }
    }
    true
}

/// Logs why a client is disconnected for its unread replies.
pub(super) fn over_output_limit(handle: &ClientHandle) {
    tracing::info!(
        "closing client {}: output buffer limit reached",
        handle.addr
    );
}

/// Unregisters a client when its session ends, normally or by panic.
struct Registration {
    proxy: Arc<Proxy>,
    id: u64,
    lane: Lane,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.proxy.clients.unregister(self.id);
        // Redirect notes no WAIT took.
        let _ = self.proxy.wait_notes.take(self.lane);
    }
}

pub(super) async fn serve(
    proxy: Arc<Proxy>,
    stream: TcpStream,
    handle: Arc<ClientHandle>,
    worker: usize,
) {
    let config = proxy.config.load_full();
    let mut io = ClientIo {
        stream,
        input: BytesMut::new(),
        input_hint: 0,
        output: BytesMut::new(),
        // Redis's own bulk limit applies (and its tighter ones before AUTH); the
        // whole-request limit is checked in `decode`.
        decoder: RequestDecoder::sharing_arguments(Limits {
            unauthenticated: !config.users.is_empty(),
            ..Limits::default()
        }),
        requests: VecDeque::new(),
        protocol_error: None,
        undecoded: false,
        output_limit: config.limits.client_output_buffer_bytes,
        proxy: proxy.clone(),
    };
    let mut session = Session {
        proxy: proxy.clone(),
        client: ClientState {
            handle: handle.clone(),
            proto: Proto::Resp2,
            authenticated: config.users.is_empty(),
            admin: config.users.is_empty(),
            user: None,
            lane: proxy.assign_lane(worker),
            reply: ReplyMode::On,
        },
        pending: VecDeque::new(),
        command: unknown_command(),
        tx: Transaction::default(),
        pubsub: None,
        blocking_conn: None,
        closing: false,
        batcher: Batcher::default(),
        parked: None,
        writes: Default::default(),
    };
    let _registration = Registration {
        proxy: proxy.clone(),
        id: handle.id,
        lane: session.client.lane,
    };
    let output_limit = io.output_limit;
    let stats = proxy.metrics.worker(worker);
    // One ticker per session checks the operation and idle timeouts, and one kill
    // notification lives for the whole session: creating a timer or a waiter on every loop
    // turn (that is, for every reply) costs more than the rest of the loop. The ticker is
    // made the first time one is needed, and anew only when a reload changes the operation
    // timeout.
    let (mut operation_timeout, _) = Timeouts::read(&proxy);
    let mut check_every = Timeouts::check_every(operation_timeout);
    let mut ticker = None;
    let mut front_since = Instant::now();
    let mut last_activity = Instant::now();
    let kill = handle.kill.notified();
    tokio::pin!(kill);
    loop {
        // `timeouts.operation_ms` and `timeouts.idle_secs` are live settings (SIGHUP): read
        // once per turn (an arc-swap load), so they apply to connected clients too.
        let (operation, idle_limit) = Timeouts::read(&proxy);
        if operation != operation_timeout {
            operation_timeout = operation;
            check_every = Timeouts::check_every(operation_timeout);
            ticker = None;
        }
        if !session.dispatch_queued(&mut io, &proxy).await {
            break;
        }
        // Before AUTH, Redis's pre-auth limits (a multibulk of at most 10 arguments, bulks
        // of at most 16384 bytes) apply to each request as it is read.
        io.decoder.limits.unauthenticated = !session.client.authenticated;
        if io.undecoded && io.requests.is_empty() && session.parked.is_none() {
            io.undecoded = false;
            io.decode();
            if !io.requests.is_empty() {
                continue;
            }
        }
        let within_limit = drain_ready(
            &mut session.pending,
            &mut io.output,
            output_limit,
            stats,
            &proxy,
        );
        if !within_limit || io.output.len() > output_limit {
            over_output_limit(&handle);
            break;
        }
        if io.requests.is_empty() {
            if let Some(e) = io.protocol_error.take() {
                io.output
                    .extend_from_slice(&error_reply(&format!("ERR {e}")));
                session.closing = true;
            }
        }
        // Replies go out once the client's whole pipeline is answered (as Redis writes a
        // batch's replies together), or once enough has gathered: a pipeline spread over
        // several nodes then costs the client one write, not one per node.
        // A client that does not read its replies does not stop the session: what the
        // socket does not take waits in `output` while the session goes on reading and
        // answering, until `limits.client_output_buffer_bytes` disconnects the client.
        let answered =
            session.pending.is_empty() && io.requests.is_empty() && session.parked.is_none();
        let write = answered || io.output.len() >= FLUSH_AT;
        if write && !io.write_now() {
            break;
        }
        if session.closing && session.pending.is_empty() {
            // The last replies (QUIT's +OK, a protocol error) leave before the close, for
            // as long as the client takes them within the operation timeout.
            // (Boxed, as this runs once per client: a timer inline would size every task.)
            let _ = Box::pin(tokio::time::timeout(operation_timeout, io.flush())).await;
            break;
        }
        // drain_ready may just have taken the replies the next requests waited for: a
        // parked request with the FIFO now empty, or decoded requests with room again under
        // MAX_PENDING. Nothing would wake the session for them (no reply pending, no read
        // allowed, and a node's replies can complete on another thread meanwhile), so
        // dispatch them now.
        let stalled = !session.closing
            && match session.parked {
                Some(_) => session.pending.is_empty(),
                None => {
                    !io.requests.is_empty() && session.pending.len() < pending_window(&io.output)
                }
            };
        if stalled {
            continue;
        }
        let wait_writable = write && !io.output.is_empty();
        let can_read = !session.closing
            && io.requests.is_empty()
            && session.parked.is_none()
            && io.protocol_error.is_none();
        if session.pending.is_empty() && io.requests.is_empty() && session.parked.is_none() {
            io.release_buffers();
            if session.pending.capacity() > 0 {
                session.pending = VecDeque::new();
            }
        }
        tokio::select! {
            _ = &mut kill => break,
            // Readiness by polls, not by `readable()`/`writable()` futures: each of those is
            // a waiter of some 100 bytes that every idle client's task would carry.
            writable = std::future::poll_fn(|cx| io.stream.poll_write_ready(cx)), if wait_writable => {
                if writable.is_err() {
                    break;
                }
            }
            bytes = std::future::poll_fn(|cx| match session.pending.front_mut() {
                Some((front, _, _)) => front.poll_reply(cx, &proxy),
                None => Poll::Pending,
            }), if !session.pending.is_empty() => {
                let now = Instant::now();
                if let Some((_, timing, silent)) = session.pending.pop_front() {
                    stats.record(timing, &bytes, now);
                    if !silent {
                        if io.output.len() + bytes.len() > output_limit {
                            over_output_limit(&handle);
                            break;
                        }
                        io.output.extend_from_slice(&bytes);
                    }
                }
                // The operation timeout runs from when a reply reaches the front.
                front_since = now;
            }
            wake = std::future::poll_fn(|cx| match session.pubsub.as_mut() {
                Some(pubsub) => pubsub.poll_next(cx),
                None => Poll::Pending,
            }), if session.subscribed_or_pending() => match wake {
                Wake::Event(Some(Event::Frame(id, frame))) => {
                    let forward = match session.pubsub.as_mut() {
                        Some(pubsub) => pubsub.observe(id, frame),
                        None => Some(frame),
                    };
                    // Messages are pushes: CLIENT REPLY OFF does not silence them, as in
                    // Redis 7.0.
                    if let Some(frame) = forward {
                        io.output.extend_from_slice(&frame);
                    }
                }
                Wake::Event(Some(Event::Closed(id))) => {
                    if let Some(pubsub) = session.pubsub.as_mut() {
                        pubsub.closed(id);
                    }
                }
                Wake::Event(None) => {}
                Wake::CheckTopology => {
                    if let Some(pubsub) = session.pubsub.as_mut() {
                        // Boxed: opening mirror connections makes this future large, and
                        // unboxed it would size every client's task.
                        Box::pin(pubsub.follow_topology(&proxy)).await;
                    }
                }
            },
            // Readiness first, then a buffer: an idle client waits without one.
            readable = std::future::poll_fn(|cx| io.stream.poll_read_ready(cx)), if can_read => {
                if readable.is_err() {
                    break;
                }
                io.reserve_input();
                match io.stream.try_read_buf(&mut io.input) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    read => {
                        if !io.take_read(read) {
                            break;
                        }
                    }
                }
                last_activity = Instant::now();
                if session.pending.is_empty() {
                    front_since = last_activity;
                }
            }
            _ = std::future::poll_fn(|cx| poll_tick(&mut ticker, check_every, cx)), if !session.pending.is_empty() || idle_limit.is_some() => {
                let idle = session.pending.is_empty() && !session.subscribed_or_pending();
                if idle && idle_limit.is_some_and(|limit| last_activity.elapsed() >= limit) {
                    break;
                }
                if session.pending.is_empty() || front_since.elapsed() < operation_timeout {
                    continue;
                }
                Stats::inc(&proxy.stats.backend_timeouts);
                // A node that stopped answering may have been failed over.
                proxy.request_refresh();
                let reply = error_reply(&format!(
                    "ERR slotproxy: backend did not answer within {} ms",
                    operation_timeout.as_millis()
                ));
                if let Some((front, timing, silent)) = session.pending.pop_front() {
                    proxy.metrics.timeout(front.addr());
                    stats.record(timing, &reply, Instant::now());
                    if !silent {
                        io.output.extend_from_slice(&reply);
                    }
                }
                front_since = Instant::now();
            }
        }
    }
}

/// The session's live timeouts.
struct Timeouts;

impl Timeouts {
    /// The operation timeout, and the idle limit if one is set.
    fn read(proxy: &Proxy) -> (Duration, Option<Duration>) {
        let config = proxy.config.load();
        let idle = config.timeouts.idle_secs;
        (
            Duration::from_millis(config.timeouts.operation_ms.max(1)),
            (idle > 0).then(|| Duration::from_secs(idle)),
        )
    }

    /// Often enough to notice a timeout within a quarter of it.
    fn check_every(operation_timeout: Duration) -> Duration {
        (operation_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// The next tick of the session's timeout checks. The ticker is made the first time one
/// is needed (a client that never waited on a node has none), then kept: making a timer
/// for every wait would cost more than the rest of the loop.
fn poll_tick(
    ticker: &mut Option<tokio::time::Interval>,
    every: Duration,
    cx: &mut Context<'_>,
) -> Poll<()> {
    ticker
        .get_or_insert_with(|| {
            let start = tokio::time::Instant::now() + every;
            let mut ticker = tokio::time::interval_at(start, every);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker
        })
        .poll_tick(cx)
        .map(|_| ())
}
