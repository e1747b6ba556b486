//! MULTI / EXEC / DISCARD / WATCH / UNWATCH through the proxy.
//!
//! The proxy queues the transaction itself and answers `+QUEUED`, checking each command as
//! Redis would (unknown command, arity, commands not allowed in MULTI), as the proxy would
//! outside MULTI (deny list, refused commands), and as a one-node transaction must: every key
//! hashes to one slot, and nothing that needs every node, the proxy's own state or a
//! subscription is queued ([`super::router::multi_refusal`]). Any such error marks the
//! transaction, and EXEC then answers `EXECABORT`. EXEC sends `MULTI`, the queue and `EXEC`
//! in one write on a dedicated connection to the slot's master, so nothing of another client
//! can interleave. WATCH opens that dedicated connection at once (the node must see the
//! WATCH before the keys change); it is released by EXEC, DISCARD, UNWATCH or a disconnect.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::forward::{error_reply, not_a_cluster_node};
use super::router::{denied, lookup, multi_refusal, route, single_slot, CROSSSLOT};
use super::stats::Stats;
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
    /// The connection holding this client's WATCHes (boxed: every client carries this
    /// state, few ever WATCH).
    watch: Option<Box<Dedicated>>,
    /// WAIT is queued: its count must describe this client's writes (see
    /// `super::wait::check_multi`), so the transaction follows no redirect.
    waits: bool,
    /// Where a transaction without keys runs (see [`Transaction::run_keyless_on`]).
    keyless_target: Option<String>,
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

    /// A command sent while in MULTI: queued, or an error that aborts the transaction. It
    /// gets the decision it would get outside MULTI (unknown, arity, deny list, refused),
    /// plus the transaction's own rules ([`multi_refusal`], one slot).
    pub fn queue(&mut self, proxy: &Proxy, args: Vec<Bytes>) -> Bytes {
        let checked = lookup(&args).and_then(|spec| {
            if spec.flags.contains(CommandFlags::NO_MULTI) {
                return Err("ERR Command not allowed inside a transaction".to_string());
            }
            if proxy.config.load().denies(&args[0]) {
                return Err(denied(&args[0]));
            }
            if let Some(refusal) = multi_refusal(spec, &route(spec, &args)) {
                return Err(refusal);
            }
            let name = args[0].to_ascii_lowercase();
            if let Some(split) = super::split_bloom::configured(proxy, &name, &args) {
                // Its parts live on every node; a transaction runs on one.
                return Err(format!(
                    "ERR slotproxy: '{}' is a split Bloom filter; its parts cannot join a transaction",
                    split.prefix
                ));
            }
            self.pin_slot(spec, &args)
        });
        match checked {
            Ok(()) => {
                self.waits |= args[0].eq_ignore_ascii_case(b"wait");
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
                Ok(conn) => self.watch = Some(Box::new(conn)),
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

    /// Whether WAIT is queued.
    pub fn holds_wait(&self) -> bool {
        self.in_multi && self.waits
    }

    /// The slot every key so far hashes to.
    pub fn slot(&self) -> Option<u16> {
        self.slot
    }

    /// A transaction without keys runs on the master at `addr` instead of any master.
    pub fn run_keyless_on(&mut self, addr: String) {
        self.keyless_target = Some(addr);
    }

    /// EXEC: runs the queue atomically on the pinned slot's master. Also returns the node
    /// that ran it, if one did (its writes are there, for WAIT).
    pub async fn exec(&mut self, proxy: &Arc<Proxy>, proto: Proto) -> (Bytes, Option<String>) {
        if !self.in_multi {
            return (error_reply("ERR EXEC without MULTI"), None);
        }
        if self.aborted {
            self.reset();
            return (error_reply(EXECABORT), None);
        }
        let mut ran_on = None;
        let reply = self.exec_queued(proxy, proto, &mut ran_on).await;
        (reply, ran_on)
    }

    async fn exec_queued(
        &mut self,
        proxy: &Arc<Proxy>,
        proto: Proto,
        ran_on: &mut Option<String>,
    ) -> Bytes {
        let mut state = std::mem::take(self);
        let watched = state.watch.is_some();
        // A transaction that met a slot migration did not run (EXECABORT), so it can be
        // sent again: to the ASK target with ASKING (which holds for the whole MULTI), or
        // to the slot's master after a MOVED refresh or a TRYAGAIN wait. Bounded by time,
        // like TRYAGAIN for single requests.
        let budget =
            Duration::from_millis(proxy.config.load().timeouts.operation_ms.max(4)) * 3 / 4;
        let deadline = tokio::time::Instant::now() + budget;
        let mut ask_target: Option<String> = None;
        let mut wait = Duration::from_millis(2);
        loop {
            let conn = match (state.watch.take(), ask_target.take()) {
                (Some(conn), _) => *conn,
                (None, Some(addr)) => match open_addr(proxy, &addr, proto).await {
                    Ok(conn) => conn,
                    Err(e) => return e,
                },
                (None, None) => match state.keyless_target.as_deref() {
                    Some(addr) if state.slot.is_none() => match open_addr(proxy, addr, proto).await
                    {
                        Ok(conn) => conn,
                        Err(e) => return e,
                    },
                    _ => match open(proxy, state.slot, proto).await {
                        Ok(conn) => conn,
                        Err(e) => return e,
                    },
                },
            };
            let asking = conn_is_ask(&conn, proxy, state.slot);
            *ran_on = Some(conn.addr.clone());
            let (reply, redirect) = match run(conn, &state.queued, asking).await {
                Ok(done) => done,
                Err(e) => return e,
            };
            let Some(redirect) = redirect else {
                return reply;
            };
            if state.waits {
                // WAIT's count would come from another node than the one `check_multi`
                // vouched for; the transaction did not run.
                return error_reply(
                    "ERR slotproxy: the transaction's slot is moving between nodes, so WAIT \
                     inside it cannot count this client's writes; try again",
                );
            }
            if watched {
                // The watched keys are moving to another node: answer as if one of them
                // had changed (a null EXEC), which WATCH users already retry.
                return if proto == Proto::Resp3 {
                    Bytes::from_static(b"_\r\n")
                } else {
                    Bytes::from_static(b"*-1\r\n")
                };
            }
            if tokio::time::Instant::now() + wait > deadline {
                return error_reply("ERR slotproxy: transaction kept meeting a slot migration");
            }
            // Counted like the redirects single requests follow, so the metric covers
            // transactions too.
            match redirect {
                TxRedirect::Ask(addr) => {
                    Stats::inc(&proxy.stats.redirects_ask);
                    if !proxy.is_cluster_node(&addr, deadline).await {
                        return not_a_cluster_node(&addr, &reply);
                    }
                    ask_target = Some(addr)
                }
                TxRedirect::Moved => {
                    Stats::inc(&proxy.stats.redirects_moved);
                    let _ = proxy.refresh_topology().await;
                }
                TxRedirect::TryAgain => {
                    Stats::inc(&proxy.stats.redirects_tryagain);
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_millis(50));
                }
            }
        }
    }
}

/// Why a transaction did not run.
enum TxRedirect {
    Ask(String),
    Moved,
    TryAgain,
}

fn tx_redirect(reply: &[u8]) -> Option<TxRedirect> {
    let text = std::str::from_utf8(reply.strip_prefix(b"-")?)
        .ok()?
        .trim_end();
    let mut words = text.split(' ');
    match words.next()? {
        "ASK" => Some(TxRedirect::Ask(words.nth(1)?.to_string())),
        "MOVED" => Some(TxRedirect::Moved),
        "TRYAGAIN" => Some(TxRedirect::TryAgain),
        _ => None,
    }
}

/// Whether `conn` goes to an ASK target rather than the slot's master (it then needs
/// ASKING before MULTI).
fn conn_is_ask(conn: &Dedicated, proxy: &Proxy, slot: Option<u16>) -> bool {
    slot.and_then(|s| proxy.master_addr(s).ok())
        .is_some_and(|owner| owner != conn.addr)
}

async fn open_addr(proxy: &Arc<Proxy>, addr: &str, proto: Proto) -> Result<Dedicated, Bytes> {
    let timeout = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
    Dedicated::open(addr, proto, &proxy.dedicated, timeout)
        .await
        .map_err(|e| error_reply(&e.to_reply()))
}

/// The slot's master; through a failover when it cannot be reached (nothing was sent yet).
async fn open(proxy: &Arc<Proxy>, slot: Option<u16>, proto: Proto) -> Result<Dedicated, Bytes> {
    super::failover::open_dedicated(proxy, slot, None, proto)
        .await
        .map_err(|e| error_reply(&e.to_reply()))
}

/// Sends (ASKING,) MULTI, the queue and EXEC in one write; returns EXEC's reply and, when
/// a queued command or EXEC met a slot migration, what to do (the transaction did not run).
async fn run(
    mut conn: Dedicated,
    queued: &[Vec<Bytes>],
    asking: bool,
) -> Result<(Bytes, Option<TxRedirect>), Bytes> {
    let mut batch = BytesMut::new();
    if asking {
        encode_request(&mut batch, &["ASKING"]);
    }
    encode_request(&mut batch, &["MULTI"]);
    for args in queued {
        encode_request(&mut batch, args);
    }
    encode_request(&mut batch, &["EXEC"]);
    conn.send(&batch)
        .await
        .map_err(|e| error_reply(&e.to_reply()))?;
    let mut redirect = None;
    for _ in 0..queued.len() + 1 + usize::from(asking) {
        let reply = conn
            .read_reply()
            .await
            .map_err(|e| error_reply(&e.to_reply()))?;
        if redirect.is_none() {
            redirect = tx_redirect(&reply);
        }
    }
    let exec = conn
        .read_reply()
        .await
        .map_err(|e| error_reply(&e.to_reply()))?;
    if redirect.is_none() {
        redirect = tx_redirect(&exec);
    }
    Ok((exec, redirect))
}
