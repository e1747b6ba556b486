//! Forwarding a request to the node that serves its slot, and following redirects.
//!
//! The fast path is synchronous: the request is queued on a shared connection and the
//! session keeps a [`Pending`] that resolves to the raw reply bytes. Only a reply that is a
//! redirect (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) or a failure turns into an async retry loop.
//!
//! MOVED and ASK are followed at most [`MAX_REDIRECTS`] times. TRYAGAIN is different: it
//! means "a multi-key request met a slot whose keys are split between the source and the
//! target of a migration", which lasts as long as that one slot's keys take to move. It is
//! retried with a short backoff on a time budget (three quarters of `timeouts.operation_ms`,
//! so the reply still beats the client's operation timeout) instead of a count, and each
//! wait starts a fresh count of redirects. CLUSTERDOWN (the cluster settling, a failover)
//! is retried the same way with a longer backoff. A failed connection is retried only as
//! [`super::failover`] allows (a request that cannot have run, or a read), on the master a
//! failover promoted.
//! A MOVED or ASK is followed only to a master the topology lists (after a refresh, within
//! that budget): the proxy opens no connection to a host a node merely names.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::failover;
use super::stats::Stats;
use super::Proxy;
use crate::backend::{BackendConn, BackendError, Lane, Node, ReplyResult, Topology};
use crate::resp::Proto;

/// Redirects followed for one request before giving up.
pub const MAX_REDIRECTS: usize = 5;

pub type BoxFuture = Pin<Box<dyn Future<Output = Bytes> + Send>>;

/// A reply the session is waiting for.
pub enum Pending {
    Ready(Bytes),
    Backend(Waiting),
    /// A request sent in one batch with others for the same node (see [`super::batch`]).
    Part(super::batch::Part),
    Future(BoxFuture),
}

/// A request sent on a shared connection, with what is needed to resend it.
///
/// It holds no `Arc<Proxy>` and no address string: cloning those on every request would
/// bounce one shared reference count between the worker threads' cores. The connection
/// (owned by this worker) names the node; the proxy is passed in when a redirect needs it.
pub struct Waiting {
    rx: oneshot::Receiver<ReplyResult>,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
    conn: Arc<BackendConn>,
}

/// An error reply as bytes (the shared core's one encoding of it).
pub use crate::protocol::error_reply;

/// What a node's reply asks the proxy to do.
#[derive(Debug, PartialEq, Eq)]
enum Redirect {
    Moved(u16, String),
    Ask(u16, String),
    TryAgain,
    ClusterDown,
}

fn redirect_of(reply: &[u8]) -> Option<Redirect> {
    if reply.first() != Some(&b'-') {
        return None;
    }
    let line = reply.get(1..reply.len().saturating_sub(2))?;
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split(' ');
    match words.next()? {
        kind @ ("MOVED" | "ASK") => {
            let slot = words.next()?.parse().ok()?;
            let addr = words.next()?.to_string();
            Some(if kind == "MOVED" {
                Redirect::Moved(slot, addr)
            } else {
                Redirect::Ask(slot, addr)
            })
        }
        "TRYAGAIN" => Some(Redirect::TryAgain),
        "CLUSTERDOWN" => Some(Redirect::ClusterDown),
        _ => None,
    }
}

/// Whether a reply asks the proxy to send the request again (MOVED, ASK, TRYAGAIN,
/// CLUSTERDOWN).
pub(super) fn is_redirect(reply: &[u8]) -> bool {
    redirect_of(reply).is_some()
}

impl Proxy {
    /// The address of the master serving `slot`.
    pub fn master_addr(&self, slot: u16) -> Result<String, BackendError> {
        self.topology
            .load()
            .master_for(slot)
            .map(|n| n.addr.clone())
            .ok_or(BackendError::NoNode { slot })
    }

    /// Some master, rotating, for keyless commands.
    pub fn any_master(&self) -> Result<String, BackendError> {
        any_master_node(&self.topology.load())
            .map(|n| n.addr.clone())
            .ok_or(BackendError::NoNode { slot: 0 })
    }

