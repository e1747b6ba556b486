//! How a full sync's snapshot reaches the replicas that wait for it: the two
//! `persistence::snapshot::Target`s of replication.
//!
//! - Disk ([`DiskSync`]): the snapshot is written to the RDB file as BGSAVE writes it
//!   (Redis's "BGSAVE for SYNC with target: disk"); once it is in place each replica gets
//!   its own handle on it, opened before any later save can replace it, and its feeder
//!   sends `$<len>\r\n` and the bytes.
//! - Diskless ([`SocketSync`]): the snapshot thread hands the file's bytes, as it encodes
//!   them, to every replica's feeder through a bounded channel (a slow replica slows the
//!   snapshot, as Redis's pipe to its child does); each feeder writes them between
//!   `$EOF:<mark>\r\n` and the mark. A replica that went away is dropped from the fan-out;
//!   when none is left the snapshot stops.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::server::clients::lock;

/// Chunks of the diskless payload in flight per replica.
const CHANNEL_CHUNKS: usize = 16;

/// One piece of a diskless payload: `Some(bytes)`, then `None` once the file is
/// complete. A channel closed before `None` means the snapshot failed.
pub type Piece = Option<Bytes>;

/// The disk target: replicas waiting for the RDB file.
pub struct DiskSync {
    waiting: Vec<oneshot::Sender<File>>,
}

impl DiskSync {
    pub fn new(waiting: Vec<oneshot::Sender<File>>) -> DiskSync {
        DiskSync { waiting }
    }

    /// The file is in place: each replica gets a handle of its own (called while no other
    /// save can rename over it).
    pub fn deliver(&mut self, path: &Path) {
        for tx in self.waiting.drain(..) {
            match File::open(path) {
                Ok(file) => {
                    let _ = tx.send(file);
                }
                Err(e) => crate::log::warning!("Can't open {} for SYNC: {e}", path.display()),
            }
        }
    }
}

/// The diskless target: the replicas' channels.
pub struct SocketSync {
    outs: Mutex<Vec<mpsc::Sender<Piece>>>,
}

impl SocketSync {
    /// A target and, per replica, the receiving end its feeder reads.
    pub fn new(replicas: usize) -> (SocketSync, Vec<mpsc::Receiver<Piece>>) {
        let (outs, ins) = (0..replicas).map(|_| mpsc::channel(CHANNEL_CHUNKS)).unzip();
        (
            SocketSync {
                outs: Mutex::new(outs),
            },
            ins,
        )
    }

    /// The file is complete: every feeder may send the end mark.
    pub fn finish(&self) {
        for out in lock(&self.outs).drain(..) {
            let _ = out.blocking_send(None);
        }
    }
}

/// The snapshot thread writes the file through this (never on a runtime thread:
/// `blocking_send` waits while a replica's channel is full).
impl Write for &SocketSync {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut outs = lock(&self.outs);
        let piece = Bytes::copy_from_slice(buf);
        outs.retain(|out| out.blocking_send(Some(piece.clone())).is_ok());
        if outs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "no replica is left to receive the snapshot",
            ));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
