//! Comparing one step's replies: same kind (error or value), then same value where the
//! command's [`Comparison`] asks for it.

use slotproxy::resp::{Frame, Proto};

use super::conn::{Failure, Reply};
use super::policy::Comparison;

/// How two replies differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Difference {
    /// One side answered with an error (or closed the connection) and the other did not.
    Kind,
    /// Both answered with the same kind but different bytes.
    Value,
    /// The subject answered `unknown command` (or subcommand) where the reference did not:
    /// a command not implemented yet, counted apart from wrong answers.
    Unimplemented,
}

impl Difference {
    pub fn name(self) -> &'static str {
        match self {
            Difference::Kind => "kind",
            Difference::Value => "value",
            Difference::Unimplemented => "unimplemented",
        }
    }
}

/// The kind of a reply: value, error, or no reply at all.
fn kind(reply: &Result<Reply, Failure>) -> &'static str {
    match reply {
        Ok((frame, _)) if frame.is_error() => "error",
        Ok(_) => "value",
        Err(Failure::Closed) => "closed",
        Err(Failure::Timeout) => "timeout",
        Err(Failure::Garbage(_)) => "garbage",
    }
}

/// How unknown a reply says the command is: 2 for `unknown command` (also from a script), 1 for `unknown
/// subcommand`, 0 otherwise. A subject that does not know a container (ACL) answers
/// `unknown command` where Redis says `unknown subcommand` to a bad subcommand.
fn unknown_level(reply: &Result<Reply, Failure>) -> u8 {
    match reply {
        Ok((Frame::Error(text), _))
            if text.starts_with(b"ERR unknown command")
                || text.starts_with(b"ERR Unknown Redis command called from script") =>
        {
            2
        }
        Ok((Frame::Error(text), _)) if text.starts_with(b"ERR unknown subcommand") => 1,
        _ => 0,
    }
}

/// Compares the subject's reply with the reference's.
pub fn compare(
    subject: &Result<Reply, Failure>,
    reference: &Result<Reply, Failure>,
    how: Comparison,
) -> Option<Difference> {
    if unknown_level(subject) > unknown_level(reference) {
        return Some(Difference::Unimplemented);
    }
    if kind(subject) != kind(reference) {
        return Some(Difference::Kind);
    }
    let (Ok((subject_frame, subject_raw)), Ok((reference_frame, reference_raw))) =
        (subject, reference)
    else {
        return None;
    };
    let same = match how {
        Comparison::KindOnly => true,
        Comparison::Exact => subject_raw == reference_raw,
        Comparison::Unordered => normalized(subject_frame) == normalized(reference_frame),
        Comparison::Length => match (subject_frame, reference_frame) {
            (Frame::Array(a), Frame::Array(b)) => a.len() == b.len(),
            _ => subject_raw == reference_raw,
        },
    };
    (!same).then_some(Difference::Value)
}

/// A frame's top-level elements encoded and sorted (map entries as pairs).
fn normalized(frame: &Frame) -> Vec<Vec<u8>> {
    let encode = |f: &Frame| f.to_bytes(Proto::Resp3).to_vec();
    let mut parts: Vec<Vec<u8>> = match frame {
        Frame::Array(items) | Frame::Set(items) => items.iter().map(encode).collect(),
        Frame::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| [encode(k), encode(v)].concat())
            .collect(),
        other => vec![encode(other)],
    };
    parts.sort();
    parts
}

/// A reply as one short line for reports.
pub fn show(reply: &Result<Reply, Failure>) -> String {
    match reply {
        Ok((_, raw)) => {
            let text = String::from_utf8_lossy(raw).replace("\r\n", "\\r\\n");
            if text.len() > 160 {
                let cut: String = text.chars().take(160).collect();
                format!("{cut}... ({} bytes)", raw.len())
            } else {
                text
            }
        }
        Err(failure) => format!("<{failure:?}>"),
    }
}
