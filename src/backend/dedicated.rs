//! A connection used by one client alone: MULTI/EXEC with WATCH, blocking commands, pub/sub.
//!
//! These need a connection whose state (queued transaction, watched keys, subscriptions, a
//! blocked pop) belongs to one client, so they cannot share the multiplexed connections.
//! Their number is bounded by a semaphore; the permit is returned when the client is done.
//! [`DedicatedLimit`] also counts the open ones per node, for the metrics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::BackendError;
use crate::resp::{Proto, ReplyScanner};

/// The bound on dedicated connections, and how many are open per node.
#[derive(Debug)]
pub struct DedicatedLimit {
    permits: Arc<Semaphore>,
    open: Mutex<HashMap<String, usize>>,
}

impl DedicatedLimit {
    pub fn new(max: usize) -> Arc<DedicatedLimit> {
        Arc::new(DedicatedLimit {
            permits: Arc::new(Semaphore::new(max)),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Open dedicated connections per node address.
    pub fn open_per_node(&self) -> HashMap<String, usize> {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn acquire(self: &Arc<Self>, addr: &str) -> Option<Permit> {
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        *self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(addr.to_string())
            .or_default() += 1;
        Some(Permit {
            limit: self.clone(),
            addr: addr.to_string(),
            _permit: permit,
        })
    }
}

/// A dedicated connection's place under the limit; released (and uncounted) on drop.
struct Permit {
    limit: Arc<DedicatedLimit>,
    addr: String,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.limit.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.addr) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.addr);
            }
        }
    }
}

/// A client's own connection to one node.
pub struct Dedicated {
    pub addr: String,
    stream: TcpStream,
    buf: BytesMut,
    scanner: ReplyScanner,
    _permit: Permit,
}

impl Dedicated {
    /// Opens a connection to `addr` speaking `proto`, if a dedicated slot is free.
    pub async fn open(
        addr: &str,
        proto: Proto,
        permits: &Arc<DedicatedLimit>,
        timeout: Duration,
    ) -> Result<Dedicated, BackendError> {
        let permit = permits.acquire(addr).ok_or_else(|| BackendError::Connect {
            addr: addr.to_string(),
            reason: "too many dedicated connections (limits.dedicated_connections)".into(),
        })?;
        let connect_error = |reason: String| BackendError::Connect {
            addr: addr.to_string(),
            reason,
        };
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| connect_error("connect timed out".into()))?
            .map_err(|e| connect_error(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let mut conn = Dedicated {
            addr: addr.to_string(),
            stream,
            buf: BytesMut::with_capacity(4096),
            scanner: ReplyScanner::default(),
            _permit: permit,
        };
        if proto == Proto::Resp3 {
            let reply = conn.call(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n").await?;
            if reply.first() == Some(&b'-') {
                return Err(connect_error(
                    String::from_utf8_lossy(&reply).trim().to_string(),
                ));
            }
        }
        Ok(conn)
    }

    fn lost(&self) -> BackendError {
        BackendError::ConnectionLost {
            addr: self.addr.clone(),
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) -> Result<(), BackendError> {
        let lost = self.lost();
        self.stream.write_all(bytes).await.map_err(|_| lost)
    }

    /// Reads the next reply. Cancel-safe: bytes read so far stay buffered.
    pub async fn read_reply(&mut self) -> Result<Bytes, BackendError> {
        loop {
            match self.scanner.scan(&self.buf) {
                Ok(Some(len)) => return Ok(self.buf.split_to(len).freeze()),
                Ok(None) => {}
                Err(e) => {
                    return Err(BackendError::Protocol {
                        addr: self.addr.clone(),
                        reason: e.to_string(),
                    })
                }
            }
            if self.buf.capacity() - self.buf.len() < 1024 {
                self.buf.reserve(16 * 1024);
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Err(self.lost()),
                Ok(_) => {}
            }
        }
    }

    /// Splits the connection for a reader task (pub/sub): the read half with the bytes
    /// already buffered, and the write half that keeps the dedicated-connection permit.
    pub fn into_split(self) -> (tokio::net::tcp::OwnedReadHalf, BytesMut, DedicatedWriter) {
        let (read, write) = self.stream.into_split();
        (
            read,
            self.buf,
            DedicatedWriter {
                addr: self.addr,
                write,
                _permit: self._permit,
            },
        )
    }

    pub async fn call(&mut self, bytes: &[u8]) -> Result<Bytes, BackendError> {
        self.send(bytes).await?;
        self.read_reply().await
    }
}

/// The writing side of a split dedicated connection.
pub struct DedicatedWriter {
    pub addr: String,
    write: tokio::net::tcp::OwnedWriteHalf,
    _permit: Permit,
}

impl DedicatedWriter {
    pub async fn send(&mut self, bytes: &[u8]) -> Result<(), BackendError> {
        self.write
            .write_all(bytes)
            .await
            .map_err(|_| BackendError::ConnectionLost {
                addr: self.addr.clone(),
            })
    }
}
