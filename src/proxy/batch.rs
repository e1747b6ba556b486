//! The requests of one client's pipeline that go to the same node, sent as one request.
//!
//! A session decodes a pipeline (`-P 16`: sixteen requests) and routes each request; those
//! for one node join an open batch, and the batches leave when the session has dispatched
//! what it read (or before anything that must not overtake them). A node's connection then
//! carries one channel send, one oneshot and one waiter for the batch instead of one per
//! request, and the reply comes back as the requests' replies, back to back. Each request
//! keeps its own place in the session's reply FIFO as a [`Part`] of its batch, and follows
//! its own redirects like any request.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;

use super::forward::{await_master, follow, is_redirect, master_node, received, Pending};
use super::Proxy;
use crate::backend::{BackendConn, BackendError, Lane, ReplyResult};
use crate::registry::lock;
use crate::resp::{Proto, ReplyScanner};

/// Requests batched for one node, not yet sent.
struct Open {
    /// The first request, sent as it is when it stays alone (a client without a pipeline).
    first: Bytes,
    /// The requests after the first, copied back to back (with the first, once there are
    /// two).
    bytes: BytesMut,
    commands: u32,
    reply: oneshot::Sender<ReplyResult>,
    shared: Arc<Shared>,
}

/// What the parts of one batch share: the reply, split once when the first part needs it.
struct Shared {
    conn: Arc<BackendConn>,
    /// Until the reply arrives: its receiver, and how many replies it carries (set when the
    /// batch is sent).
    waiting: Mutex<Option<(oneshot::Receiver<ReplyResult>, u32)>>,
    /// The reply of every request, in order; or why there is none. Once set, the other parts
    /// read it without taking the lock.
    done: OnceLock<Result<Replies, BackendError>>,
}

enum Replies {
    One(Bytes),
    /// The batch's replies, back to back, and where each one ends: a part slices its own
    /// reply out when it is polled, so the split costs no reference count per reply.
    Many {
        blob: Bytes,
        ends: Vec<usize>,
    },
}

impl Replies {
    /// The reply to the batch's request number `index`.
    fn get(&self, index: usize) -> Option<Bytes> {
        match self {
            Replies::One(reply) => (index == 0).then(|| reply.clone()),
            Replies::Many { blob, ends } => {
                let end = *ends.get(index)?;
                let start = if index == 0 { 0 } else { ends[index - 1] };
                Some(blob.slice(start..end))
            }
        }
    }
}

/// One request's place in a batch.
pub struct Part {
    shared: Arc<Shared>,
    index: u32,
    slot: Option<u16>,
    request: Bytes,
    proto: Proto,
    lane: Lane,
}

/// A session's open batches, one per node.
#[derive(Default)]
pub struct Batcher {
    open: Vec<Open>,
}

impl Batcher {
    /// Adds a request for a slot's master (or any master for `None`) to that node's batch and
    /// returns what the session waits on. It leaves at the next [`Batcher::flush`].
    pub fn add(
        &mut self,
        proxy: &Arc<Proxy>,
        slot: Option<u16>,
        request: Bytes,
        proto: Proto,
        lane: Lane,
    ) -> Pending {
        let topology = proxy.topology.load();
        let node = match master_node(&topology, slot) {
            Ok(node) => node,
            Err(no_node) => {
                return await_master(proxy, &topology, slot, request, proto, lane)
                    .unwrap_or(no_node)
            }
        };
        let at = match self
            .open
            .iter()
            .position(|o| o.shared.conn.addr == node.addr)
        {
            Some(i) => i,
            None => {
                let conn = match proxy.pool(lane).get(&node.addr, proto, lane.conn) {
                    Ok(conn) => conn,
                    Err(e) => {
                        let addr = node.addr.clone();
                        return Pending::Future(Box::pin(follow(
                            proxy.clone(),
                            slot,
                            request,
                            proto,
                            lane,
                            addr,
                            Err(e),
                        )));
                    }
                };
                let (reply, rx) = oneshot::channel();
                let shared = Arc::new(Shared {
                    conn,
                    waiting: Mutex::new(Some((rx, 0))),
                    done: OnceLock::new(),
                });
                self.open.push(Open {
                    first: Bytes::new(),
                    bytes: BytesMut::new(),
                    commands: 0,
                    reply,
                    shared,
                });
                self.open.len() - 1
            }
        };
        let open = &mut self.open[at];
        match open.commands {
            0 => open.first = request.clone(),
            1 => {
                open.bytes.reserve(open.first.len() + request.len());
                open.bytes.extend_from_slice(&open.first);
                open.bytes.extend_from_slice(&request);
            }
            _ => open.bytes.extend_from_slice(&request),
        }
        let index = open.commands;
        open.commands += 1;
        let part = Pending::Part(Part {
            shared: open.shared.clone(),
            index,
            slot,
            request,
            proto,
            lane,
        });
        if open.commands >= MAX_COMMANDS || open.bytes.len() >= MAX_BYTES {
            send(self.open.swap_remove(at));
        }
        part
    }

