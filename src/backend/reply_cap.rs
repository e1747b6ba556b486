//! The cap on one backend reply (`limits.max_reply_bytes`, `limits.max_reply_elements`),
//! shared by every backend connection and changed in place by a configuration reload.
//!
//! A node that announces a reply larger than the cap (`*4294967296`, a 4 GB bulk) would
//! otherwise hold its shared connection, and every client behind it, until the operation
//! timeout, and make the proxy buffer whatever arrives. The connection's reader refuses such
//! a reply at its header: the requests waiting on that connection get an error, the
//! connection is closed at once, and `slotproxy_backend_replies_refused_total` counts it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use crate::config::Limits;
use crate::resp::ReplyCap;

/// The current cap, read by the connection readers once per read.
#[derive(Debug)]
pub struct LiveReplyCap {
    max_bytes: AtomicUsize,
    max_elements: AtomicU64,
}

impl LiveReplyCap {
    pub fn new(limits: &Limits) -> LiveReplyCap {
        let cap = LiveReplyCap {
            max_bytes: AtomicUsize::new(0),
            max_elements: AtomicU64::new(0),
        };
        cap.set(limits);
        cap
    }

    /// Applies a (re)loaded configuration.
    pub fn set(&self, limits: &Limits) {
        self.max_bytes.store(limits.max_reply_bytes, Relaxed);
        self.max_elements.store(limits.max_reply_elements, Relaxed);
    }

    pub fn get(&self) -> ReplyCap {
        ReplyCap {
            max_bytes: self.max_bytes.load(Relaxed),
            max_elements: self.max_elements.load(Relaxed),
        }
    }
}
