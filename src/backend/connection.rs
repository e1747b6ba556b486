//! A shared, multiplexed connection to one node.
//!
//! Requests from many clients are queued on a channel; a writer task sends everything that is
//! queued in one write, and a reader task matches replies to requests in FIFO order and passes
//! them on as raw bytes. The connection is opened lazily by the writer, so sending never waits.
//!
//! A request may hold several commands (a fan-out's children for one node): its reply is then
//! their replies, back to back, passed on in one piece. The writer hands the reader each
//! write's waiters in one message, so a request costs one channel send on each side, not two.
//!
//! Each connection keeps its own [`ConnStats`] (requests in flight, failures, latency), each
//! counter written by one task only, which the metrics sum per node at scrape time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::error::BackendError;
use super::reply_cap::LiveReplyCap;
use crate::metrics::histogram::{bump, HistogramSnapshot, LatencyHistogram};
use crate::resp::{Proto, ReplyScanner, ScanError};

/// The reply to one request, or why there is none.
pub type ReplyResult = Result<Bytes, BackendError>;

/// One request for the node.
pub struct Outgoing {
    /// The encoded commands.
    pub bytes: Bytes,
    /// How many commands `bytes` holds (so how many replies make the answer).
    pub commands: u32,
    /// Send `ASKING` first (the slot is being imported by this node).
    pub asking: bool,
    pub reply: oneshot::Sender<ReplyResult>,
}

enum Waiter {
    /// The reply to an ASKING prefix, dropped.
    Discard,
    /// `commands` replies to pass on together, and when their batch started to be written.
    Reply {
        tx: oneshot::Sender<ReplyResult>,
        commands: u32,
        started: Instant,
    },
}

/// One connection's request counters. `sent` and `failed_unsent` are written by the writer
/// task only, `answered`, `failed_sent` and `latency` by the reader task only.
#[derive(Debug, Default)]
pub struct ConnStats {
    sent: AtomicU64,
    answered: AtomicU64,
    /// Requests written whose reply never came (connection lost, protocol error).
    failed_sent: AtomicU64,
    /// Requests queued but never written (connect failed, connection gone).
    failed_unsent: AtomicU64,
    /// Replies refused for their size (`limits.max_reply_bytes` / `max_reply_elements`).
    refused: AtomicU64,
    /// Time from the start of the write batch to the reply.
    latency: LatencyHistogram,
    /// Both tasks ended: the counters no longer change.
    finished: AtomicBool,
}

/// Counters of one or more connections to a node, summed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ConnTotals {
    pub requests: u64,
    pub in_flight: u64,
    pub errors: u64,
    /// Replies refused for their size, each of which closed its connection.
    pub refused: u64,
    pub latency: HistogramSnapshot,
}

impl ConnTotals {
    pub fn merge(&mut self, other: &ConnTotals) {
        self.requests += other.requests;
        self.in_flight += other.in_flight;
        self.errors += other.errors;
        self.refused += other.refused;
        self.latency.merge(&other.latency);
    }
}

impl ConnStats {
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// The counters now (`in_flight` is 0 once the connection is finished).
    pub fn totals(&self) -> ConnTotals {
        // Replies before requests, so a reply racing the scrape cannot make in-flight
        // negative.
        let answered = self.answered.load(Ordering::Relaxed);
        let failed_sent = self.failed_sent.load(Ordering::Relaxed);
        let sent = self.sent.load(Ordering::Relaxed);
        let mut latency = HistogramSnapshot::default();
        self.latency.add_to(&mut latency);
        ConnTotals {
            requests: sent,
            in_flight: sent.saturating_sub(answered + failed_sent),
            errors: failed_sent + self.failed_unsent.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            latency,
        }
    }
}

/// Handle to a multiplexed connection.
pub struct BackendConn {
    pub addr: String,
    tx: mpsc::UnboundedSender<Outgoing>,
    alive: Arc<AtomicBool>,
    pub stats: Arc<ConnStats>,
}

