//! One replica's connection after SYNC/PSYNC: the snapshot, then the stream.
//!
//! The feeder writes; a reader task beside it decodes what the replica sends (only
//! `REPLCONF ACK <offset> [FACK <offset>]` matters) and records the acknowledgements,
//! which may complete WAITs. Once a second, and whenever a write waits, the feeder checks
//! that the replica is alive (`repl-timeout`: ACKs in the stream phase, write progress
//! before) and that what it has not been sent stays within the `replica` class of
//! `client-output-buffer-limit`; a replica failing either is dropped, as Redis drops it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Limits, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use super::sync::{Attach, Payload, SyncStart};
use super::{Phase, ReplicaInfo};
use crate::keyspace::unix_time_ms;
use crate::scripting::busy;
use crate::server::clients::ClientHandle;
use crate::server::Shared;

/// The most bytes read from the backlog for one write.
const SEND_CHUNK: usize = 64 * 1024;

/// The most scheduler rounds a woken feeder lets pass while the stream keeps growing.
const COALESCE_ROUNDS: usize = 8;
/// How often a full sync that waits for its snapshot asks whether it may start.
const START_POLL: Duration = Duration::from_millis(100);

/// Serves the replica until it goes away or is dropped; then forgets it.
pub async fn serve(
    shared: Arc<Shared>,
    stream: TcpStream,
    handle: Arc<ClientHandle>,
    attach: Attach,
    leftover: BytesMut,
) {
    let info = attach.info().clone();
    let (read_half, write_half) = stream.into_split();
    let reader = tokio::spawn(read_acks(shared.clone(), read_half, info.clone(), leftover));
    let mut feeder = Feeder {
        shared: &shared,
        info: &info,
        out: write_half,
        tick: tokio::time::interval(Duration::from_secs(1)),
        last_progress: Instant::now(),
        soft_since: None,
    };
    let addr = format!("{}:{}", info.ip(), info.handshake.port);
    if let Err(reason) = feeder.run(attach).await {
        crate::log::warning!("Connection with replica {addr} lost: {reason}");
    }
    reader.abort();
    let _ = feeder.out.shutdown().await;
    let master = &shared.replication.master;
    master.remove(handle.id);
}

struct Feeder<'a> {
    shared: &'a Shared,
    info: &'a ReplicaInfo,
    out: OwnedWriteHalf,
    tick: tokio::time::Interval,
    last_progress: Instant,
    /// Since when the unsent stream exceeds the soft limit.
    soft_since: Option<Instant>,
}

