use bytes::{Bytes, BytesMut};

use super::*;

fn decode_all(decoder: &mut RequestDecoder, buf: &mut BytesMut) -> Vec<Vec<Bytes>> {
    let mut out = Vec::new();
    while let Some(args) = decoder.decode(buf).expect("valid protocol") {
        out.push(args);
    }
    out
}

fn encode_request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Every split of the input into chunks of a fixed size decodes to the same requests.
#[test]
fn every_chunking_decodes_the_same() {
    let mut input = Vec::new();
    input.extend(encode_request(&[b"SET", b"key", b"va\r\nlue"]));
    input.extend_from_slice(b"PING\r\n");
    input.extend(encode_request(&[b"MGET", b"a", b"", b"c"]));
    input.extend_from_slice(b"*0\r\n\r\n");
    input.extend_from_slice(b"set \"a b\" 'c\\'d' \"\\x41\\n\"\n");
    input.extend(encode_request(&[b"GET", &[0xff; 300][..]]));
    // Around the size up to which whole buffered requests copy their arguments.
    input.extend(encode_request(&[
        b"SET",
        &[b'x'; 1024][..],
        &[b'y'; 1025][..],
    ]));
    let expected = decode_all(
        &mut RequestDecoder::default(),
        &mut BytesMut::from(&input[..]),
    );
    assert_eq!(expected.len(), 6);
    assert_eq!(expected[5][2].len(), 1025);
    assert_eq!(expected[3][1], Bytes::from_static(b"a b"));
    assert_eq!(expected[3][2], Bytes::from_static(b"c'd"));
    assert_eq!(expected[3][3], Bytes::from_static(b"A\n"));
    for chunk in 1..=input.len() {
        // Both kinds of decoder: arguments copied (the node) or sharing the request (the
        // proxy).
        for sharing in [false, true] {
            let mut decoder = if sharing {
                RequestDecoder::sharing_arguments(Limits::default())
            } else {
                RequestDecoder::default()
            };
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            for piece in input.chunks(chunk) {
                buf.extend_from_slice(piece);
                got.extend(decode_all(&mut decoder, &mut buf));
            }
            assert_eq!(got, expected, "chunk size {chunk}, sharing {sharing}");
            assert!(buf.is_empty() && !decoder.in_progress());
        }
    }
}

/// A large request in small reads: each read does constant work, not a re-parse.
#[test]
fn large_request_in_small_chunks() {
    let values: Vec<Vec<u8>> = (0..30_000)
        .map(|i| format!("value:{i:08}").into_bytes())
        .collect();
    let mut args: Vec<&[u8]> = vec![b"MSET"];
    for v in &values {
        args.push(v);
        args.push(v);
    }
    let input = encode_request(&args);
    assert!(input.len() > 1_000_000);
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for piece in input.chunks(4096) {
        buf.extend_from_slice(piece);
        got.extend(decode_all(&mut decoder, &mut buf));
    }
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), 60_001);
}

fn first_error(input: &[u8], limits: Limits) -> String {
    let mut decoder = RequestDecoder::new(limits);
    let mut buf = BytesMut::from(input);
    loop {
        match decoder.decode(&mut buf) {
            Ok(Some(_)) => continue,
            Ok(None) => return String::new(),
            Err(e) => return e.0,
        }
    }
}

#[test]
fn protocol_errors_use_redis_texts() {
    let d = Limits::default();
    assert_eq!(
        first_error(b"*abc\r\n", d),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        first_error(b"*1\r\n:1\r\n", d),
        "Protocol error: expected '$', got ':'"
    );
    assert_eq!(
        first_error(b"*1\r\n$-2\r\n", d),
        "Protocol error: invalid bulk length"
    );
    assert_eq!(
        first_error(b"*1\r\n$536870913\r\n", d),
        "Protocol error: invalid bulk length"
    );
    assert_eq!(
        first_error(b"set \"a\r\n", d),
        "Protocol error: unbalanced quotes in request"
    );
    assert_eq!(
        first_error(b"set \"a\"b\r\n", d),
        "Protocol error: unbalanced quotes in request"
    );
    assert_eq!(
        first_error(&vec![b'a'; 70_000], d),
        "Protocol error: too big inline request"
    );
    let mut anon = d;
    anon.unauthenticated = true;
    assert_eq!(
        first_error(b"*11\r\n", anon),
        "Protocol error: unauthenticated multibulk length"
    );
    // Whole requests before the error are served; the error is the incremental path's.
    assert_eq!(
        first_error(b"*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n", d),
        "Protocol error: invalid bulk length"
    );
}