impl BackendConn {
    /// Starts a connection to `addr`; it connects in the background. With RESP3 it sends
    /// `HELLO 3` first, so RESP3 clients get replies they can pass through unchanged; with
    /// `readonly`, `READONLY` (a replica then serves reads of its master's slots).
    pub fn open(
        addr: String,
        proto: Proto,
        readonly: bool,
        connect_timeout: Duration,
        reply_cap: Arc<LiveReplyCap>,
    ) -> BackendConn {
        let (tx, rx) = mpsc::unbounded_channel();
        let alive = Arc::new(AtomicBool::new(true));
        let stats = Arc::new(ConnStats::default());
        tokio::spawn(run(
            addr.clone(),
            proto,
            readonly,
            connect_timeout,
            rx,
            alive.clone(),
            stats.clone(),
            reply_cap,
        ));
        BackendConn {
            addr,
            tx,
            alive,
            stats,
        }
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed) && !self.tx.is_closed()
    }

    /// Queues a request and returns where its reply will arrive.
    pub fn send(&self, bytes: Bytes, asking: bool) -> oneshot::Receiver<ReplyResult> {
        let (reply, rx) = oneshot::channel();
        self.queue(Outgoing {
            bytes,
            commands: 1,
            asking,
            reply,
        });
        rx
    }

    /// Queues `commands` encoded commands as one request, answering on a channel the caller
    /// made earlier (a batch hands out its receiver before it is sent); the reply is their
    /// replies back to back, in order.
    pub fn send_prepared(&self, bytes: Bytes, commands: u32, reply: oneshot::Sender<ReplyResult>) {
        self.queue(Outgoing {
            bytes,
            commands: commands.max(1),
            asking: false,
            reply,
        });
    }

    fn queue(&self, outgoing: Outgoing) {
        if let Err(mpsc::error::SendError(outgoing)) = self.tx.send(outgoing) {
            let _ = outgoing.reply.send(Err(BackendError::ConnectionLost {
                addr: self.addr.clone(),
            }));
        }
    }
}

/// Connects, then says what the connection is for: `HELLO 3` for RESP3 clients (so their
/// replies pass through unchanged), `READONLY` for reads served by a replica. Both are
/// sent in one write and both replies read before any request.
async fn connect(
    addr: &str,
    proto: Proto,
    readonly: bool,
    timeout: Duration,
) -> Result<TcpStream, String> {
    let mut stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| "connect timed out".to_string())?
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let mut greeting: Vec<u8> = Vec::new();
    let mut replies = 0;
    if proto == Proto::Resp3 {
        greeting.extend_from_slice(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
        replies += 1;
    }
    if readonly {
        greeting.extend_from_slice(b"*1\r\n$8\r\nREADONLY\r\n");
        replies += 1;
    }
    if replies == 0 {
        return Ok(stream);
    }
    stream
        .write_all(&greeting)
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = BytesMut::with_capacity(1024);
    let mut scanner = ReplyScanner::default();
    while replies > 0 {
        if stream.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
            return Err("closed during the connection's greeting (HELLO, READONLY)".into());
        }
        while let Some(end) = scanner.scan(&buf).map_err(|e| e.to_string())? {
            let reply = buf.split_to(end);
            if reply.first() == Some(&b'-') {
                return Err(String::from_utf8_lossy(&reply).trim().to_string());
            }
            replies -= 1;
            if replies == 0 {
                break;
            }
        }
    }
    Ok(stream)
}

#[allow(clippy::too_many_arguments)]
async fn run(
    addr: String,
    proto: Proto,
    readonly: bool,
    connect_timeout: Duration,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    alive: Arc<AtomicBool>,
    stats: Arc<ConnStats>,
    reply_cap: Arc<LiveReplyCap>,
) {
    let stream = match connect(&addr, proto, readonly, connect_timeout).await {
        Ok(stream) => stream,
        Err(reason) => {
            alive.store(false, Ordering::Relaxed);
            rx.close();
            while let Ok(outgoing) = rx.try_recv() {
                bump(&stats.failed_unsent, 1);
                let _ = outgoing.reply.send(Err(BackendError::Connect {
                    addr: addr.clone(),
                    reason: reason.clone(),
                }));
            }
            stats.finished.store(true, Ordering::Release);
            return;
        }
    };
    let (read_half, write_half) = stream.into_split();
    let (waiters_tx, waiters_rx) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_replies(
        addr.clone(),
        read_half,
        waiters_rx,
        alive.clone(),
        stats.clone(),
        reply_cap,
    ));
    write_requests(&mut rx, write_half, waiters_tx, &stats).await;
    alive.store(false, Ordering::Relaxed);
    rx.close();
    while let Ok(outgoing) = rx.try_recv() {
        bump(&stats.failed_unsent, 1);
        let _ = outgoing
            .reply
            .send(Err(BackendError::ConnectionLost { addr: addr.clone() }));
    }
    let _ = reader.await;
    stats.finished.store(true, Ordering::Release);
}

/// Most bytes gathered into one write.
const MAX_BATCH: usize = 256 * 1024;

