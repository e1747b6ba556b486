//! How each decoded request is served: answered at once, queued behind the client's other
//! requests (a node's reply, a fan-out, a batch), or parked until the FIFO drains and then
//! run inline (transactions, blocking commands, subscriptions).

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::answered_here::{self, LocalReply};
use super::client_io::ClientIo;
use super::fanout;
use super::forward::{error_reply, send_to_node, Pending};
use super::router::{self, Route};
use super::session::{drain_ready, over_output_limit, pending_window, Parked, Session};
use super::stats::Stats;
use super::Proxy;
use crate::cluster::{key_slot, CommandFlags, CommandSpec};
use crate::metrics::workers::unknown_command;
use crate::metrics::Timing;
use crate::resp::{request_bytes, Proto};

/// How a request is served.
enum Step {
    /// Leaves a pending reply in the FIFO.
    Queue(Pending),
    /// Needs the FIFO drained first, then runs inline.
    Inline(Route),
}

impl Session {
    /// Whether pub/sub events may come (subscriptions, or their confirmations pending).
    pub(super) fn subscribed_or_pending(&self) -> bool {
        self.pubsub.as_ref().is_some_and(|p| p.is_active())
    }

    /// Dispatches decoded requests until one must wait. False when the client is gone.
    /// `proxy` is the serve loop's own handle: cloning `self.proxy` here, once per batch,
    /// would write the shared reference count from every worker.
    pub(super) async fn dispatch_queued(&mut self, io: &mut ClientIo, proxy: &Arc<Proxy>) -> bool {
        let stats = proxy.metrics.worker(self.client.lane.worker);
        // The client was active: one clock read per batch, not per request.
        self.client.handle.touch();
        // Requests decoded together share one dispatch instant.
        let mut start = None;
        loop {
            if let Some(parked) = self.parked.take() {
                // Replies that are already complete (MULTI's +OK, QUEUED, local answers)
                // wake nothing: take them now, or a pipelined `MULTI ... EXEC` would wait
                // for an event that never comes.
                if !drain_ready(
                    &mut self.pending,
                    &mut io.output,
                    io.output_limit,
                    stats,
                    proxy,
                ) {
                    over_output_limit(&self.client.handle);
                    return false;
                }
                if !self.pending.is_empty() {
                    self.parked = Some(parked);
                    break;
                }
                self.batcher.flush();
                // Boxed, with the parked request inside: held across its awaits in this
                // function, the request and its route would size every session's task.
                if !Box::pin(self.run_parked(parked, io, proxy, &mut start)).await {
                    return false;
                }
                continue;
            }
            if self.closing || self.pending.len() >= pending_window(&io.output) {
                break;
            }
            let Some(args) = io.requests.pop_front() else {
                break;
            };
            if self.pubsub.as_ref().is_some_and(|p| p.subscribed()) {
                self.parked = Some(Parked::Barrier(args));
                continue;
            }
            self.step_and_queue(args, &mut start);
        }
        self.batcher.flush();
        true
    }

    /// Runs a parked request once the replies before it are out. False when the client
    /// is gone.
    async fn run_parked(
        &mut self,
        parked: Parked,
        io: &mut ClientIo,
        proxy: &Arc<Proxy>,
        start: &mut Option<Instant>,
    ) -> bool {
        let stats = proxy.metrics.worker(self.client.lane.worker);
        match parked {
            Parked::Inline(route, args, timing, silent) => {
                if !Box::pin(io.flush()).await {
                    return false;
                }
                let mark = io.output.len();
                // Subscription confirmations are pushes: CLIENT REPLY does not
                // silence them (see `inline`).
                let pushes = matches!(route, Route::PubSub);
                // Boxed: the stateful paths (EXEC, blocking commands, subscriptions)
                // hold large futures, and unboxed they would size every session's
                // task, idle or not.
                if !Box::pin(self.inline(route, args, io, silent)).await {
                    return false;
                }
                stats.record(timing, io.output.get(mark..).unwrap_or(&[]), Instant::now());
                if silent && !pushes {
                    io.output.truncate(mark);
                }
                *start = None;
            }
            Parked::Barrier(args) => {
                if let Some(pubsub) = self.pubsub.as_mut() {
                    Box::pin(pubsub.barrier(proxy, &mut io.output)).await;
                }
                self.step_and_queue(args, start);
                // After HELLO, what the subscriptions deliver is in the new protocol.
                let proto = self.client.proto;
                if let Some(pubsub) = self.pubsub.as_mut() {
                    pubsub.follow_protocol(proto);
                }
            }
        }
        true
    }

    /// Steps a request and queues its reply or parks it to run inline.
    fn step_and_queue(&mut self, args: Vec<Bytes>, start: &mut Option<Instant>) {
        let step = self.step(&args);
        let timing = Timing {
            command: self.command,
            start: *start.get_or_insert_with(Instant::now),
        };
        let silent = self.client.reply.after_command();
        match step {
            Step::Queue(pending) => self.pending.push_back((pending, timing, silent)),
            Step::Inline(route) => self.parked = Some(Parked::Inline(route, args, timing, silent)),
        }
    }

    fn ready(bytes: Bytes) -> Step {
        Step::Queue(Pending::Ready(bytes))
    }