impl Feeder<'_> {
    async fn run(&mut self, attach: Attach) -> Result<(), String> {
        let handle = self.info.handle.clone();
        if let Attach::Full { start, psync, .. } = attach {
            let started = self.wait_for_snapshot(start).await?;
            if psync {
                let line = format!("+FULLRESYNC {} {}\r\n", started.replid, started.offset);
                self.send(line.as_bytes()).await?;
            }
            let diskless = matches!(started.payload, Payload::Socket(_));
            self.send_payload(started.payload).await?;
            if self.info.handshake.rdb_only {
                crate::log::notice!(
                    "Replica {} asked for the RDB only: closing after it",
                    self.info.handle.addr
                );
                return Ok(());
            }
            crate::log::notice!(
                "Synchronization with replica {}:{} succeeded",
                self.info.ip(),
                self.info.handshake.port
            );
            if diskless {
                self.wait_first_ack().await?;
            }
        }
        self.info.set_phase(Phase::Online);
        self.info.ack_time_ms.store(unix_time_ms(), Relaxed);
        let mut end = self.shared.replication.subscribe();
        loop {
            if handle.killed.load(Relaxed) {
                return Err("closed by request".into());
            }
            self.send_stream().await?;
            tokio::select! {
                changed = end.changed() => {
                    if changed.is_err() {
                        return Err("the stream ended".into());
                    }
                    // Let the other connections' batches publish first: their bytes then
                    // leave in one write instead of one per batch. Each yield lets the
                    // tasks ready now run; while they keep publishing (a load at pipeline
                    // depth 1: one command per batch) the feeder waits a few more rounds,
                    // never a timer, so an idle node still sends at once.
                    let mut seen = *end.borrow_and_update();
                    for _ in 0..COALESCE_ROUNDS {
                        tokio::task::yield_now().await;
                        let now = *end.borrow_and_update();
                        if now == seen {
                            break;
                        }
                        seen = now;
                    }
                }
                _ = self.tick.tick() => self.check()?,
                _ = handle.kill.notified() => return Err("closed by request".into()),
            }
        }
    }

    /// Waits until the snapshot for this replica starts, sending a newline every second
    /// meanwhile so the replica does not time out (as Redis does).
    async fn wait_for_snapshot(
        &mut self,
        mut start: tokio::sync::oneshot::Receiver<SyncStart>,
    ) -> Result<SyncStart, String> {
        let handle = self.info.handle.clone();
        let mut poll = tokio::time::interval(START_POLL);
        let mut newline_at = Instant::now();
        loop {
            tokio::select! {
                started = &mut start => {
                    return started.map_err(|_| "the snapshot for it could not start".to_string())
                }
                _ = poll.tick() => {
                    let mut keyspace = busy::lock_keyspace_patiently(self.shared).await;
                    super::sync::try_start(self.shared, &mut keyspace);
                }
                _ = handle.kill.notified() => return Err("closed by request".into()),
            }
            if newline_at.elapsed() >= Duration::from_secs(1) {
                newline_at = Instant::now();
                self.send(b"\n").await?;
            }
        }
    }

    /// After a diskless payload the stream waits for the replica's first ACK, as Redis
    /// does: a replica reads the payload in chunks and looks for the end mark at the end of
    /// what it read, so stream bytes right behind the mark would hide it. A replica that
    /// never ACKs (SYNC) or stays silent is dropped after `repl-timeout`.
    async fn wait_first_ack(&mut self) -> Result<(), String> {
        let handle = self.info.handle.clone();
        let since = Instant::now();
        loop {
            tokio::select! {
                _ = self.info.acked.notified() => return Ok(()),
                _ = self.tick.tick() => {
                    let timeout = self.shared.config().repl.timeout;
                    if since.elapsed() > Duration::from_secs(timeout) {
                        return Err("timeout: no ACK after the diskless transfer".into());
                    }
                    self.check()?;
                }
                _ = handle.kill.notified() => return Err("closed by request".into()),
            }
        }
    }

    async fn send_payload(&mut self, payload: Payload) -> Result<(), String> {
        match payload {
            Payload::Disk(mut file) => {
                let handle = self.info.handle.clone();
                let file = loop {
                    tokio::select! {
                        file = &mut file => break file.map_err(|_| "the RDB for it failed".to_string())?,
                        _ = self.tick.tick() => self.send(b"\n").await?,
                        _ = handle.kill.notified() => return Err("closed by request".into()),
                    }
                };
                self.info.set_phase(Phase::SendBulk);
                let len = file.metadata().map_err(|e| e.to_string())?.len();
                self.send(format!("${len}\r\n").as_bytes()).await?;
                let mut file = file;
                let mut buf = vec![0u8; SEND_CHUNK];
                let mut left = len;
                while left > 0 {
                    // The file was just written: its pages are in the page cache, so a
                    // plain read does not stall the runtime.
                    let n = std::io::Read::read(&mut file, &mut buf).map_err(|e| e.to_string())?;
                    if n == 0 {
                        return Err("the RDB file is shorter than announced".into());
                    }
                    let n = n.min(left as usize);
                    self.send(&buf[..n]).await?;
                    left -= n as u64;
                }
            }
            Payload::Socket(mut pieces) => {
                self.info.set_phase(Phase::SendBulk);
                let mark = crate::server::random_hex_id();
                self.send(format!("$EOF:{mark}\r\n").as_bytes()).await?;
                loop {
                    match pieces.recv().await {
                        Some(Some(bytes)) => self.send(&bytes).await?,
                        Some(None) => break,
                        None => return Err("the snapshot failed".into()),
                    }
                }
                self.send(mark.as_bytes()).await?;
            }
        }
        Ok(())
    }

    /// Sends the stream from the replica's position to the current end.
    async fn send_stream(&mut self) -> Result<(), String> {
        loop {
            let from = self.info.sent.load(Relaxed);
            let pieces: Option<Vec<Bytes>> = {
                let state = self.shared.replication.state();
                state
                    .backlog
                    .as_ref()
                    .and_then(|b| b.read_from(from, SEND_CHUNK))
            };
            let Some(pieces) = pieces else {
                return Err("its position is no longer in the backlog".into());
            };
            if pieces.is_empty() {
                return Ok(());
            }
            // The pieces are the batches as they were published (at pipeline depth 1,
            // one command each): joined, they leave in one write instead of one each.
            let bytes = match pieces.as_slice() {
                [one] => one.clone(),
                _ => Bytes::from(pieces.concat()),
            };
            self.send(&bytes).await?;
            self.info.sent.fetch_add(bytes.len() as u64, Relaxed);
        }
    }

    /// Writes `bytes`, checking the replica's health while the socket makes it wait.
    async fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        let handle = self.info.handle.clone();
        let mut rest = bytes;
        while !rest.is_empty() {
            tokio::select! {
                written = self.out.write(rest) => match written {
                    Ok(0) => return Err("the connection closed".into()),
                    Ok(n) => {
                        rest = &rest[n..];
                        self.last_progress = Instant::now();
                    }
                    Err(e) => return Err(e.to_string()),
                },
                _ = self.tick.tick() => self.check()?,
                _ = handle.kill.notified() => return Err("closed by request".into()),
            }
        }
        Ok(())
    }

    /// `repl-timeout` and the output buffer limits.
    fn check(&mut self) -> Result<(), String> {
        if self.info.handle.killed.load(Relaxed) {
            return Err("closed by request".into());
        }
        let (timeout, limit) = {
            let config = self.shared.config();
            (
                config.repl.timeout,
                config.client_output_buffer_limit.replica,
            )
        };
        let timeout_ms = timeout.saturating_mul(1000);
        let online = self.info.phase() == Phase::Online;
        if online && !self.info.pre_psync.load(Relaxed) {
            let silent = unix_time_ms().saturating_sub(self.info.ack_time_ms.load(Relaxed));
            if silent > timeout_ms {
                return Err("timeout (streaming sync): no ACK within repl-timeout".into());
            }
        }
        let sent = self.info.sent.load(Relaxed);
        if sent == u64::MAX {
            return Ok(());
        }
        let unsent = self.shared.replication.end().saturating_sub(sent);
        if unsent > 0 && self.last_progress.elapsed() > Duration::from_millis(timeout_ms) {
            return Err("timeout: nothing could be written within repl-timeout".into());
        }
        if limit.hard > 0 && unsent > limit.hard {
            return Err(format!(
                "{unsent} bytes not sent pass the replica output buffer hard limit"
            ));
        }
        if limit.soft > 0 && unsent > limit.soft {
            let since = *self.soft_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_secs(limit.soft_seconds) {
                return Err(format!(
                    "{unsent} bytes not sent passed the replica output buffer soft limit for \
                     {} seconds",
                    limit.soft_seconds
                ));
            }
        } else {
            self.soft_since = None;
        }
        Ok(())
    }
}

