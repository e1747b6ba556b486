//! One client connection: read what is buffered, decode every complete request, run the
//! batch under one keyspace lock, write all replies with one write.
//!
//! A blocking command that must wait stops the batch: the rest of the client's requests stay
//! queued (as Redis leaves them in the query buffer) until the wait ends with a reply from
//! the node (a key became ready, CLIENT UNBLOCK) or the timeout. Messages other connections
//! address to this client (pub/sub, notifications) arrive in its mailbox and are written
//! as they come.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Limits, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::client_memory;
use super::clients::{Client, ClientHandle};
use super::stats::Stats;
use super::Shared;
use crate::cmd::{execute, wakeup};
use crate::scripting::busy;

const READ_CHUNK: usize = 16 * 1024;
/// Buffers that grew past this for one large request are given back once drained.
const KEEP_BUFFER: usize = 1024 * 1024;
/// Requests decoded ahead while the client is blocked, before reading pauses.
const MAX_QUEUED: usize = 64 * 1024;

/// A blocking command's wait.
struct Wait {
    reply: oneshot::Receiver<Bytes>,
    deadline: Option<Instant>,
    /// WAIT: the stream offset the replicas must acknowledge (its timeout answers the
    /// count at that moment instead of a blocking command's timeout reply).
    acks: Option<u64>,
}

