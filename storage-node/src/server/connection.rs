//! One client connection: read what is buffered, decode every complete request, run the
//! batch under one keyspace lock, write all replies with one write.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use slotproxy::resp::{Limits, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::clients::{Client, ClientHandle};
use super::stats::Stats;
use super::Shared;

const READ_CHUNK: usize = 16 * 1024;
/// Buffers that grew past this for one large request are given back once drained.
const KEEP_BUFFER: usize = 1024 * 1024;

pub async fn serve(shared: Arc<Shared>, mut stream: TcpStream, handle: Arc<ClientHandle>) {
    let needs_auth = shared.config().requirepass.is_some();
    let mut client = Client::new(handle.clone(), needs_auth);
    let mut decoder = RequestDecoder::new(Limits::default());
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(READ_CHUNK);
    let mut batch: Vec<Vec<Bytes>> = Vec::new();
    handle.touch();
    loop {
        let (idle_timeout, max_bulk, query_limit) = {
            let config = shared.config();
            (
                config.timeout,
                config.proto_max_bulk_len,
                config.client_query_buffer_limit,
            )
        };
        decoder.limits.max_bulk_len = max_bulk;
        decoder.limits.unauthenticated = !client.authenticated;
        if input.capacity() - input.len() < READ_CHUNK / 4 {
            input.reserve(READ_CHUNK);
        }
        let read = tokio::select! {
            read = stream.read_buf(&mut input) => read,
            _ = handle.kill.notified() => break,
            _ = idle(idle_timeout) => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => Stats::add(&shared.stats.total_net_input_bytes, n as u64),
        }
        let mut protocol_error = None;
        loop {
            match decoder.decode(&mut input) {
                Ok(Some(args)) => batch.push(args),
                Ok(None) => break,
                Err(e) => {
                    protocol_error = Some(e);
                    break;
                }
            }
        }
        let buffered = input.len() + decoder.partial_bytes();
        handle
            .query_buffer
            .store(buffered, std::sync::atomic::Ordering::Relaxed);
        if !batch.is_empty() {
            let mut keyspace = shared.lock_keyspace();
            for args in batch.drain(..) {
                crate::cmd::execute(&shared, &mut keyspace, &mut client, &mut output, &args);
                if client.close_after_reply {
                    break;
                }
            }
            drop(keyspace);
            batch.clear();
            handle.touch();
        }
        if let Some(e) = &protocol_error {
            output.extend_from_slice(format!("-ERR {e}\r\n").as_bytes());
            client.close_after_reply = true;
        }
        if !output.is_empty() {
            Stats::add(&shared.stats.total_net_output_bytes, output.len() as u64);
            if stream.write_all(&output).await.is_err() {
                break;
            }
            output.clear();
            if output.capacity() > KEEP_BUFFER {
                output = BytesMut::with_capacity(READ_CHUNK);
            }
        }
        if client.close_after_reply || handle.killed.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if buffered > query_limit {
            eprintln!(
                "closing client {} that reached max query buffer length ({buffered} bytes)",
                handle.addr
            );
            break;
        }
        if input.is_empty() && input.capacity() > KEEP_BUFFER {
            input = BytesMut::with_capacity(READ_CHUNK);
        }
    }
    let _ = stream.shutdown().await;
    shared.clients.unregister(handle.id);
}

async fn idle(timeout_secs: u64) {
    if timeout_secs == 0 {
        std::future::pending::<()>().await
    } else {
        tokio::time::sleep(Duration::from_secs(timeout_secs)).await
    }
}
