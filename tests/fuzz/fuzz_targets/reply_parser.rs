//! Fuzzes `parse_frame` on arbitrary bytes.
//!
//! Properties: no panic; the reported length is within the input; every proper prefix of the
//! frame's bytes is incomplete (never an error); and a parsed frame re-encoded with
//! `Frame::to_bytes(Proto::Resp3)` parses back to the same frame, using all the bytes.
//!
//! "The same" allows for what the RESP3 encoder changes on purpose (see [`as_encoded`]).

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use slotproxy::resp::{parse_frame, Frame, Proto};

/// The frame the RESP3 encoder is meant to produce from `frame`:
/// - error texts have CR and LF replaced by spaces (`ReplyBuf::error_bytes`, as Redis does);
/// - blob errors (`!`) are written as simple errors (`Frame::write`);
/// - the RESP2 null array is written as the RESP3 null (`_`), which parses as `Null`.
fn as_encoded(frame: &Frame) -> Frame {
    let sanitized = |text: &Bytes| {
        let clean: Vec<u8> = text
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        Frame::Error(Bytes::from(clean))
    };
    let all = |items: &[Frame]| items.iter().map(as_encoded).collect();
    match frame {
        Frame::Error(text) | Frame::BlobError(text) => sanitized(text),
        Frame::NullArray => Frame::Null,
        Frame::Array(items) => Frame::Array(all(items)),
        Frame::Set(items) => Frame::Set(all(items)),
        Frame::Push(items) => Frame::Push(all(items)),
        Frame::Map(pairs) => Frame::Map(
            pairs
                .iter()
                .map(|(k, v)| (as_encoded(k), as_encoded(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Frame equality where NaN equals NaN (`,nan` is valid RESP3; `f64` NaN is not equal to itself).
fn same(a: &Frame, b: &Frame) -> bool {
    let all =
        |x: &[Frame], y: &[Frame]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    match (a, b) {
        (Frame::Double(x), Frame::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Frame::Array(x), Frame::Array(y))
        | (Frame::Set(x), Frame::Set(y))
        | (Frame::Push(x), Frame::Push(y)) => all(x, y),
        (Frame::Map(x), Frame::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(Some((frame, used))) = parse_frame(data) else {
        return;
    };
    assert!(
        used > 0 && used <= data.len(),
        "used {used} of {}",
        data.len()
    );
    // A frame is only complete once its last byte has arrived (bounded to keep runs fast).
    if used < 512 {
        for cut in 0..used {
            assert_eq!(parse_frame(&data[..cut]), Ok(None), "cut at {cut}");
        }
    }
    let encoded = frame.to_bytes(Proto::Resp3);
    let shown = String::from_utf8_lossy(&encoded);
    let Ok(Some((reparsed, reused))) = parse_frame(&encoded) else {
        panic!("{frame:?} re-encoded as {shown:?} does not parse back");
    };
    assert_eq!(reused, encoded.len(), "re-encoded as {shown:?}");
    let expected = as_encoded(&frame);
    assert!(
        same(&reparsed, &expected),
        "{frame:?} re-encoded as {shown:?} parses as {reparsed:?}"
    );
});
