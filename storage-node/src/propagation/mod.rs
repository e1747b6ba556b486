//! Propagation: the stream of commands that reproduces every change to the data, in the
//! order the changes happened, as Redis 7.0 writes it to the AOF and sends it to replicas.
//!
//! # How a command gets into the stream
//! - `cmd::dispatch` compares the keyspace's `dirty` counter before and after a command
//!   with the `write` flag: if the command itself changed data (not only removed expired
//!   keys on its way), its arguments are appended as the client sent them. That is the
//!   whole cost on the write path: one RESP encoding into a buffer. Reads pay nothing, and
//!   nothing at all happens while no consumer is attached ([`Propagation::enabled`]).
//! - A command whose effect its arguments do not reproduce says what to write instead with
//!   [`Propagation::rewrite`] (Redis's `rewriteClientCommandVector` / `alsoPropagate`):
//!   relative expiry becomes absolute (`PEXPIREAT`, `SET ... PXAT`), SPOP becomes SREM or
//!   DEL, INCRBYFLOAT becomes SET ... KEEPTTL, a blocking pop its non-blocking form.
//!   [`Propagation::prevent`] writes nothing for it.
//! - Keys removed because they expired (lazily by a command, or by the active cycle) are
//!   written as `DEL key` at once, before the command that found them and outside its
//!   unit.
//! - Commands that others run (EXEC's queue, a script's `redis.call`) add their own effects
//!   to the running unit; the outer command (EXEC, EVAL, FCALL) is not written itself.
//!   A unit of more than one command is wrapped in MULTI ... EXEC (Redis 7.0's
//!   `propagatePendingCommands`), so a replay applies it atomically.
//! - `SELECT n` precedes a command of another database than the one before it.
//!
//! The bytes wait in the stream until the batch that produced them ends; then
//! [`publish`] hands them, still under the keyspace lock (so in order), to the consumers:
//! the AOF and the replication backlog.

use bytes::{Bytes, BytesMut};
use slotproxy::resp::encode_request;

use crate::keyspace::Keyspace;
use crate::server::Shared;

/// One command of a unit, with the database it ran in.
struct Op {
    db: usize,
    args: Vec<Bytes>,
}

/// The commands waiting to be propagated. Lives in the keyspace, under its lock.
#[derive(Default)]
pub struct Propagation {
    enabled: bool,
    /// The running top-level command's effects (Redis's `server.also_propagate`).
    unit: Vec<Op>,
    /// What the running command asked to be written in its place; `Some(empty)` for nothing.
    replacement: Option<Vec<Vec<Bytes>>>,
    /// Encoded commands not yet handed to the consumers.
    stream: BytesMut,
    /// The database the stream's last command ran in (`None`: write SELECT first).
    stream_db: Option<usize>,
    /// Bytes handed on by [`take`](Propagation::take) so far.
    taken: u64,
    /// `lazyfree-lazy-expire`: expired keys are written as UNLINK instead of DEL.
    pub unlink_expired: bool,
}

const SELECT: &[u8] = b"SELECT";
const MULTI: &[u8] = b"MULTI";
const EXEC: &[u8] = b"EXEC";