    fn send_to(
        &self,
        addr: &str,
        request: Bytes,
        proto: Proto,
        lane: Lane,
        asking: bool,
    ) -> oneshot::Receiver<ReplyResult> {
        match self.pool(lane).get(addr, proto, lane.conn) {
            Ok(conn) => conn.send(request, asking),
            Err(e) => {
                let (tx, rx) = oneshot::channel();
                let _ = tx.send(Err(e));
                rx
            }
        }
    }
}

impl Proxy {
    /// Whether `addr` is a master of the cluster, refreshing the topology (until
    /// `deadline`) while it is not: a redirect may name a master the proxy has not learned
    /// of yet (a promoted replica), or a host that is no part of the cluster, which the
    /// proxy must not connect to on a node's word alone.
    pub(super) async fn is_cluster_node(&self, addr: &str, deadline: tokio::time::Instant) -> bool {
        loop {
            if self.topology.load().knows(addr) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            self.request_refresh();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Some master for a keyless command, rotating per worker thread (a shared counter would
/// be written by every worker on every such request).
fn any_master_node(topology: &Topology) -> Option<&Node> {
    thread_local! {
        static NEXT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    if topology.masters.is_empty() {
        return None;
    }
    let i = NEXT.with(|next| {
        let i = next.get();
        next.set(i.wrapping_add(1));
        i
    });
    topology.masters.get(i % topology.masters.len())
}

/// Queues `request` on the lane's connection to `addr`. A connection that cannot be had
/// (node in backoff) goes straight to the retry logic.
fn send_on(
    proxy: &Arc<Proxy>,
    addr: &str,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
) -> Pending {
    match proxy.pool(lane).get(addr, proto, lane.conn) {
        Ok(conn) => send_on_conn(conn, slot, request, proto, lane),
        Err(e) => Pending::Future(Box::pin(follow(
            proxy.clone(),
            slot,
            request,
            proto,
            lane,
            addr.to_string(),
            Err(e),
        ))),
    }
}

/// Queues `request` on `conn` (any shared connection: a master's, or a replica's for
/// `read_from`); the reply follows the redirect and retry rules of [`follow`].
pub(super) fn send_on_conn(
    conn: Arc<BackendConn>,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
) -> Pending {
    let rx = conn.send(request.clone(), false);
    Pending::Backend(Waiting {
        rx,
        slot,
        request,
        proto,
        lane,
        conn,
    })
}

/// The master serving `slot` (some master for `None`), or the reply that says there is none.
pub(super) fn master_node(topology: &Topology, slot: Option<u16>) -> Result<&Node, Pending> {
    let node = match slot {
        Some(slot) => topology.master_for(slot),
        None => any_master_node(topology),
    };
    node.ok_or_else(|| {
        Pending::Ready(error_reply(
            &BackendError::NoNode {
                slot: slot.unwrap_or(0),
            }
            .to_reply(),
        ))
    })
}

/// Sends a request to a slot's master (or any master for `None`) on the client's lane and
/// returns what the session waits on. The request leaves now, so requests keep their order.
pub fn forward(
    proxy: &Arc<Proxy>,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
) -> Pending {
    let topology = proxy.topology.load();
    match master_node(&topology, slot) {
        Ok(node) => send_on(proxy, &node.addr, slot, request, proto, lane),
        Err(no_node) => {
            await_master(proxy, &topology, slot, request, proto, lane).unwrap_or(no_node)
        }
    }
}

/// For a request whose slot has no master now: in a cluster with replicas, a failover may
/// give it one within the request's budget, so the request waits for it (see
/// [`failover`]). `None` without replicas: the caller answers at once.
pub(super) fn await_master(
    proxy: &Arc<Proxy>,
    topology: &Topology,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
) -> Option<Pending> {
    topology.has_replicas().then(|| {
        let unserved = Err(BackendError::NoNode {
            slot: slot.unwrap_or(0),
        });
        Pending::Future(Box::pin(follow(
            proxy.clone(),
            slot,
            request,
            proto,
            lane,
            String::new(),
            unserved,
        )))
    })
}

impl Pending {
    /// Waits for the final reply.
    pub async fn reply(mut self, proxy: &Arc<Proxy>) -> Bytes {
        std::future::poll_fn(|cx| self.poll_reply(cx, proxy)).await
    }

    /// The node a request waits on, while it is on its first attempt (for timeout metrics).
    pub fn addr(&self) -> Option<&str> {
        match self {
            Pending::Backend(waiting) => Some(&waiting.conn.addr),
            Pending::Part(part) => Some(part.addr()),
            _ => None,
        }
    }
}

/// Sends a request to one node by address now; the returned [`Pending`] follows redirects.
pub fn send_to_node(
    proxy: &Arc<Proxy>,
    addr: String,
    request: Bytes,
    proto: Proto,
    lane: Lane,
) -> Pending {
    send_on(proxy, &addr, None, request, proto, lane)
}

pub(super) fn received(
    result: Result<ReplyResult, oneshot::error::RecvError>,
    addr: &str,
) -> ReplyResult {
    result.unwrap_or_else(|_| {
        Err(BackendError::ConnectionLost {
            addr: addr.to_string(),
        })
    })
}

/// First and longest wait after TRYAGAIN.
const TRYAGAIN_FIRST_WAIT: Duration = Duration::from_millis(2);
const TRYAGAIN_MAX_WAIT: Duration = Duration::from_millis(50);
/// First and longest wait after CLUSTERDOWN (a failover takes seconds).
const CLUSTERDOWN_FIRST_WAIT: Duration = Duration::from_millis(10);
const CLUSTERDOWN_MAX_WAIT: Duration = Duration::from_millis(200);

/// Handles redirects and failures after the first reply (see the module doc for the bounds).
pub(super) async fn follow(
    proxy: Arc<Proxy>,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
    mut addr: String,
    mut reply: ReplyResult,
) -> Bytes {
    let budget = super::failover::budget(&proxy);
    let deadline = tokio::time::Instant::now() + budget;
    let mut tryagain_wait = TRYAGAIN_FIRST_WAIT;
    let mut clusterdown_wait = CLUSTERDOWN_FIRST_WAIT;
    let mut attempt = 0;
    // Sent again (anywhere): the node that answers last ran the request, which the
    // client's WAIT must then count (see `super::wait`).
    let mut resent = false;
    loop {
        let bytes = match reply {
            Ok(bytes) => bytes,
            Err(e) => {
                proxy.request_refresh();
                let may_resend = failover::may_resend(&e, &request);
                if !may_resend || attempt == MAX_REDIRECTS {
                    if resent && !e.retry_safe() {
                        // It may have run there before the connection failed.
                        proxy.wait_notes.note(lane, &addr);
                    }
                    return error_reply(&e.to_reply());
                }
                // Retried only on a master other than the one that failed: the one a
                // failover promoted (waited for, see `super::failover`).
                let failed = (!addr.is_empty()).then_some(addr.as_str());
                let Some(next) = failover::new_master(&proxy, slot, failed, deadline).await else {
                    return error_reply(&e.to_reply());
                };
                attempt += 1;
                addr = next;
                resent = true;
                let rx = proxy.send_to(&addr, request.clone(), proto, lane, false);
                reply = received(rx.await, &addr);
                continue;
            }
        };
        let Some(redirect) = redirect_of(&bytes) else {
            if resent {
                proxy.wait_notes.note(lane, &addr);
            }
            return bytes;
        };
        let give_up = match redirect {
            Redirect::TryAgain => tokio::time::Instant::now() + tryagain_wait > deadline,
            Redirect::ClusterDown => tokio::time::Instant::now() + clusterdown_wait > deadline,
            _ => attempt == MAX_REDIRECTS,
        };
        if give_up {
            let last = String::from_utf8_lossy(&bytes[1..bytes.len().saturating_sub(2)]);
            return error_reply(&match redirect {
                Redirect::TryAgain => format!(
                    "ERR slotproxy: slot still migrating after {} ms; last reply: {last}",
                    budget.as_millis()
                ),
                // The node's own CLUSTERDOWN error, as a client of that node would see it.
                Redirect::ClusterDown => return bytes,
                _ => format!(
                    "ERR slotproxy: too many redirects ({MAX_REDIRECTS}); last reply: {last}"
                ),
            });
        }
        if let Redirect::Moved(_, target) | Redirect::Ask(_, target) = &redirect {
            if !proxy.is_cluster_node(target, deadline).await {
                Stats::inc(&proxy.stats.errors);
                return not_a_cluster_node(target, &bytes);
            }
        }
        let asking = match redirect {
            Redirect::Moved(moved_slot, target) => {
                Stats::inc(&proxy.stats.redirects_moved);
                proxy.apply_moved(moved_slot, &target);
                addr = target;
                attempt += 1;
                false
            }
            Redirect::Ask(_, target) => {
                Stats::inc(&proxy.stats.redirects_ask);
                addr = target;
                attempt += 1;
                true
            }
            Redirect::TryAgain => {
                Stats::inc(&proxy.stats.redirects_tryagain);
                // The slot's keys are moving: wait a little, then ask the slot's master
                // again (it answers ASK once all the request's keys have moved).
                tokio::time::sleep(tryagain_wait).await;
                tryagain_wait = (tryagain_wait * 2).min(TRYAGAIN_MAX_WAIT);
                attempt = 0;
                if let Some(s) = slot {
                    if let Ok(a) = proxy.master_addr(s) {
                        addr = a;
                    }
                }
                false
            }
            Redirect::ClusterDown => {
                Stats::inc(&proxy.stats.redirects_tryagain);
                // The cluster is settling (a failover, a slot without owner): the request
                // did not run; back off, on a time budget like TRYAGAIN, and look for the
                // slot's master in a fresh slot map.
                proxy.request_refresh();
                tokio::time::sleep(clusterdown_wait).await;
                clusterdown_wait = (clusterdown_wait * 2).min(CLUSTERDOWN_MAX_WAIT);
                attempt = 0;
                if let Some(s) = slot {
                    if let Ok(a) = proxy.master_addr(s) {
                        addr = a;
                    }
                }
                false
            }
        };
        resent = true;
        let rx = proxy.send_to(&addr, request.clone(), proto, lane, asking);
        reply = received(rx.await, &addr);
    }
}

impl Pending {
    /// Polls for the final reply bytes.
    pub fn poll_reply(&mut self, cx: &mut Context<'_>, proxy: &Arc<Proxy>) -> Poll<Bytes> {
        loop {
            match self {
                Pending::Ready(bytes) => return Poll::Ready(std::mem::take(bytes)),
                Pending::Future(future) => return future.as_mut().poll(cx),
                Pending::Part(part) => match part.poll_reply(cx, proxy) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(bytes)) => return Poll::Ready(bytes),
                    Poll::Ready(Err(retry)) => *self = Pending::Future(retry),
                },
                Pending::Backend(waiting) => {
                    let result = match Pin::new(&mut waiting.rx).poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(result) => received(result, &waiting.conn.addr),
                    };
                    match result {
                        Ok(bytes) if redirect_of(&bytes).is_none() => return Poll::Ready(bytes),
                        other => {
                            let future = follow(
                                proxy.clone(),
                                waiting.slot,
                                waiting.request.clone(),
                                waiting.proto,
                                waiting.lane,
                                waiting.conn.addr.clone(),
                                other,
                            );
                            *self = Pending::Future(Box::pin(future));
                        }
                    }
                }
            }
        }
    }
}

/// The answer to a redirect that names a host outside the cluster: the proxy does not
/// connect anywhere on a node's word alone.
pub(super) fn not_a_cluster_node(target: &str, reply: &[u8]) -> Bytes {
    let last = String::from_utf8_lossy(reply.get(1..reply.len().saturating_sub(2)).unwrap_or(&[]));
    error_reply(&format!(
        "ERR slotproxy: redirected to {target}, which is not a node of the cluster; last reply: {last}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_are_recognised() {
        assert_eq!(
            redirect_of(b"-MOVED 3999 127.0.0.1:6381\r\n"),
            Some(Redirect::Moved(3999, "127.0.0.1:6381".into()))
        );
        assert_eq!(
            redirect_of(b"-ASK 1 10.0.0.1:7000\r\n"),
            Some(Redirect::Ask(1, "10.0.0.1:7000".into()))
        );
        assert_eq!(
            redirect_of(b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n"),
            Some(Redirect::TryAgain)
        );
        assert_eq!(
            redirect_of(b"-CLUSTERDOWN Hash slot not served\r\n"),
            Some(Redirect::ClusterDown)
        );
        assert_eq!(redirect_of(b"-ERR x\r\n"), None);
        assert_eq!(redirect_of(b"+MOVED\r\n"), None);
    }
}
