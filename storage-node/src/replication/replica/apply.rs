//! Applying the master's stream: every command runs as the master's client (no reply
//! leaves, no gate refuses it, keys past their TTL are still there), in batches under the
//! keyspace lock.
//!
//! The offset (`slave_repl_offset`) moves after each command that leaves no transaction
//! open, as Redis's `commandProcessed` does: a MULTI and the commands queued after it
//! count when their EXEC runs. The bytes of every applied command go on unchanged to
//! `Replication::feed_from_master` (the backlog, and this node's own replicas).
//!
//! `REPLCONF GETACK` is answered with `REPLCONF ACK <offset>` (the offset before it, as
//! in Redis); the same ACK goes out every second. A master silent for `repl-timeout`
//! (it pings every `repl-ping-replica-period`) is dropped.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Limits, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::handshake::Conn;
use super::link::ended;
use super::{ack_command, master_client, State};
use crate::keyspace::Keyspace;
use crate::server::clients::Client;
use crate::server::Shared;

/// Commands applied per hold of the keyspace lock, so clients of the replica are served
/// between the batches of a long stream.
const BATCH: usize = 1024;
const READ_CHUNK: usize = 64 * 1024;
/// Errors of the master's commands logged one by one; later ones are only counted.
const LOGGED_ERRORS: u64 = 10;

/// Applies the stream until the link drops (an error) or the generation ends (`Ok`).
pub async fn run(shared: &Arc<Shared>, conn: Conn, generation: u64) -> io::Result<()> {
    let link = &shared.replication.link;
    let timeout = conn.timeout;
    let mut input = conn.input;
    let (mut reader, mut writer) = conn.stream.into_split();
    let mut decoder = RequestDecoder::new(Limits {
        max_bulk_len: usize::MAX,
        ..Limits::default()
    });
    let applied = shared.replication.state().end();
    let mut applier = Applier {
        client: master_client(),
        output: BytesMut::new(),
        applied,
        raw: BytesMut::from(&input[..]),
        errors: 0,
    };
    let mut received = applied + input.len() as u64;
    // Commands decoded and not yet run, with the stream position where each ends.
    let mut decoded: Vec<(Vec<Bytes>, u64)> = Vec::new();
    link.read_offset.store(received, Relaxed);
    link.set_state(State::Connected);
    link.touch();
    crate::log::notice!(
        "MASTER <-> REPLICA sync: the link is up, applying the stream from offset {applied}"
    );
    writer.write_all(&ack_command(applied)).await?;
    let mut last_io = Instant::now();
    let mut ack_timer = tokio::time::interval(Duration::from_secs(1));
    ack_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        loop {
            match decoder.decode(&mut input) {
                Ok(Some(args)) => {
                    let end = received - input.len() as u64 - decoder.partial_bytes() as u64;
                    decoded.push((args, end));
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(io::Error::other(format!(
                        "protocol error in the MASTER's stream: {e}"
                    )))
                }
            }
        }
        while !decoded.is_empty() {
            let rest = decoded.split_off(decoded.len().min(BATCH));
            let batch = std::mem::replace(&mut decoded, rest);
            let keyspace = crate::scripting::busy::lock_keyspace_patiently(shared).await;
            if !link.current(generation) {
                return Ok(());
            }
            let applied = applier.apply(shared, keyspace, batch);
            // What the batch wrote reaches the AOF now (fsynced with `always`), as Redis
            // writes it before its event loop sleeps.
            if let Some(upto) = applied.aof_upto {
                shared.aof.make_durable(upto);
            }
            if let Some(offset) = applied.ack {
                writer.write_all(&ack_command(offset)).await?;
            }
        }
        if input.capacity() - input.len() < READ_CHUNK / 4 {
            input.reserve(READ_CHUNK);
        }
        let deadline = last_io + timeout;
        tokio::select! {
            read = reader.read_buf(&mut input) => {
                let n = read?;
                if n == 0 {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed by the MASTER"));
                }
                applier.raw.extend_from_slice(&input[input.len() - n..]);
                received += n as u64;
                link.read_offset.store(received, Relaxed);
                last_io = Instant::now();
                link.touch();
            }
            _ = ack_timer.tick() => {
                writer.write_all(&ack_command(applier.applied)).await?;
            }
            () = tokio::time::sleep_until(deadline) => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "MASTER timeout: no data nor PING received"));
            }
            () = ended(link, generation) => return Ok(()),
            () = link.drop_connection.notified() => {
                return Err(io::Error::other("the connection with the MASTER was killed"));
            }
        }
    }
}

/// The state of the stream's application between batches.
struct Applier {
    client: Client,
    output: BytesMut,
    /// The stream position applied (the offset).
    applied: u64,
    /// The bytes received from `applied` on, as they came, until applied and passed on.
    raw: BytesMut,
    errors: u64,
}

impl Applier {
    /// Runs a batch of commands under the keyspace lock.
    fn apply(
        &mut self,
        shared: &Shared,
        mut keyspace: MutexGuard<'_, Keyspace>,
        batch: Vec<(Vec<Bytes>, u64)>,
    ) -> Applied {
        let stream_before = keyspace.propagation.offset();
        let mut ack = None;
        let mut boundary = self.applied;
        for (args, end) in batch {
            if is_getack(&args) {
                ack = Some(boundary);
            } else {
                self.output.clear();
                crate::cmd::execute(
                    shared,
                    &mut keyspace,
                    &mut self.client,
                    &mut self.output,
                    &args,
                );
                crate::cmd::wakeup::serve_ready_keys(shared, &mut keyspace);
                if self.output.first() == Some(&b'-') {
                    self.errors += 1;
                    if self.errors <= LOGGED_ERRORS {
                        crate::log::warning!(
                            "== CRITICAL == This replica is sending an error to its master: \
                             '{}' after processing the command '{}'",
                            String::from_utf8_lossy(&self.output).trim_end(),
                            String::from_utf8_lossy(&args[0])
                        );
                    }
                }
            }
            if self.client.multi.is_none() {
                boundary = end;
            }
        }
        if boundary > self.applied {
            let chunk = self
                .raw
                .split_to((boundary - self.applied) as usize)
                .freeze();
            shared.replication.feed_from_master(&chunk);
            self.applied = boundary;
        }
        let stream_after = keyspace.propagation.offset();
        let aof_upto = (stream_after != stream_before).then(|| {
            crate::propagation::publish(shared, &mut keyspace);
            stream_after
        });
        Applied { ack, aof_upto }
    }
}

/// What a batch leaves to do once the keyspace lock is released.
struct Applied {
    /// The offset to acknowledge, when the batch held `REPLCONF GETACK`.
    ack: Option<u64>,
    /// The end of what the batch wrote to this node's own stream (its AOF).
    aof_upto: Option<u64>,
}

/// `REPLCONF GETACK <anything>`.
fn is_getack(args: &[Bytes]) -> bool {
    args.len() >= 2
        && args[0].eq_ignore_ascii_case(b"replconf")
        && args[1].eq_ignore_ascii_case(b"getack")
}