impl Propagation {
    /// Whether anything consumes the stream. While it is off every hook returns at once.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Attaches or detaches the consumers. Detaching drops what was not published.
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            self.unit.clear();
            self.replacement = None;
            self.stream.clear();
        }
        self.stream_db = None;
    }

    /// The next command written starts with SELECT (a consumer starts afresh: a new AOF
    /// file, a new replica).
    pub fn restart_stream(&mut self) {
        self.stream_db = None;
    }

    /// Bytes ever appended to the stream: a batch that moved it waits for its consumers
    /// (`appendfsync always`) before it replies.
    pub fn offset(&self) -> u64 {
        self.taken + self.stream.len() as u64
    }

    /// The running command is written as `args` instead of as it was sent. Called more
    /// than once, every call adds one command (SPOP with a count as several SREMs).
    pub fn rewrite(&mut self, args: Vec<Bytes>) {
        if self.enabled {
            self.replacement.get_or_insert_with(Vec::new).push(args);
        }
    }

    /// Whether the running command said what to write in its place.
    pub fn rewritten(&self) -> bool {
        self.replacement.is_some()
    }

    /// The running command writes nothing of its own (its effects went in otherwise).
    pub fn prevent(&mut self) {
        if self.enabled {
            self.replacement.get_or_insert_with(Vec::new);
        }
    }

    /// A key of database `db` was removed because it expired: `DEL key` (`UNLINK key` with
    /// `lazyfree-lazy-expire yes`) goes into the stream at once, outside the running unit
    /// (Redis 7.0's `propagateDeletion`), so it precedes the command that found the key and
    /// is never inside its MULTI/EXEC.
    pub fn expired(&mut self, db: usize, key: &[u8]) {
        self.emit(db, &[self.expired_deletion(), key]);
    }

    /// A key of database `db` was evicted: `DEL key` (`UNLINK key` with
    /// `lazyfree-lazy-eviction yes`) goes into the stream at once, like an expired key's.
    pub fn evicted(&mut self, db: usize, key: &[u8], lazy: bool) {
        if self.enabled {
            let command: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
            self.emit(db, &[command, key]);
        }
    }

    /// How the deletion of a key whose time is up is written: `UNLINK` with
    /// `lazyfree-lazy-expire yes`, else `DEL` (also for EXPIRE or GETEX given a time in the
    /// past, as Redis 7.0 writes them).
    pub fn expired_deletion(&self) -> &'static [u8] {
        if self.unlink_expired {
            b"UNLINK"
        } else {
            b"DEL"
        }
    }

    /// A command ran in database `db`; `changed` says whether it changed data itself.
    /// `nested` commands (inside EXEC or a script) only join the running unit.
    pub fn command_ran(&mut self, db: usize, args: &[Bytes], changed: bool, nested: bool) {
        let replacement = self.replacement.take();
        if !changed {
            return;
        }
        match replacement {
            // The common case, a plain write on its own: straight into the stream.
            None if !nested && self.unit.is_empty() => self.emit(db, args),
            None => self.unit.push(Op {
                db,
                args: args.to_vec(),
            }),
            Some(commands) => self
                .unit
                .extend(commands.into_iter().map(|args| Op { db, args })),
        }
    }

    /// The top-level command ended: its unit goes into the stream, wrapped in MULTI/EXEC
    /// when it holds more than one command.
    pub fn end_unit(&mut self) {
        let unit = std::mem::take(&mut self.unit);
        let wrap = unit.len() > 1;
        if wrap {
            self.emit(unit[0].db, &[Bytes::from_static(MULTI)]);
        }
        for op in &unit {
            self.emit(op.db, &op.args);
        }
        if wrap {
            encode_request(&mut self.stream, &[EXEC]);
        }
        let mut unit = unit;
        unit.clear();
        // Keep the allocation for the next unit.
        self.unit = unit;
    }

    fn emit<A: AsRef<[u8]>>(&mut self, db: usize, args: &[A]) {
        if self.stream_db != Some(db) {
            let index = db.to_string();
            encode_request(&mut self.stream, &[SELECT, index.as_bytes()]);
            self.stream_db = Some(db);
        }
        encode_request(&mut self.stream, args);
    }

    /// The encoded commands not yet handed on.
    pub fn take(&mut self) -> Option<Bytes> {
        if self.stream.is_empty() {
            return None;
        }
        self.taken += self.stream.len() as u64;
        Some(self.stream.split().freeze())
    }
}

/// Turns propagation on or off after a consumer came or went: it is on while the AOF
/// logs or a replication backlog exists, the one rule for both.
pub fn refresh_consumers(shared: &Shared, keyspace: &mut Keyspace) {
    let wanted = shared.aof.is_on() || shared.replication.has_backlog();
    if wanted != keyspace.propagation.enabled() {
        keyspace.propagation.set_enabled(wanted);
    }
}

/// Hands what the stream holds to its consumers (called under the keyspace lock, at the
/// end of every batch and after the active expiry cycle, so consumers see the stream in
/// order).
pub fn publish(shared: &Shared, keyspace: &mut Keyspace) {
    if let Some(chunk) = keyspace.propagation.take() {
        // A replica's backlog holds its master's stream, passed on unchanged
        // (`replication::replica`); its own writes go only to its AOF.
        if !crate::replication::replica::is_replica(shared) {
            shared.replication.feed(&chunk, u64::MAX);
        }
        shared.aof.feed(chunk, keyspace.propagation.offset());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    fn text(p: &mut Propagation) -> String {
        String::from_utf8_lossy(&p.take().unwrap_or_default()).replace("\r\n", " ")
    }

    #[test]
    fn plain_writes_select_once_and_skip_unchanged() {
        let mut p = Propagation::default();
        p.set_enabled(true);
        p.command_ran(0, &args(&["set", "a", "1"]), true, false);
        p.end_unit();
        p.command_ran(0, &args(&["set", "b", "2"]), false, false);
        p.end_unit();
        p.command_ran(1, &args(&["del", "a"]), true, false);
        p.end_unit();
        assert_eq!(
            text(&mut p),
            "*2 $6 SELECT $1 0 *3 $3 set $1 a $1 1 *2 $6 SELECT $1 1 *2 $3 del $1 a "
        );
    }

    #[test]
    fn units_of_several_commands_are_wrapped() {
        let mut p = Propagation::default();
        p.set_enabled(true);
        p.expired(0, b"k");
        p.rewrite(args(&["SREM", "s", "m"]));
        p.rewrite(args(&["SREM", "s", "n"]));
        p.command_ran(0, &args(&["spop", "s", "2"]), true, false);
        p.end_unit();
        assert_eq!(
            text(&mut p),
            "*2 $6 SELECT $1 0 *2 $3 DEL $1 k *1 $5 MULTI *3 $4 SREM $1 s $1 m \
             *3 $4 SREM $1 s $1 n *1 $4 EXEC "
        );
    }
}