pub async fn serve(shared: Arc<Shared>, mut stream: TcpStream, handle: Arc<ClientHandle>) {
    let needs_auth = !shared.acl.default_needs_no_password();
    let mut client = Client::new(handle.clone(), needs_auth);
    let mut mailbox = handle.take_mailbox();
    let mut decoder = RequestDecoder::new(Limits::default());
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(READ_CHUNK);
    let mut queued: VecDeque<Vec<Bytes>> = VecDeque::new();
    let mut protocol_error = None;
    // Input left undecoded until the request before it has run (see `decode`).
    let mut undecoded = false;
    let mut wait: Option<Wait> = None;
    // The next queued request waits for the end of a client pause (its state generation).
    let mut paused: Option<u64> = None;
    // The propagated stream's offset the batch's replies wait for (see `persistence::aof`).
    let mut durable_upto: Option<u64> = None;
    let mut settings = Settings::default();
    handle.touch();
    loop {
        if wait.is_none() && paused.is_none() && !queued.is_empty() {
            // Messages published before these requests run come before their replies.
            drain_mailbox(&mut mailbox, &handle, &mut output);
            // A script past busy-reply-threshold holds the keyspace: answer without it.
            let Some(mut keyspace) = busy::lock_keyspace_for_commands(&shared).await else {
                busy::answer_while_busy(&shared, &mut client, &mut queued, &mut output).await;
                continue;
            };
            let stream_before = keyspace.propagation.offset();
            while let Some(args) = queued.pop_front() {
                if let Some(generation) = shared.pause.postpones(&shared, &client, &args) {
                    // Held, not refused: it runs in its turn once the pause ends.
                    queued.push_front(args);
                    paused = Some(generation);
                    shared.pause.count_held(true);
                    break;
                }
                // Redis's `evictClients` in `processCommand`: the buffers that grew since
                // the last command may have passed `maxmemory-clients`, and this client may
                // be one of those closed.
                if client_memory::check(&shared) > 0 && handle.killed.load(Relaxed) {
                    queued.clear();
                    break;
                }
                execute(&shared, &mut keyspace, &mut client, &mut output, &args);
                client.has_run_commands = true;
                if let Some(request) = client.block.take() {
                    let deadline = request.timeout.map(|t| Instant::now() + t);
                    let reply = keyspace.blocking.register(
                        handle.clone(),
                        client.db,
                        client.proto,
                        args,
                        request,
                    );
                    wait = Some(Wait {
                        reply,
                        deadline,
                        acks: None,
                    });
                    break;
                }
                if let Some(ack) = client.ack_wait.take() {
                    wait = Some(Wait {
                        reply: ack.reply,
                        deadline: ack.timeout.map(|t| Instant::now() + t),
                        acks: Some(ack.offset),
                    });
                    break;
                }
                if client.takeover.is_some() {
                    // The connection is a replica's from now on.
                    queued.clear();
                    break;
                }
                wakeup::serve_ready_keys(&shared, &mut keyspace);
                if client.close_after_reply {
                    queued.clear();
                    break;
                }
            }
            let stream_after = keyspace.propagation.offset();
            if stream_after != stream_before {
                crate::propagation::publish(&shared, &mut keyspace);
                durable_upto = Some(stream_after);
            }
            drop(keyspace);
            handle.touch();
        }
        if queued.is_empty() && wait.is_none() {
            if let Some(e) = protocol_error.take() {
                output.extend_from_slice(format!("-ERR {e}\r\n").as_bytes());
                client.close_after_reply = true;
            }
        }
        if !output.is_empty() {
            // Let the other connections that are ready run their requests first, so that the
            // replies of one turn of the runtime leave together, as Redis writes them all
            // before it sleeps. Written one by one between requests, each reply finds its
            // client asleep and pays a cross-CPU wakeup: at -P 16 that was 17% of the
            // node's CPU, and the node ran 10-20% below redis-server.
            tokio::task::yield_now().await;
            // The batch's writes reach the AOF (and the disk, with `appendfsync always`)
            // before its replies leave; batches that yielded together share the write.
            if let Some(upto) = durable_upto.take() {
                shared.aof.make_durable(upto);
            }
            Stats::add(&shared.stats.total_net_output_bytes, output.len() as u64);
            if write_reply(&shared, &mut stream, &output, &handle)
                .await
                .is_err()
            {
                break;
            }
            output.clear();
            if output.capacity() > KEEP_BUFFER {
                output = BytesMut::with_capacity(READ_CHUNK);
            }
        }
        if client.close_after_reply || handle.killed.load(Relaxed) || client.takeover.is_some() {
            break;
        }
        settings.refresh(&shared);
        let Settings {
            idle_timeout,
            max_bulk,
            query_limit,
            ..
        } = settings;
        let buffered = input.len() + decoder.partial_bytes();
        handle.set_query_buffer(buffered);
        if buffered > query_limit {
            crate::log::warning!(
                "closing client {} that reached max query buffer length ({buffered} bytes)",
                handle.addr
            );
            break;
        }
        if input.is_empty() && input.capacity() > KEEP_BUFFER {
            input = BytesMut::with_capacity(READ_CHUNK);
        }
        decoder.limits.max_bulk_len = max_bulk;
        decoder.limits.unauthenticated = !client.authenticated;
        if undecoded && queued.is_empty() && wait.is_none() {
            undecoded = decode(&mut decoder, &mut input, &mut queued, &mut protocol_error);
            if !queued.is_empty() {
                continue;
            }
        }
        if input.capacity() - input.len() < READ_CHUNK / 4 {
            input.reserve(READ_CHUNK);
        }
        let can_read = protocol_error.is_none() && queued.len() < MAX_QUEUED;
        let blocked = wait.is_some();
        let postponed = paused.is_some();
        let deadline = wait.as_ref().and_then(|w| w.deadline);
        tokio::select! {
            read = stream.read_buf(&mut input), if can_read => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    undecoded = decode(&mut decoder, &mut input, &mut queued, &mut protocol_error);
                    // The query buffer grew: checked against `maxmemory-clients` at once
                    // (before the bytes show in the input counter, so whoever sees them
                    // read sees their eviction too).
                    handle.set_query_buffer(input.len() + decoder.partial_bytes());
                    client_memory::check(&shared);
                    Stats::add(&shared.stats.total_net_input_bytes, n as u64);
                    if handle.killed.load(Relaxed) {
                        break;
                    }
                }
            },
            // Without a mailbox (never: each connection takes its own) only `kill` wakes it.
            _ = handle.kill.notified(), if mailbox.is_none() => break,
            _ = idle(idle_timeout), if !blocked && !postponed => break,
            _ = shared.pause.changed_or_over(paused.unwrap_or_default()), if postponed => {
                paused = None;
                shared.pause.count_held(false);
            }
            // An empty message is a kill request (`ClientHandle::request_kill`), seen by the
            // check after the write above.
            message = next_message(&mut mailbox) => {
                if let Some(message) = message {
                    handle.mailbox_written(message.len());
                    output.extend_from_slice(&message);
                }
            }
            reply = async { wait.as_mut().map(|w| &mut w.reply).expect("guarded").await }, if blocked => {
                wait = None;
                if let Ok(reply) = reply {
                    // Served by another client's write: its pop is in the stream already.
                    shared.aof.make_all_durable();
                    output.extend_from_slice(&reply);
                }
            }
            _ = sleep_until(deadline), if blocked && wait.as_ref().is_some_and(|w| w.acks.is_some()) => {
                let offset = wait.take().and_then(|w| w.acks).unwrap_or_default();
                let count = shared.replication.master.count_acked(offset);
                output.extend_from_slice(&crate::replication::wait::count_reply(count));
            }
            _ = sleep_until(deadline), if blocked && wait.as_ref().is_some_and(|w| w.acks.is_none()) => {
                let mut keyspace = busy::lock_keyspace_patiently(&shared).await;
                match wakeup::expire_wait(&mut keyspace, handle.id) {
                    Some(reply) => output.extend_from_slice(&reply),
                    // Served just before the deadline: the reply is already waiting.
                    None => {
                        if let Some(Ok(reply)) = wait.as_mut().map(|w| w.reply.try_recv()) {
                            output.extend_from_slice(&reply);
                        }
                    }
                }
                wait = None;
            }
        }
    }
    if paused.is_some() {
        shared.pause.count_held(false);
    }
    {
        let mut keyspace = busy::lock_keyspace_patiently(&shared).await;
        if wait.is_some() {
            let _ = wakeup::expire_wait(&mut keyspace, handle.id);
        }
        crate::cmd::release_client_state(&mut keyspace, &mut client);
        keyspace.tracking.disconnected(handle.id);
    }
    drop(mailbox);
    handle.leave_clients_memory();
    if let Some(attach) = client.takeover.take() {
        let feeder = crate::replication::master::feeder::serve(
            shared.clone(),
            stream,
            handle.clone(),
            attach,
            input,
        );
        feeder.await;
        shared.clients.unregister(handle.id);
        return;
    }
    let _ = stream.shutdown().await;
    shared.clients.unregister(handle.id);
}