/// Reads what the replica sends: `REPLCONF ACK`s. Closes the replica when its side ends.
async fn read_acks(
    shared: Arc<Shared>,
    mut input: OwnedReadHalf,
    info: Arc<ReplicaInfo>,
    mut buffer: BytesMut,
) {
    let mut decoder = RequestDecoder::new(Limits::default());
    loop {
        loop {
            match decoder.decode(&mut buffer) {
                Ok(Some(args)) => handle_request(&shared, &info, &args),
                Ok(None) => break,
                Err(e) => {
                    crate::log::warning!("Protocol error from replica {}: {e}", info.handle.addr);
                    info.handle.request_kill();
                    return;
                }
            }
        }
        match input.read_buf(&mut buffer).await {
            Ok(0) | Err(_) => {
                info.handle.request_kill();
                return;
            }
            Ok(_) => info.handle.touch(),
        }
    }
}

fn handle_request(shared: &Shared, info: &ReplicaInfo, args: &[Bytes]) {
    let is = |i: usize, word: &str| {
        args.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    if !(is(0, "replconf") && is(1, "ack")) {
        return;
    }
    let Some(offset) = args
        .get(2)
        .and_then(|a| slotproxy::numbers::parse_i64(a))
        .and_then(|n| u64::try_from(n).ok())
    else {
        return;
    };
    info.ack(offset);
    // CLIENT LIST shows a replica's last command as Redis does: its ACK.
    info.handle.set_last_command("replconf");
    let master = &shared.replication.master;
    master.waiters.wake(master);
}
