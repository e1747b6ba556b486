//! WAIT's blocked clients: each waits until enough replicas acknowledged the stream up to
//! its last write, or its timeout (Redis's `clients_waiting_acks`).
//!
//! A client blocks without holding the keyspace lock: its connection waits on a oneshot
//! that a replica's ACK completes ([`Waiters::wake`]) or on its deadline, when it answers
//! the count at that moment ([`Replicas::count_acked`]).

use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::master::Replicas;
use crate::server::clients::lock;

struct Waiter {
    offset: u64,
    needed: usize,
    reply: oneshot::Sender<Bytes>,
}

/// What a connection waits on after WAIT blocked.
pub struct AckWait {
    pub reply: oneshot::Receiver<Bytes>,
    /// The offset the replicas must acknowledge (the client's last write).
    pub offset: u64,
    /// `None`: forever.
    pub timeout: Option<std::time::Duration>,
}

#[derive(Default)]
pub struct Waiters {
    list: Mutex<Vec<Waiter>>,
}

/// WAIT's reply: the number of replicas, an integer in either protocol.
pub fn count_reply(count: usize) -> Bytes {
    Bytes::from(format!(":{count}\r\n"))
}

impl Waiters {
    /// Blocks a client until `needed` replicas acknowledged `offset`.
    pub fn add(&self, offset: u64, needed: usize, timeout: Option<std::time::Duration>) -> AckWait {
        let (tx, rx) = oneshot::channel();
        lock(&self.list).push(Waiter {
            offset,
            needed,
            reply: tx,
        });
        AckWait {
            reply: rx,
            offset,
            timeout,
        }
    }

    pub fn is_empty(&self) -> bool {
        lock(&self.list).is_empty()
    }

    /// After an ACK: answers every waiter that now has its count, and forgets those
    /// whose client went away or timed out.
    pub fn wake(&self, replicas: &Replicas) {
        let mut list = lock(&self.list);
        if list.is_empty() {
            return;
        }
        let waiting = std::mem::take(&mut *list);
        for waiter in waiting {
            if waiter.reply.is_closed() {
                continue;
            }
            let count = replicas.count_acked(waiter.offset);
            if count >= waiter.needed {
                let _ = waiter.reply.send(count_reply(count));
            } else {
                list.push(waiter);
            }
        }
    }
}
