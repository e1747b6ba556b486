//! Fuzzes `RequestDecoder`: arbitrary bytes, fed in arbitrary chunkings, with the default
//! limits and with tiny ones.
//!
//! Input layout: `[config, n, chunk_1 .. chunk_n, payload ...]`.
//! - `config` bit 0: tiny limits (bulk 8, multibulk 4, inline 16) instead of Redis's defaults;
//!   bit 1: the client is unauthenticated (Redis's 10-argument / 16 KB caps).
//! - `n % 16` chunk sizes follow (each byte + 1, used cyclically) to cut the payload into reads.
//!
//! Properties: no panic; decoding the payload in one read and in pieces gives the same requests
//! and the same protocol error. One exception is inherent to an incremental decoder and shared
//! by Redis: the "too big ..." checks fire when the *buffered* bytes exceed a limit without a
//! line end, so in pieces they can fire where the whole input would have shown a line end a
//! little further on. Then the requests decoded in pieces must be a prefix of the others.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use slotproxy::resp::{Limits, ProtocolError, RequestDecoder};

/// What a connection would have seen: the requests, then the error that closed it, if any.
#[derive(Debug, PartialEq)]
struct Outcome {
    requests: Vec<Vec<Bytes>>,
    error: Option<ProtocolError>,
}

/// Decodes every complete request in `buf`; false once a protocol error ended the stream.
fn drain(decoder: &mut RequestDecoder, buf: &mut BytesMut, outcome: &mut Outcome) -> bool {
    // Each successful decode consumes at least one byte, so this loop is bounded by the input.
    loop {
        let before = buf.len();
        match decoder.decode(buf) {
            Ok(Some(args)) => {
                assert!(!args.is_empty(), "empty requests are skipped");
                assert!(buf.len() < before, "a request consumes bytes");
                assert!(!decoder.in_progress());
                outcome.requests.push(args);
            }
            Ok(None) => {
                // The introspection used by the server's query-buffer accounting must not panic.
                let _ = decoder.partial_bytes();
                let _ = decoder.pending_bulk_bytes(buf.len());
                return true;
            }
            Err(error) => {
                outcome.error = Some(error);
                return false;
            }
        }
    }
}

fn decode_in_chunks(limits: Limits, payload: &[u8], chunk_sizes: &[usize]) -> Outcome {
    let mut decoder = RequestDecoder::new(limits);
    let mut buf = BytesMut::new();
    let mut outcome = Outcome {
        requests: Vec::new(),
        error: None,
    };
    let mut rest = payload;
    let mut sizes = chunk_sizes.iter().cycle();
    while !rest.is_empty() {
        let size = sizes.next().copied().unwrap_or(rest.len()).min(rest.len());
        let (piece, tail) = rest.split_at(size);
        rest = tail;
        buf.extend_from_slice(piece);
        if !drain(&mut decoder, &mut buf, &mut outcome) {
            break;
        }
    }
    outcome
}

fn is_buffering_limit(error: &Option<ProtocolError>) -> bool {
    error.as_ref().is_some_and(|e| e.0.contains("too big"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&config, rest)) = data.split_first() else {
        return;
    };
    let Some((&count, rest)) = rest.split_first() else {
        return;
    };
    let count = usize::from(count % 16).min(rest.len());
    let (sizes, payload) = rest.split_at(count);
    let chunk_sizes: Vec<usize> = sizes.iter().map(|&s| usize::from(s) + 1).collect();

    let mut limits = if config & 1 != 0 {
        Limits {
            max_bulk_len: 8,
            max_multibulk_len: 4,
            max_inline_len: 16,
            unauthenticated: false,
        }
    } else {
        Limits::default()
    };
    limits.unauthenticated = config & 2 != 0;

    let whole = decode_in_chunks(limits, payload, &[]);
    let pieces = decode_in_chunks(limits, payload, &chunk_sizes);
    if is_buffering_limit(&pieces.error) {
        assert!(
            whole.requests.starts_with(&pieces.requests),
            "in pieces: {pieces:?}\nwhole: {whole:?}"
        );
    } else {
        assert_eq!(pieces, whole, "chunk sizes {chunk_sizes:?}");
    }
});