async fn write_requests(
    rx: &mut mpsc::UnboundedReceiver<Outgoing>,
    mut socket: OwnedWriteHalf,
    waiters: mpsc::UnboundedSender<Vec<Waiter>>,
    stats: &ConnStats,
) {
    let mut batch = BytesMut::with_capacity(16 * 1024);
    // The reader ends on a lost connection, a protocol error or a refused reply; the write
    // half then goes too, so the socket closes at once rather than when a next request
    // finds it broken (a node that announced 4 GB must not keep its connection).
    let reader_gone = waiters.closed();
    tokio::pin!(reader_gone);
    loop {
        let first = tokio::select! {
            biased;
            next = rx.recv() => match next {
                Some(first) => first,
                None => return,
            },
            _ = &mut reader_gone => return,
        };
        // One clock read per batch: every request in it leaves with the same write.
        let started = Instant::now();
        let mut batch_waiters = Vec::with_capacity(rx.len() + 1);
        let mut commands = 0;
        let mut next = Some(first);
        while let Some(outgoing) = next.take() {
            if outgoing.asking {
                batch.extend_from_slice(b"*1\r\n$6\r\nASKING\r\n");
                batch_waiters.push(Waiter::Discard);
            }
            batch.extend_from_slice(&outgoing.bytes);
            batch_waiters.push(Waiter::Reply {
                tx: outgoing.reply,
                commands: outgoing.commands,
                started,
            });
            commands += u64::from(outgoing.commands);
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        // The waiters are queued before the bytes leave, so the reader always finds them.
        if waiters.send(batch_waiters).is_err() {
            return;
        }
        bump(&stats.sent, commands);
        if socket.write_all(&batch).await.is_err() {
            return;
        }
        batch.clear();
    }
}

/// The reader's place: the waiters of the writes it is answering, and how far into the
/// current waiter's replies it has scanned.
struct Expected {
    waiters: mpsc::UnboundedReceiver<Vec<Waiter>>,
    current: std::vec::IntoIter<Waiter>,
    /// The waiter whose replies are being gathered, and how many are still to come.
    gathering: Option<(Waiter, u32)>,
    /// Bytes at the front of the read buffer that belong to `gathering`'s earlier replies.
    gathered: usize,
}

impl Expected {
    /// The next waiter in write order; None when the writer is gone and nothing is left.
    async fn next(&mut self) -> Option<Waiter> {
        loop {
            if let Some(waiter) = self.current.next() {
                return Some(waiter);
            }
            self.current = self.waiters.recv().await?.into_iter();
        }
    }

    /// Every waiter still owed a reply, in order, once the connection is gone.
    fn into_unanswered(mut self) -> Vec<Waiter> {
        self.waiters.close();
        let mut left: Vec<Waiter> = self
            .gathering
            .map(|(waiter, _)| waiter)
            .into_iter()
            .collect();
        left.extend(self.current);
        while let Ok(batch) = self.waiters.try_recv() {
            left.extend(batch);
        }
        left
    }
}

async fn read_replies(
    addr: String,
    mut socket: OwnedReadHalf,
    waiters: mpsc::UnboundedReceiver<Vec<Waiter>>,
    alive: Arc<AtomicBool>,
    stats: Arc<ConnStats>,
    reply_cap: Arc<LiveReplyCap>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut scanner = ReplyScanner::default();
    let mut expected = Expected {
        waiters,
        current: Vec::new().into_iter(),
        gathering: None,
        gathered: 0,
    };
    let failure = 'read: loop {
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        match socket.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break BackendError::ConnectionLost { addr: addr.clone() },
            Ok(_) => {}
        }
        // One clock read per read: the replies in it arrived together.
        let arrived = Instant::now();
        let cap = reply_cap.get();
        loop {
            let len = match scanner.scan_capped(buf.get(expected.gathered..).unwrap_or(&[]), cap) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(ScanError::Invalid(e)) => {
                    break 'read BackendError::Protocol {
                        addr: addr.clone(),
                        reason: e.to_string(),
                    }
                }
                Err(ScanError::TooLarge(reason)) => {
                    bump(&stats.refused, 1);
                    tracing::warn!("closing the connection to {addr}: {reason}");
                    break 'read BackendError::ReplyTooLarge {
                        addr: addr.clone(),
                        reason,
                    };
                }
            };
            let (waiter, left) = match expected.gathering.take() {
                Some(gathering) => gathering,
                None => match expected.next().await {
                    Some(Waiter::Discard) => {
                        let _ = buf.split_to(len);
                        continue;
                    }
                    Some(waiter @ Waiter::Reply { commands, .. }) => (waiter, commands),
                    // A reply nobody asked for: the stream is out of step.
                    None => break 'read BackendError::ConnectionLost { addr: addr.clone() },
                },
            };
            expected.gathered += len;
            if left > 1 {
                expected.gathering = Some((waiter, left - 1));
                continue;
            }
            let reply = buf.split_to(expected.gathered).freeze();
            expected.gathered = 0;
            if let Waiter::Reply {
                tx,
                commands,
                started,
            } = waiter
            {
                stats
                    .latency
                    .record_n(arrived.saturating_duration_since(started), commands.into());
                bump(&stats.answered, commands.into());
                let _ = tx.send(Ok(reply));
            }
        }
    };
    alive.store(false, Ordering::Relaxed);
    drop(socket);
    for waiter in expected.into_unanswered() {
        if let Waiter::Reply { tx, commands, .. } = waiter {
            bump(&stats.failed_sent, commands.into());
            let _ = tx.send(Err(failure.clone()));
        }
    }
}
