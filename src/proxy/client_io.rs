//! A client's socket and buffers: what it sent (decoded into requests, within Redis's limits
//! and the proxy's request size limit) and the replies waiting to be written. An idle client
//! keeps no buffers.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::stats::Stats;
use super::Proxy;
use crate::resp::RequestDecoder;

/// The client's socket, its buffers and the requests decoded but not yet dispatched.
pub struct ClientIo {
    /// One stream, not split halves: splitting costs every client a shared allocation.
    pub(super) stream: TcpStream,
    pub(super) input: BytesMut,
    /// How much the last read reserved: the input buffer is given back while the client
    /// is idle, and a client that sends large pipelines gets large reads again at once.
    pub(super) input_hint: usize,
    pub output: BytesMut,
    pub(super) decoder: RequestDecoder,
    pub(super) requests: VecDeque<Vec<Bytes>>,
    pub(super) protocol_error: Option<String>,
    /// Decoding stopped with requests left in `input`: after one request because the
    /// client had not authenticated (the rest is decoded once that request has run, with
    /// the limits its AUTH leaves, as Redis checks each request of a pipeline in turn), or
    /// at the client's window of requests in flight.
    pub(super) undecoded: bool,
    /// `limits.client_output_buffer_bytes` when the client connected.
    pub(super) output_limit: usize,
    pub(super) proxy: Arc<Proxy>,
}

impl ClientIo {
    /// Reads what the client sent and decodes it. False when the client is gone.
    pub async fn read_more(&mut self) -> bool {
        self.reserve_input();
        let read = self.stream.read_buf(&mut self.input).await;
        self.take_read(read)
    }

    /// Makes room for the next read.
    pub(super) fn reserve_input(&mut self) {
        // Start small and grow with what the client sends: thousands of idle clients must
        // not each pin a large buffer.
        if self.input.capacity() == self.input.len() {
            let want = self
                .input
                .capacity()
                .max(self.input_hint)
                .clamp(512, 64 * 1024);
            self.input_hint = want;
            self.input.reserve(want);
        }
    }

    /// Gives back the buffers of a client with nothing in progress: thousands of idle
    /// clients then cost their session state only (a read allocates again when bytes come).
    pub(super) fn release_buffers(&mut self) {
        if self.input.is_empty() && self.input.capacity() > 0 {
            self.input = BytesMut::new();
        }
        if self.output.is_empty() && self.output.capacity() > 0 {
            self.output = BytesMut::new();
        }
        if self.requests.is_empty() && self.requests.capacity() > 0 {
            self.requests = VecDeque::new();
        }
    }

    /// Takes in what a read brought. False when the client is gone.
    pub(super) fn take_read(&mut self, read: std::io::Result<usize>) -> bool {
        match read {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                Stats::add(&self.proxy.stats.bytes_in, n as u64);
                self.decode();
                true
            }
        }
    }

    pub(super) fn decode(&mut self) {
        // No more requests decoded than may be in flight: the rest waits in `input`, where
        // it is a third of the size (a decoded request is a vector of shared slices), for a
        // client that is behind (pipelining without reading) some 170 KB less per read.
        let window = super::session::pending_window(&self.output);
        while self.protocol_error.is_none() {
            if self.requests.len() >= window {
                self.undecoded = true;
                break;
            }
            match self.decoder.decode(&mut self.input) {
                Ok(Some(args)) => {
                    self.requests.push_back(args);
                    if self.decoder.limits.unauthenticated {
                        self.undecoded = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => self.protocol_error = Some(e.0),
            }
        }
        // A request still arriving may not grow past the limit either.
        let limit = self.proxy.config.load().limits.max_request_bytes;
        let announced = self
            .decoder
            .pending_bulk_bytes(self.input.len())
            .unwrap_or(0);
        let size = self.decoder.partial_bytes() + self.input.len() + announced;
        if size > limit && self.protocol_error.is_none() {
            self.protocol_error = Some(format!(
                "slotproxy: request larger than limits.max_request_bytes ({limit} bytes)"
            ));
        }
    }

    /// Writes what the socket takes now, without waiting; the rest stays in `output`.
    /// False when the client is gone.
    pub(super) fn write_now(&mut self) -> bool {
        while !self.output.is_empty() {
            match self.stream.try_write(&self.output) {
                Ok(0) => return false,
                Ok(n) => {
                    Stats::add(&self.proxy.stats.bytes_out, n as u64);
                    self.output.advance(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        if self.output.is_empty() && self.output.capacity() > 1024 * 1024 {
            self.output = BytesMut::new();
        }
        true
    }

    /// Writes all of `output`, waiting for the client to take it. False when it is gone.
    pub(super) async fn flush(&mut self) -> bool {
        loop {
            if !self.write_now() {
                return false;
            }
            if self.output.is_empty() {
                return true;
            }
            if self.stream.writable().await.is_err() {
                return false;
            }
        }
    }
}