/// Writes `output` to the client. When the socket cannot take it all at once, the part
/// still waiting is published on the handle while the write waits (CLIENT LIST `omem`,
/// INFO's recent max output): a client that reads its replies costs no shared store.
/// A client that never reads must still be closable (output buffer limits, KILL): a kill
/// requested meanwhile ends the wait with an error.
async fn write_reply(
    shared: &Shared,
    stream: &mut TcpStream,
    output: &[u8],
    handle: &ClientHandle,
) -> std::io::Result<()> {
    let mut rest = output;
    let mut published = false;
    let result = loop {
        match stream.try_write(rest) {
            Ok(0) => break Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => break Err(e),
        }
        if rest.is_empty() {
            break Ok(());
        }
        handle.set_reply_unwritten(rest.len());
        if !published {
            // Output queued: it counts against `maxmemory-clients` from now on.
            client_memory::check(shared);
            published = true;
        }
        // Made only here, where the write waits: polling it on every write would lock the
        // notifier's waiter list. A kill requested before it was made left a permit.
        tokio::select! {
            writable = stream.writable() => {
                if let Err(e) = writable {
                    break Err(e);
                }
            }
            _ = handle.kill.notified() => {
                break Err(std::io::ErrorKind::ConnectionAborted.into());
            }
        }
    };
    if published {
        handle.set_reply_unwritten(0);
    }
    result
}

/// Decodes the requests `input` holds into `queued`. Before AUTH it stops after one and
/// returns true: Redis checks each request of a pipeline against the pre-auth limits with
/// the state the request before it left, so `AUTH` followed by a large request works.
fn decode(
    decoder: &mut RequestDecoder,
    input: &mut BytesMut,
    queued: &mut VecDeque<Vec<Bytes>>,
    protocol_error: &mut Option<slotproxy::resp::ProtocolError>,
) -> bool {
    loop {
        match decoder.decode(input) {
            Ok(Some(args)) => {
                queued.push_back(args);
                if decoder.limits.unauthenticated {
                    return true;
                }
            }
            Ok(None) => return false,
            Err(e) => {
                *protocol_error = Some(e);
                return false;
            }
        }
    }
}

/// The settings the loop reads on every turn, copied from the configuration when it changes
/// (reading it each time would take its lock twice per turn).
#[derive(Clone, Copy)]
struct Settings {
    /// The configuration version copied; `u64::MAX` before the first copy.
    version: u64,
    idle_timeout: u64,
    max_bulk: usize,
    query_limit: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            version: u64::MAX,
            idle_timeout: 0,
            max_bulk: 0,
            query_limit: 0,
        }
    }
}

impl Settings {
    fn refresh(&mut self, shared: &Shared) {
        let version = shared.config_version.load(Relaxed);
        if version == self.version {
            return;
        }
        let config = shared.config();
        *self = Settings {
            version,
            idle_timeout: config.timeout,
            max_bulk: config.proto_max_bulk_len,
            query_limit: config.client_query_buffer_limit,
        };
    }
}

fn drain_mailbox(
    mailbox: &mut Option<tokio::sync::mpsc::UnboundedReceiver<Bytes>>,
    handle: &ClientHandle,
    output: &mut BytesMut,
) {
    // `deliver` counts a message before sending it, so an empty count means nothing was sent
    // before the request arrived: no need to look into the channel (a cost on every batch).
    if handle.mailbox_bytes.load(Relaxed) == 0 {
        return;
    }
    if let Some(rx) = mailbox {
        while let Ok(message) = rx.try_recv() {
            handle.mailbox_written(message.len());
            output.extend_from_slice(&message);
        }
    }
}

async fn next_message(
    mailbox: &mut Option<tokio::sync::mpsc::UnboundedReceiver<Bytes>>,
) -> Option<Bytes> {
    match mailbox {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

async fn idle(timeout_secs: u64) {
    if timeout_secs == 0 {
        std::future::pending::<()>().await
    } else {
        tokio::time::sleep(Duration::from_secs(timeout_secs)).await
    }
}
