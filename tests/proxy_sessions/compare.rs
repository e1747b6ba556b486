//! Comparing two replies: exactly, or with the order of aggregates left out.

use slotproxy::resp::{parse_frame, Frame};

/// A long reply cut for the failure message.
pub fn shorten(text: &str) -> String {
    const LIMIT: usize = 400;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], text.len()),
        None => text.to_string(),
    }
}

/// Whether two replies are equal once the elements of every array, set and map in them
/// are sorted: the same elements, at any depth, in any order.
pub fn same_elements(a: &[u8], b: &[u8]) -> bool {
    match (parse_frame(a), parse_frame(b)) {
        (Ok(Some((a, _))), Ok(Some((b, _)))) => canonical(a) == canonical(b),
        _ => false,
    }
}

/// `frame` with the elements of each aggregate sorted (by their debug form).
fn canonical(frame: Frame) -> String {
    let sorted = |items: Vec<Frame>| {
        let mut items: Vec<String> = items.into_iter().map(canonical).collect();
        items.sort();
        items
    };
    match frame {
        Frame::Array(items) => format!("array{:?}", sorted(items)),
        Frame::Set(items) => format!("set{:?}", sorted(items)),
        Frame::Push(items) => format!("push{:?}", sorted(items)),
        Frame::Map(pairs) => {
            let mut pairs: Vec<String> = pairs
                .into_iter()
                .map(|(k, v)| format!("{} => {}", canonical(k), canonical(v)))
                .collect();
            pairs.sort();
            format!("map{pairs:?}")
        }
        other => format!("{other:?}"),
    }
}