    /// The reply to a request refused before it is routed (arity, NOAUTH). A refused EXEC
    /// discards the transaction and answers `EXECABORT`, in MULTI or not, as Redis does.
    fn refuse(&mut self, name: &[u8], error: &str) -> Bytes {
        if name == b"exec" {
            self.tx.reset();
            return error_reply(&crate::protocol::errors::exec_refused(error));
        }
        error_reply(error)
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
                return Self::ready(self.refuse(name, &e));
            }
        };
        self.command = spec.id;
        self.client.handle.set_last_command(spec);
        if !self.client.authenticated && !matches!(name, b"auth" | b"hello" | b"quit" | b"reset") {
            return Self::ready(self.refuse(name, crate::protocol::errors::NOAUTH));
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
            // PING with too many arguments falls through to its arity error.
            if name == b"ping" && args.len() <= 2 {
                let message = args.get(1).cloned().unwrap_or_default();
                let mut buf = BytesMut::new();
                let mut out = crate::resp::ReplyBuf::new(&mut buf, Proto::Resp2);
                out.array(2);
                out.bulk(b"pong");
                out.bulk(&message);
                return Self::ready(buf.freeze());
            }
            if !matches!(name, b"quit" | b"reset" | b"ping") {
                return Self::ready(error_reply(&format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    spec.name
                )));
            }
        }
        let proto = self.client.proto;
        let lane = self.client.lane;
        // Reads need no note: WAIT counts the replicas that have a client's writes.
        let may_write = !spec.flags.contains(CommandFlags::READONLY);
        if let Some(pending) =
            super::split_bloom::route(&self.proxy, &mut self.batcher, name, args, proto, lane)
        {
            // A split filter's parts are on every master.
            if may_write {
                self.writes.note_all(&self.proxy.topology.load());
            }
            return Step::Queue(pending);
        }
        if let Route::Slot(slot) | Route::Blocking(Some(slot)) = route {
            self.proxy.metrics.worker(lane.worker).slot_op(slot);
        }
        if may_write {
            self.note_writes(spec, &route, args);
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
            Route::Slot(slot) => {
                let request = request_bytes(args);
                if !may_write {
                    let user = self.client.user.as_deref();
                    if let Some(read) =
                        super::read_from::route(&self.proxy, user, slot, &request, proto, lane)
                    {
                        return Step::Queue(read);
                    }
                }
                Step::Queue(
                    self.batcher
                        .add(&self.proxy, Some(slot), request, proto, lane),
                )
            }
            Route::AnyMaster => {
                let pending = self
                    .batcher
                    .add(&self.proxy, None, request_bytes(args), proto, lane);
                if may_write {
                    let topology = self.proxy.topology.load();
                    match pending.addr() {
                        Some(addr) => self.writes.note_addr(&topology, addr),
                        None => self.writes.note_all(&topology),
                    }
                }
                Step::Queue(pending)
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
            Route::Blocking(_) | Route::PubSub | Route::Wait => Step::Inline(route),
        }
    }

    /// Notes the master(s) a request that may write goes to, for WAIT (see
    /// [`super::wait`]); where the master is only known once sent (any master, after a
    /// redirect, a transaction's or blocking command's node) it is noted there.
    fn note_writes(&mut self, spec: &CommandSpec, route: &Route, args: &[Bytes]) {
        let topology = self.proxy.topology.load();
        match route {
            Route::Slot(slot) | Route::Blocking(Some(slot)) => {
                self.writes.note_slot(&topology, *slot)
            }
            Route::SplitKeys => {
                if let Ok(indexes) = spec.routing_key_indexes(args) {
                    for i in indexes {
                        self.writes.note_slot(&topology, key_slot(&args[i]));
                    }
                }
            }
            Route::AllMasters(_) => self.writes.note_all(&topology),
            Route::PubSubHome => {
                if let Ok(addr) = self.proxy.pubsub_home() {
                    self.writes.note_addr(&topology, &addr);
                }
            }
            _ => {}
        }
    }

    /// Runs a stateful command with the FIFO empty. False when the client is gone.
    /// `silent`: CLIENT REPLY silences this request's reply; a subscription command's
    /// confirmations are pushes and are written all the same, as Redis 7.0 writes them,
    /// and only its errors are dropped.
    async fn inline(
        &mut self,
        route: Route,
        args: Vec<Bytes>,
        io: &mut ClientIo,
        silent: bool,
    ) -> bool {
        let proto = self.client.proto;
        match route {
            Route::Transaction if args[0].eq_ignore_ascii_case(b"watch") => {
                let reply = self.tx.watch(&self.proxy, &args, proto).await;
                io.output.extend_from_slice(&reply);
            }
            Route::Transaction => {
                if self.tx.holds_wait() {
                    let slot_master = self.tx.slot().and_then(|s| self.proxy.master_addr(s).ok());
                    let lane = self.client.lane;
                    match super::wait::check_multi(
                        &self.proxy,
                        &mut self.writes,
                        lane,
                        slot_master.as_deref(),
                    ) {
                        Ok(Some(addr)) => self.tx.run_keyless_on(addr),
                        Ok(None) => {}
                        Err(e) => {
                            self.tx.reset();
                            io.output.extend_from_slice(&error_reply(
                                &crate::protocol::errors::exec_refused(&e),
                            ));
                            return true;
                        }
                    }
                }
                let (reply, ran_on) = self.tx.exec(&self.proxy, proto).await;
                if let Some(addr) = ran_on {
                    let topology = self.proxy.topology.load();
                    self.writes.note_addr(&topology, &addr);
                }
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
                // The node that answered (after any redirect) ran it.
                if let Some(conn) = self.blocking_conn.as_deref() {
                    let topology = self.proxy.topology.load();
                    self.writes.note_addr(&topology, &conn.addr);
                }
            }
            Route::Wait => {
                let lane = self.client.lane;
                match super::wait::run(
                    &self.proxy,
                    &mut self.writes,
                    lane,
                    request_bytes(&args),
                    proto,
                    io,
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
                    if !(silent && frame.starts_with(b"-")) {
                        io.output.extend_from_slice(&frame);
                    }
                }
            }
            _ => {}
        }
        true
    }
}