    /// Sends every open batch.
    pub fn flush(&mut self) {
        for open in self.open.drain(..) {
            send(open);
        }
    }
}

/// Requests in one batch at most: a batch's replies are passed on only once all have come,
/// so a long pipeline of large replies goes out in slices rather than all held at once.
const MAX_COMMANDS: u32 = 64;
/// Request bytes in one batch at most, for the same reason.
const MAX_BYTES: usize = 256 * 1024;

fn send(open: Open) {
    if let Some((_, commands)) = &mut *lock(&open.shared.waiting) {
        *commands = open.commands;
    }
    let bytes = if open.commands == 1 {
        open.first
    } else {
        open.bytes.freeze()
    };
    open.shared
        .conn
        .send_prepared(bytes, open.commands, open.reply);
}

impl Part {
    /// The node this part was sent to (for timeout metrics).
    pub fn addr(&self) -> &str {
        &self.shared.conn.addr
    }

    /// Polls for this request's first reply.
    fn poll_first(&mut self, cx: &mut Context<'_>) -> Poll<ReplyResult> {
        let done = match self.shared.done.get() {
            Some(done) => done,
            None => match self.receive(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(done) => done,
            },
        };
        let replies = match done {
            Ok(replies) => replies,
            Err(e) => return Poll::Ready(Err(e.clone())),
        };
        Poll::Ready(
            replies
                .get(self.index as usize)
                .ok_or_else(|| BackendError::Protocol {
                    addr: self.shared.conn.addr.clone(),
                    reason: "a batched request has no reply".into(),
                }),
        )
    }

    /// Waits for the batch's reply and splits it for every part (the first part to see it
    /// does this once).
    fn receive(&self, cx: &mut Context<'_>) -> Poll<&Result<Replies, BackendError>> {
        let mut waiting = lock(&self.shared.waiting);
        let Some((rx, commands)) = &mut *waiting else {
            // Another part took the reply; it set `done` before letting go of the lock.
            return match self.shared.done.get() {
                Some(done) => Poll::Ready(done),
                None => Poll::Pending,
            };
        };
        let commands = *commands as usize;
        let result = match std::pin::Pin::new(rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => received(result, &self.shared.conn.addr),
        };
        let done = result.and_then(|blob| {
            if commands == 1 {
                // The connection delivered exactly one reply.
                return Ok(Replies::One(blob));
            }
            reply_ends(&blob, commands)
                .map(|ends| Replies::Many { blob, ends })
                .ok_or_else(|| BackendError::Protocol {
                    addr: self.shared.conn.addr.clone(),
                    reason: "replies do not match the batched requests".into(),
                })
        });
        let done = self.shared.done.get_or_init(|| done);
        *waiting = None;
        Poll::Ready(done)
    }

    /// Polls for the reply; a redirect or a failure turns into the retry loop, returned as a
    /// future for the caller to keep polling.
    pub fn poll_reply(
        &mut self,
        cx: &mut Context<'_>,
        proxy: &Arc<Proxy>,
    ) -> Poll<Result<Bytes, super::forward::BoxFuture>> {
        let first = match self.poll_first(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(first) => first,
        };
        match first {
            Ok(bytes) if !is_redirect(&bytes) => Poll::Ready(Ok(bytes)),
            other => Poll::Ready(Err(Box::pin(follow(
                proxy.clone(),
                self.slot,
                self.request.clone(),
                self.proto,
                self.lane,
                self.shared.conn.addr.clone(),
                other,
            )))),
        }
    }
}

/// Where each of `count` replies that arrived back to back ends; None unless the blob is
/// exactly that many whole replies.
fn reply_ends(blob: &[u8], count: usize) -> Option<Vec<usize>> {
    let mut ends = Vec::with_capacity(count);
    let mut at = 0;
    for _ in 0..count {
        at += ReplyScanner::default().scan(blob.get(at..)?).ok()??;
        ends.push(at);
    }
    (at == blob.len()).then_some(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_split_back_to_back() {
        let blob = Bytes::from_static(b"+OK\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n");
        let ends = reply_ends(&blob, 3).unwrap();
        assert_eq!(&blob[..ends[0]], &b"+OK\r\n"[..]);
        assert_eq!(&blob[ends[0]..ends[1]], &b"$3\r\nabc\r\n"[..]);
        assert_eq!(&blob[ends[1]..ends[2]], &b"*2\r\n:1\r\n$-1\r\n"[..]);
        assert!(reply_ends(&blob, 2).is_none());
        assert!(reply_ends(&blob, 4).is_none());
    }
}