/// A NUL byte hides the line end after it, as Redis's `strchr` does: the line never
/// completes (and the length limit ends it), while NUL bytes inside a bulk are plain data.
#[test]
fn nul_bytes_hide_line_ends() {
    let d = Limits::default();
    let mut decoder = RequestDecoder::new(d);
    let mut buf = BytesMut::from(&b"\0\0\0\0\r\nPING\r\n"[..]);
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    let mut buf = BytesMut::from(&b"*1\0\r\n$4\r\nPING\r\n"[..]);
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    let mut long = b"PING\0".to_vec();
    long.resize(70_000, b'\n');
    assert_eq!(
        first_error(&long, d),
        "Protocol error: too big inline request"
    );
    let mut buf = BytesMut::from(&b"*2\r\n$4\r\nECHO\r\n$3\r\na\0b\r\n"[..]);
    let args = decoder.decode(&mut buf).expect("valid").expect("complete");
    assert_eq!(args[1].as_ref(), b"a\0b");
}

/// A declared 512 MB bulk with no body costs nothing up front.
#[test]
fn declared_bulk_length_does_not_allocate() {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(&b"*1\r\n$536870912\r\nabc"[..]);
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    assert!(buf.capacity() < 1024);
    assert_eq!(
        decoder.pending_bulk_bytes(buf.len()),
        Some(536870912 + 2 - 3)
    );
}

#[test]
fn reply_frames_round_trip() {
    let frames = vec![
        Frame::Simple(Bytes::from_static(b"OK")),
        Frame::Error(Bytes::from_static(b"ERR x")),
        Frame::Integer(-42),
        Frame::bulk(b"hi\r\n"),
        Frame::Null,
        Frame::Array(vec![Frame::Integer(1), Frame::Array(vec![])]),
        Frame::Map(vec![(Frame::bulk(b"k"), Frame::Double(1.5))]),
        Frame::Set(vec![Frame::Boolean(true)]),
        Frame::Push(vec![Frame::bulk(b"message")]),
        Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"hello"),
        },
    ];
    for frame in frames {
        let bytes = frame.to_bytes(Proto::Resp3);
        for cut in 0..bytes.len() {
            assert_eq!(
                parse_frame(&bytes[..cut]),
                Ok(None),
                "{frame:?} cut at {cut}"
            );
        }
        assert_eq!(parse_frame(&bytes), Ok(Some((frame.clone(), bytes.len()))));
    }
}

#[test]
fn doubles_format_like_printf_17g() {
    assert_eq!(format_double(1.5), "1.5");
    assert_eq!(format_double(0.1), "0.10000000000000001");
    assert_eq!(format_double(3.0), "3");
    assert_eq!(format_double(1e20), "1e+20");
    assert_eq!(format_double(1.5e-7), "1.4999999999999999e-07");
    assert_eq!(
        format_double(123456789012345678.0),
        "1.2345678901234568e+17"
    );
    assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
    assert_eq!(format_double(-0.0), "-0");
}

#[test]
fn scanner_finds_frame_ends_in_any_chunking() {
    let frames = vec![
        Frame::Simple(Bytes::from_static(b"OK")),
        Frame::Array(vec![
            Frame::Integer(1),
            Frame::Array(vec![]),
            Frame::bulk(b"x\r\ny"),
        ]),
        Frame::Map(vec![(
            Frame::bulk(b"k"),
            Frame::Set(vec![Frame::Null, Frame::Double(2.5)]),
        )]),
        Frame::NullArray,
        Frame::Null,
    ];
    let mut stream = Vec::new();
    let mut ends = Vec::new();
    for frame in &frames {
        let proto = if matches!(frame, Frame::NullArray) {
            Proto::Resp2
        } else {
            Proto::Resp3
        };
        stream.extend_from_slice(&frame.to_bytes(proto));
        ends.push(stream.len());
    }
    for chunk in 1..=stream.len() {
        let mut scanner = ReplyScanner::default();
        let mut start = 0;
        let mut available = 0;
        let mut found = Vec::new();
        while available < stream.len() {
            available = (available + chunk).min(stream.len());
            while let Some(len) = scanner.scan(&stream[start..available]).expect("valid") {
                start += len;
                found.push(start);
            }
        }
        assert_eq!(found, ends, "chunk {chunk}");
    }
}

