//! One client connection: decode requests, route them, and write replies in request order.
//!
//! Requests are dispatched as soon as they are decoded, so a client pipeline stays a
//! pipeline through the proxy; each dispatched request leaves a [`Pending`] in a FIFO, and the
//! session writes replies from the front as they complete, gathering all that are ready into
//! one write. Stateful commands (transactions, blocking commands, subscriptions) first let
//! the FIFO drain, then run inline.
//!
//! Metrics: each FIFO entry carries a [`Timing`] (the command's table id and the dispatch
//! instant, one clock read per decoded batch); when its reply is taken from the FIFO, the
//! worker's counters record the call, an error reply, and the latency (one clock read per
//! batch of ready replies).

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::answered_here::{self, ClientState, LocalReply, ReplyMode};
use super::batch::Batcher;
use super::clients::ClientHandle;
use super::fanout;
use super::forward::{error_reply, send_to_node, Pending};
use super::pubsub::{Event, PubSub};
use super::router::{self, Route};
use super::stats::Stats;
use super::transaction::Transaction;
use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::metrics::workers::unknown_command;
use crate::metrics::{Timing, WorkerStats};
use crate::resp::{request_bytes, Limits, Proto, RequestDecoder};

/// Requests in flight per client before the session stops reading more.
const MAX_PENDING: usize = 1024;

/// Replies gathered for a client that are written even though some of its pipeline is
/// still waiting for a node.
const FLUSH_AT: usize = 16 * 1024;

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

/// The client's socket, its buffers and the requests decoded but not yet dispatched.
pub struct ClientIo {
    read: OwnedReadHalf,
    write: OwnedWriteHalf,
    input: BytesMut,
    /// How much the last read reserved: the input buffer is given back while the client
    /// is idle, and a client that sends large pipelines gets large reads again at once.
    input_hint: usize,
    pub output: BytesMut,
    decoder: RequestDecoder,
    requests: VecDeque<Vec<Bytes>>,
    protocol_error: Option<String>,
    /// Decoding stopped after one request because the client had not authenticated: the
    /// rest of the input is decoded once that request has run (with the limits its AUTH
    /// leaves), as Redis checks each request of a pipeline in turn.
    undecoded: bool,
    proxy: Arc<Proxy>,
}

impl ClientIo {
    /// Reads what the client sent and decodes it. False when the client is gone.
    pub async fn read_more(&mut self) -> bool {
        self.reserve_input();
        let read = self.read.read_buf(&mut self.input).await;
        self.take_read(read)
    }

    /// Makes room for the next read.
    fn reserve_input(&mut self) {
        // Start small and grow with what the client sends: thousands of idle clients must
        // not each pin a large buffer.
        if self.input.capacity() == self.input.len() {
            let want = self
                .input
                .capacity()
                .max(self.input_hint)
                .clamp(512, 64 * 1024);
            self.input_hint = want;
            self.input.reserve(want);
        }
    }

    /// Gives back the buffers of a client with nothing in progress: thousands of idle
    /// clients then cost their session state only (a read allocates again when bytes come).
    fn release_buffers(&mut self) {
        if self.input.is_empty() && self.input.capacity() > 0 {
            self.input = BytesMut::new();
        }
        if self.output.is_empty() && self.output.capacity() > 0 {
            self.output = BytesMut::new();
        }
        if self.requests.is_empty() && self.requests.capacity() > 0 {
            self.requests = VecDeque::new();
        }
    }

