//! MULTI / EXEC / DISCARD / WATCH / UNWATCH through the proxy.
//!
//! The proxy queues the transaction itself and answers `+QUEUED`, checking each command as
//! Redis would (unknown command, arity, commands not allowed in MULTI) plus the cluster rule
//! that every key of the transaction hashes to one slot. Any such error marks the
//! transaction, and EXEC then answers `EXECABORT`. EXEC sends `MULTI`, the queue and `EXEC`
//! in one write on a dedicated connection to the slot's master, so nothing of another client
//! can interleave. WATCH opens that dedicated connection at once (the node must see the
//! WATCH before the keys change); it is released by EXEC, DISCARD, UNWATCH or a disconnect.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::forward::error_reply;
use super::router::{lookup, single_slot, CROSSSLOT};
use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::cluster::{CommandFlags, CommandSpec};
use crate::resp::{encode_request, Proto};

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A client's transaction state.
#[derive(Default)]
pub struct Transaction {
    pub in_multi: bool,
    aborted: bool,
    queued: Vec<Vec<Bytes>>,
    /// The slot every key so far hashes to.
    slot: Option<u16>,
    /// The connection holding this client's WATCHes.
    watch: Option<Dedicated>,
}

fn encode(args: &[Bytes]) -> BytesMut {
    let mut buf = BytesMut::new();
    encode_request(&mut buf, args);
    buf
}

impl Transaction {
    /// Forgets everything (DISCARD, RESET, after EXEC).
    pub fn reset(&mut self) {
        *self = Transaction::default();
    }

    pub fn multi(&mut self) -> Bytes {
        if self.in_multi {
            return error_reply("ERR MULTI calls can not be nested");
        }
        self.in_multi = true;
        Bytes::from_static(b"+OK\r\n")
    }

    pub fn discard(&mut self) -> Bytes {
        if !self.in_multi {
            return error_reply("ERR DISCARD without MULTI");
        }
        self.reset();
        Bytes::from_static(b"+OK\r\n")
    }

    pub fn unwatch(&mut self) -> Bytes {
        self.watch = None;
        if !self.in_multi {
            self.slot = None;
        }
        Bytes::from_static(b"+OK\r\n")
    }

    /// Pins the transaction to the slot of `spec`'s keys, or reports CROSSSLOT.
    fn pin_slot(&mut self, spec: &CommandSpec, args: &[Bytes]) -> Result<(), String> {
        if let Some(slot) = single_slot(spec, args)? {
            match self.slot {
                Some(pinned) if pinned != slot => return Err(CROSSSLOT.into()),
                _ => self.slot = Some(slot),
            }
        }
        Ok(())
    }

    /// A command sent while in MULTI: queued, or an error that aborts the transaction.
    pub fn queue(&mut self, args: Vec<Bytes>) -> Bytes {
        let checked = lookup(&args).and_then(|spec| {
            if spec.flags.contains(CommandFlags::NO_MULTI) {
                return Err("ERR Command not allowed inside a transaction".to_string());
            }
            if let super::router::Route::Reject(e) = super::router::route(spec, &args) {
                if e != CROSSSLOT {
                    return Err(e);
                }
            }
            self.pin_slot(spec, &args)
        });
        match checked {
            Ok(()) => {
                self.queued.push(args);
                Bytes::from_static(b"+QUEUED\r\n")
            }
            Err(e) => {
                self.aborted = true;
                error_reply(&e)
            }
        }
    }

    /// WATCH key...: keys must share a slot with everything watched before.
    pub async fn watch(&mut self, proxy: &Arc<Proxy>, args: &[Bytes], proto: Proto) -> Bytes {
        if self.in_multi {
            return error_reply("ERR WATCH inside MULTI is not allowed");
        }
        let spec = match lookup(args) {
            Ok(spec) => spec,
            Err(e) => return error_reply(&e),
        };
        if let Err(e) = self.pin_slot(spec, args) {
            return error_reply(&e);
        }
        let Some(slot) = self.slot else {
            return error_reply("ERR wrong number of arguments for 'watch' command");
        };
        if self.watch.is_none() {
            match open(proxy, Some(slot), proto).await {
                Ok(conn) => self.watch = Some(conn),
                Err(e) => return e,
            }
        }
        let Some(conn) = self.watch.as_mut() else {
            return error_reply("ERR slotproxy: no connection for WATCH");
        };
        match conn.call(&encode(args)).await {
            Ok(reply) => reply,
            Err(e) => {
                self.watch = None;
                error_reply(&e.to_reply())
            }
        }
    }

    /// EXEC: runs the queue atomically on the pinned slot's master.
    pub async fn exec(&mut self, proxy: &Arc<Proxy>, proto: Proto) -> Bytes {
        if !self.in_multi {
            return error_reply("ERR EXEC without MULTI");
        }
        if self.aborted {
            self.reset();
            return error_reply(EXECABORT);
        }
        let mut state = std::mem::take(self);
        let watched = state.watch.is_some();
        // Without WATCH a transaction that met a slot migration can be sent again: EXECABORT
        // guarantees none of it ran.
        for attempt in 0..3 {
            let conn = match state.watch.take() {
                Some(conn) => conn,
                None => match open(proxy, state.slot, proto).await {
                    Ok(conn) => conn,
                    Err(e) => return e,
                },
            };
            match run(conn, &state.queued).await {
                Ok((reply, moved)) if moved && !watched && attempt < 2 => {
                    let _ = reply;
                    proxy.request_refresh();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = proxy.refresh_topology().await;
                }
                Ok((reply, _)) => return reply,
                Err(e) => return e,
            }
        }
        error_reply("ERR slotproxy: transaction kept meeting a slot migration")
    }
}

async fn open(proxy: &Arc<Proxy>, slot: Option<u16>, proto: Proto) -> Result<Dedicated, Bytes> {
    let addr = match slot {
        Some(slot) => proxy.master_addr(slot),
        None => proxy.any_master(),
    }
    .map_err(|e| error_reply(&e.to_reply()))?;
    let timeout = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
    Dedicated::open(&addr, proto, &proxy.dedicated, timeout)
        .await
        .map_err(|e| error_reply(&e.to_reply()))
}

/// Sends MULTI, the queue and EXEC in one write; returns EXEC's reply and whether a queued
/// command was redirected (so the transaction was not executed).
async fn run(mut conn: Dedicated, queued: &[Vec<Bytes>]) -> Result<(Bytes, bool), Bytes> {
    let mut batch = BytesMut::new();
    encode_request(&mut batch, &["MULTI"]);
    for args in queued {
        encode_request(&mut batch, args);
    }
    encode_request(&mut batch, &["EXEC"]);
    conn.send(&batch)
        .await
        .map_err(|e| error_reply(&e.to_reply()))?;
    let mut moved = false;
    for _ in 0..queued.len() + 1 {
        let reply = conn
            .read_reply()
            .await
            .map_err(|e| error_reply(&e.to_reply()))?;
        if reply.starts_with(b"-MOVED") || reply.starts_with(b"-ASK") {
            moved = true;
        }
    }
    let exec = conn
        .read_reply()
        .await
        .map_err(|e| error_reply(&e.to_reply()))?;
    Ok((exec, moved))
}