/// `levels` nested one-element aggregates opened by `header`, around `:1`.
fn nested(header: &[u8], levels: usize) -> Vec<u8> {
    let mut bytes = header.repeat(levels);
    bytes.extend_from_slice(b":1\r\n");
    bytes
}

#[test]
fn replies_nested_past_the_bound_are_refused_without_recursing_further() {
    // A hostile backend's 100,000-deep reply must come back as an error, not overflow the
    // stack of the thread parsing it.
    for header in [&b"*1\r\n"[..], b"~1\r\n", b">1\r\n", b"%1\r\n", b"|0\r\n"] {
        let reply = nested(header, 100_000);
        let err = parse_frame(&reply).expect_err("too deep");
        assert!(err.0.contains("nesting"), "{err}");
    }
    // Map keys nest too.
    let mut keys = b"%1\r\n".repeat(100_000);
    keys.extend_from_slice(&b":1\r\n".repeat(100_001));
    assert!(parse_frame(&keys).is_err());
}

#[test]
fn replies_nested_up_to_the_bound_parse_and_write_back() {
    // Depth 0 is the outermost frame: MAX_DEPTH + 1 frames in all.
    let reply = nested(b"*1\r\n", super::parse::MAX_DEPTH);
    let (frame, used) = parse_frame(&reply).expect("valid").expect("complete");
    assert_eq!(used, reply.len());
    assert_eq!(&frame.to_bytes(Proto::Resp2)[..], &reply[..]);
    let deeper = nested(b"*1\r\n", super::parse::MAX_DEPTH + 1);
    assert!(parse_frame(&deeper).is_err());
}

#[test]
fn scanner_walks_any_depth_and_rejects_a_bare_line_end() {
    let reply = nested(b"*1\r\n", 100_000);
    assert_eq!(ReplyScanner::default().scan(&reply), Ok(Some(reply.len())));
    // Before: slicing the empty header panicked.
    assert!(ReplyScanner::default().scan(b"\r\n").is_err());
    assert!(ReplyScanner::default().scan(b"*1\r\n\r\n").is_err());
}

#[test]
fn capped_scanner_refuses_announced_sizes_at_the_header() {
    let cap = ReplyCap {
        max_bytes: 1024,
        max_elements: 100,
    };
    let too_large = |buf: &[u8]| {
        matches!(
            ReplyScanner::default().scan_capped(buf, cap),
            Err(ScanError::TooLarge(_))
        )
    };
    // Headers alone: nothing of the announced body has arrived.
    assert!(too_large(b"*4294967296\r\n"));
    assert!(too_large(b"$4294967296\r\n"));
    assert!(too_large(b"%51\r\n"));
    // The elements of every level count together.
    assert!(too_large(
        b"*10\r\n*10\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n*95\r\n"
    ));
    // Bytes: a bulk inside an array counts from the start of the frame.
    let mut near = b"*2\r\n$1000\r\n".to_vec();
    near.extend_from_slice(&[b'x'; 1000]);
    near.extend_from_slice(b"\r\n");
    assert!(!too_large(&near));
    near.extend_from_slice(b"$100\r\n");
    assert!(too_large(&near));
    // At the cap is allowed, and the count starts again with the next frame.
    let mut scanner = ReplyScanner::default();
    let hundred = format!("*100\r\n{}", ":1\r\n".repeat(100));
    assert_eq!(
        scanner.scan_capped(hundred.as_bytes(), cap),
        Ok(Some(hundred.len()))
    );
    assert_eq!(
        scanner.scan_capped(hundred.as_bytes(), cap),
        Ok(Some(hundred.len()))
    );
    // Uncapped scanning is unchanged.
    assert_eq!(ReplyScanner::default().scan(b"*4294967296\r\n"), Ok(None));
}