    /// Takes in what a read brought. False when the client is gone.
    fn take_read(&mut self, read: std::io::Result<usize>) -> bool {
        match read {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                Stats::add(&self.proxy.stats.bytes_in, n as u64);
                self.decode();
                true
            }
        }
    }

    fn decode(&mut self) {
        while self.protocol_error.is_none() {
            match self.decoder.decode(&mut self.input) {
                Ok(Some(args)) => {
                    self.requests.push_back(args);
                    if self.decoder.limits.unauthenticated {
                        self.undecoded = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => self.protocol_error = Some(e.0),
            }
        }
        // A request still arriving may not grow past the limit either.
        let limit = self.proxy.config.load().limits.max_request_bytes;
        let announced = self
            .decoder
            .pending_bulk_bytes(self.input.len())
            .unwrap_or(0);
        let size = self.decoder.partial_bytes() + self.input.len() + announced;
        if size > limit && self.protocol_error.is_none() {
            self.protocol_error = Some(format!(
                "slotproxy: request larger than limits.max_request_bytes ({limit} bytes)"
            ));
        }
    }

    /// Writes what the socket takes now, without waiting; the rest stays in `output`.
    /// False when the client is gone.
    fn write_now(&mut self) -> bool {
        while !self.output.is_empty() {
            match self.write.try_write(&self.output) {
                Ok(0) => return false,
                Ok(n) => {
                    Stats::add(&self.proxy.stats.bytes_out, n as u64);
                    self.output.advance(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        if self.output.is_empty() && self.output.capacity() > 1024 * 1024 {
            self.output = BytesMut::new();
        }
        true
    }

    /// Writes all of `output`, waiting for the client to take it. False when it is gone.
    async fn flush(&mut self) -> bool {
        loop {
            if !self.write_now() {
                return false;
            }
            if self.output.is_empty() {
                return true;
            }
            if self.write.writable().await.is_err() {
                return false;
            }
        }
    }
}

struct Session {
    proxy: Arc<Proxy>,
    client: ClientState,
    /// Replies owed, in request order; `true` marks one CLIENT REPLY silences.
    pending: VecDeque<(Pending, Timing, bool)>,
    /// The command table id of the request `step` last looked at.
    command: usize,
    tx: Transaction,
    /// Created by the first pub/sub command: most clients never subscribe, and an idle
    /// client should not carry an event channel.
    pubsub: Option<Box<PubSub>>,
    blocking_conn: Option<Dedicated>,
    closing: bool,
    /// Requests routed but not yet sent, per node; sent when the decoded batch is dispatched.
    batcher: Batcher,
    /// A stateful request (EXEC, WATCH, a blocking command, a subscription) waiting for the
    /// replies before it to complete. It is stepped once only: stepping it again would run
    /// its checks and counters twice.
    parked: Option<(Route, Vec<Bytes>, Timing, bool)>,
}

/// Moves every reply at the front of the FIFO that is already complete into `output`.
fn drain_ready(
    pending: &mut VecDeque<(Pending, Timing, bool)>,
    output: &mut BytesMut,
    stats: &WorkerStats,
    proxy: &Arc<Proxy>,
) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut now = None;
    while let Some((front, timing, silent)) = pending.front_mut() {
        match front.poll_reply(&mut cx, proxy) {
            Poll::Ready(bytes) => {
                let now = *now.get_or_insert_with(Instant::now);
                stats.record(*timing, &bytes, now);
                if !*silent {
                    output.extend_from_slice(&bytes);
                }
                pending.pop_front();
            }
            Poll::Pending => break,
        }
    }
}

/// Unregisters a client when its session ends, normally or by panic.
struct Registration {
    proxy: Arc<Proxy>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.proxy.clients.unregister(self.id);
    }
}

async fn serve(proxy: Arc<Proxy>, stream: TcpStream, handle: Arc<ClientHandle>, worker: usize) {
    let _registration = Registration {
        proxy: proxy.clone(),
        id: handle.id,
    };
    let config = proxy.config.load_full();
    let (read, write) = stream.into_split();
    let mut io = ClientIo {
        read,
        write,
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
        proxy: proxy.clone(),
    };
    let mut session = Session {
        proxy: proxy.clone(),
        client: ClientState {
            handle: handle.clone(),
            proto: Proto::Resp2,
            authenticated: config.users.is_empty(),
            admin: config.users.is_empty(),
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
    };
    let output_limit = config.limits.client_output_buffer_bytes;
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
        drain_ready(&mut session.pending, &mut io.output, stats, &proxy);
        if io.output.len() > output_limit {
            tracing::info!(
                "closing client {}: output buffer limit reached",
                handle.addr
            );
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
                None => !io.requests.is_empty() && session.pending.len() < MAX_PENDING,
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
            writable = io.write.writable(), if wait_writable => {
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
                        io.output.extend_from_slice(&bytes);
                    }
                }
                // The operation timeout runs from when a reply reaches the front.
                front_since = now;
            }
            event = next_event(&mut session.pubsub, &proxy), if session.subscribed_or_pending() => match event {
                Some(Event::Frame(id, frame)) => {
                    let forward = match session.pubsub.as_mut() {
                        Some(pubsub) => pubsub.observe(id, &frame),
                        None => true,
                    };
                    // CLIENT REPLY OFF silences messages too, as in Redis.
                    if forward && session.client.reply != ReplyMode::Off {
                        io.output.extend_from_slice(&frame);
                    }
                }
                Some(Event::Closed(id)) => {
                    if let Some(pubsub) = session.pubsub.as_mut() {
                        pubsub.closed(id);
                    }
                }
                None => {}
            },
            // Readiness first, then a buffer: an idle client waits without one.
            readable = io.read.readable(), if can_read => {
                if readable.is_err() {
                    break;
                }
                io.reserve_input();
                match io.read.try_read_buf(&mut io.input) {
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
            _ = tick(&mut ticker, check_every), if !session.pending.is_empty() || idle_limit.is_some() => {
                let idle = session.pending.is_empty() && !session.subscribed_or_pending();
                if idle && idle_limit.is_some_and(|limit| last_activity.elapsed() >= limit) {
                    break;
                }
                if session.pending.is_empty() || front_since.elapsed() < operation_timeout {
                    continue;
                }
                Stats::inc(&proxy.stats.backend_timeouts);
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

/// The next pub/sub event; never, for a client that has not used pub/sub.
async fn next_event(pubsub: &mut Option<Box<PubSub>>, proxy: &Arc<Proxy>) -> Option<Event> {
    match pubsub {
        Some(pubsub) => pubsub.next_event(proxy).await,
        None => std::future::pending().await,
    }
}

/// The next tick of the session's timeout checks. The ticker is made the first time one
/// is needed (a client that never waited on a node has none), then kept: making a timer
/// for every wait would cost more than the rest of the loop.
async fn tick(ticker: &mut Option<tokio::time::Interval>, every: Duration) {
    ticker
        .get_or_insert_with(|| {
            let start = tokio::time::Instant::now() + every;
            let mut ticker = tokio::time::interval_at(start, every);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker
        })
        .tick()
        .await;
}

/// How a request is served.
enum Step {
    /// Leaves a pending reply in the FIFO.
    Queue(Pending),
    /// Needs the FIFO drained first, then runs inline.
    Inline(Route),
}

impl Session {
    /// Whether pub/sub events may come (subscriptions, or their confirmations pending).
    fn subscribed_or_pending(&self) -> bool {
        self.pubsub.as_ref().is_some_and(|p| p.is_active())
    }

    /// Dispatches decoded requests until one must wait. False when the client is gone.
    /// `proxy` is the serve loop's own handle: cloning `self.proxy` here, once per batch,
    /// would write the shared reference count from every worker.
    async fn dispatch_queued(&mut self, io: &mut ClientIo, proxy: &Arc<Proxy>) -> bool {
        let stats = proxy.metrics.worker(self.client.lane.worker);
        // The client was active: one clock read per batch, not per request.
        self.client.handle.touch();
        // Requests decoded together share one dispatch instant.
        let mut start = None;
        loop {
            if let Some((route, args, timing, silent)) = self.parked.take() {
                // Replies that are already complete (MULTI's +OK, QUEUED, local answers)
                // wake nothing: take them now, or a pipelined `MULTI ... EXEC` would wait
                // for an event that never comes.
                drain_ready(&mut self.pending, &mut io.output, stats, proxy);
                if !self.pending.is_empty() {
                    self.parked = Some((route, args, timing, silent));
                    break;
                }
                self.batcher.flush();
                if !Box::pin(io.flush()).await {
                    return false;
                }
                let mark = io.output.len();
                // Boxed: the stateful paths (EXEC, blocking commands, subscriptions) hold large
                // futures, and unboxed they would size every session's task, idle or not.
                if !Box::pin(self.inline(route, args, io)).await {
                    return false;
                }
                stats.record(timing, io.output.get(mark..).unwrap_or(&[]), Instant::now());
                if silent {
                    io.output.truncate(mark);
                }
                start = None;
                continue;
            }
            if self.closing || self.pending.len() >= MAX_PENDING {
                break;
            }
            let Some(args) = io.requests.pop_front() else {
                break;
            };
            let step = self.step(&args);
            let timing = Timing {
                command: self.command,
                start: *start.get_or_insert_with(Instant::now),
            };
            let silent = self.client.reply.after_command();
            match step {
                Step::Queue(pending) => self.pending.push_back((pending, timing, silent)),
                Step::Inline(route) => self.parked = Some((route, args, timing, silent)),
            }
        }
        self.batcher.flush();
        true
    }

    fn ready(bytes: Bytes) -> Step {
        Step::Queue(Pending::Ready(bytes))
    }

    fn step(&mut self, args: &[Bytes]) -> Step {
        // The name in lower case, on the stack (no allocation per request); a name longer
        // than any command reads as empty and is refused by the look-up below.
        let mut lower = [0u8; 32];
        let name: &[u8] = match lower.get_mut(..args[0].len()) {
            Some(buf) => {
                for (dst, src) in buf.iter_mut().zip(args[0].iter()) {
                    *dst = src.to_ascii_lowercase();
                }
                buf
            }
            None => b"",
        };
        if self.tx.in_multi
            && !matches!(
                name,
                b"exec" | b"discard" | b"multi" | b"watch" | b"quit" | b"reset"
            )
        {
            self.command = router::lookup(args).map_or_else(|_| unknown_command(), |s| s.id);
            return Self::ready(self.tx.queue(&self.proxy, args.to_vec()));
        }
        let spec = match router::lookup(args) {
            Ok(spec) => spec,
            Err(e) => {
                self.command = unknown_command();
                Stats::inc(&self.proxy.stats.errors);
                return Self::ready(error_reply(&e));
            }
        };
        self.command = spec.id;
        self.client.handle.set_last_command(spec);
        if !self.client.authenticated && !matches!(name, b"auth" | b"hello" | b"quit" | b"reset") {
            return Self::ready(error_reply(crate::protocol::errors::NOAUTH));
        }
        if self.proxy.config.load().denies(name) {
            return Self::ready(error_reply(&router::denied(name)));
        }
        let route = router::route(spec, args);
        if !matches!(route, Route::Slot(_) | Route::AnyMaster | Route::SplitKeys) {
            // Whatever this sends must not overtake the client's batched requests.
            self.batcher.flush();
        }
        if self.client.proto == Proto::Resp2
            && self.pubsub.as_ref().is_some_and(|p| p.subscribed())
            && !matches!(route, Route::PubSub)
        {
            if name == b"ping" {
                let message = args.get(1).cloned().unwrap_or_default();
                let mut buf = BytesMut::new();
                let mut out = crate::resp::ReplyBuf::new(&mut buf, Proto::Resp2);
                out.array(2);
                out.bulk(b"pong");
                out.bulk(&message);
                return Self::ready(buf.freeze());
            }
            if !matches!(name, b"quit" | b"reset") {
                return Self::ready(error_reply(&format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    spec.name
                )));
            }
        }
        let proto = self.client.proto;
        let lane = self.client.lane;
        if let Route::Slot(slot) | Route::Blocking(Some(slot)) = route {
            self.proxy.metrics.worker(lane.worker).slot_op(slot);
        }
        match route {
            Route::Local => {
                match answered_here::handle(&self.proxy, &mut self.client, spec, args) {
                    LocalReply::Now(bytes) => Self::ready(bytes),
                    LocalReply::Later(pending) => Step::Queue(pending),
                    LocalReply::Close(bytes) => {
                        self.closing = true;
                        Self::ready(bytes)
                    }
                    LocalReply::Reset(bytes) => {
                        self.tx.reset();
                        if let Some(pubsub) = self.pubsub.as_mut() {
                            pubsub.reset();
                        }
                        self.blocking_conn = None;
                        Self::ready(bytes)
                    }
                }
            }
            Route::Reject(e) => {
                Stats::inc(&self.proxy.stats.errors);
                Self::ready(error_reply(&e))
            }
            Route::Slot(slot) => Step::Queue(self.batcher.add(
                &self.proxy,
                Some(slot),
                request_bytes(args),
                proto,
                lane,
            )),
            Route::AnyMaster => {
                Step::Queue(
                    self.batcher
                        .add(&self.proxy, None, request_bytes(args), proto, lane),
                )
            }
            Route::PubSubHome => match self.proxy.pubsub_home() {
                Ok(addr) => Step::Queue(send_to_node(
                    &self.proxy,
                    addr,
                    request_bytes(args),
                    proto,
                    lane,
                )),
                Err(e) => Self::ready(error_reply(&e.to_reply())),
            },
            Route::SplitKeys => Step::Queue(fanout::split_keys(
                &self.proxy,
                &mut self.batcher,
                args,
                proto,
                lane,
            )),
            Route::AllMasters(merge) => Step::Queue(fanout::all_masters(
                &self.proxy,
                args.to_vec(),
                merge,
                proto,
                lane,
            )),
            Route::Config => Step::Queue(super::config_command::handle(
                &self.proxy,
                self.client.admin,
                spec,
                args,
                proto,
            )),
            Route::Transaction => match name {
                b"multi" => Self::ready(self.tx.multi()),
                b"discard" => Self::ready(self.tx.discard()),
                b"unwatch" => Self::ready(self.tx.unwatch()),
                _ => Step::Inline(route),
            },
            Route::Blocking(_) | Route::PubSub => Step::Inline(route),
        }
    }

    /// Runs a stateful command with the FIFO empty. False when the client is gone.
    async fn inline(&mut self, route: Route, args: Vec<Bytes>, io: &mut ClientIo) -> bool {
        let proto = self.client.proto;
        match route {
            Route::Transaction if args[0].eq_ignore_ascii_case(b"watch") => {
                let reply = self.tx.watch(&self.proxy, &args, proto).await;
                io.output.extend_from_slice(&reply);
            }
            Route::Transaction => {
                let reply = self.tx.exec(&self.proxy, proto).await;
                io.output.extend_from_slice(&reply);
            }
            Route::Blocking(slot) => {
                match super::blocking::run(
                    &self.proxy,
                    slot,
                    request_bytes(&args),
                    proto,
                    io,
                    &mut self.blocking_conn,
                )
                .await
                {
                    Ok(reply) => io.output.extend_from_slice(&reply),
                    Err(super::blocking::Interrupted::ClientGone) => return false,
                }
            }
            Route::PubSub => {
                let pubsub = self.pubsub.get_or_insert_with(Box::default);
                for frame in pubsub.command(&self.proxy, &args, proto).await {
                    io.output.extend_from_slice(&frame);
                }
            }
            _ => {}
        }
        true
    }
}
