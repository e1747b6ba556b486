//! Bitwise operations between strings.
//!
//! - `BITOP AND|OR|XOR|NOT destkey srckey [srckey ...]` → integer: the length of the result,
//!   which is as long as the longest source (shorter sources and missing keys count as
//!   zero-filled). The result replaces `destkey` (value and TTL, like SET) as a `raw` string;
//!   an empty result deletes `destkey` instead. An unknown operation is `ERR syntax error`;
//!   NOT takes exactly one source (`ERR BITOP NOT must be called with a single source key.`);
//!   a source that is not a string is WRONGTYPE.

use bytes::Bytes;

use super::super::errors::SYNTAX;
use super::super::{args, CmdResult, Ctx};
use super::read_string;
use crate::types::{StringValue, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Xor,
    Not,
}

impl Op {
    fn parse(name: &[u8]) -> Option<Op> {
        [
            ("and", Op::And),
            ("or", Op::Or),
            ("xor", Op::Xor),
            ("not", Op::Not),
        ]
        .into_iter()
        .find(|(word, _)| args::is(name, word))
        .map(|(_, op)| op)
    }
}

/// Folds one more source into the result built from the sources before it.
fn combine(result: &mut Vec<u8>, source: &[u8], op: Op) {
    if source.len() > result.len() {
        // The earlier sources were shorter: their missing bytes are zeros.
        result.resize(source.len(), 0);
    }
    let (covered, beyond) = result.split_at_mut(source.len());
    match op {
        Op::And => {
            covered.iter_mut().zip(source).for_each(|(r, s)| *r &= s);
            // AND with the zeros past the end of this source.
            beyond.fill(0);
        }
        Op::Or => covered.iter_mut().zip(source).for_each(|(r, s)| *r |= s),
        Op::Xor => covered.iter_mut().zip(source).for_each(|(r, s)| *r ^= s),
        // NOT has a single source, handled as the first one.
        Op::Not => {}
    }
}

pub(super) fn bitop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let op = Op::parse(&args[1]).ok_or(SYNTAX)?;
    if op == Op::Not && args.len() != 4 {
        return Err("ERR BITOP NOT must be called with a single source key.".into());
    }
    let mut result = Vec::new();
    for (i, key) in args[3..].iter().enumerate() {
        let source = read_string(ctx.db(), key)?.unwrap_or_default();
        if i == 0 {
            result.extend_from_slice(source);
            if op == Op::Not {
                result.iter_mut().for_each(|r| *r = !*r);
            }
        } else {
            combine(&mut result, source, op);
        }
    }
    let len = result.len();
    let dest = &args[2];
    if result.is_empty() {
        if ctx.db().remove(dest).is_some() {
            ctx.notify(crate::pubsub::notify::GENERIC, "del", dest);
        }
    } else {
        ctx.db()
            .insert(dest, Value::Str(StringValue::raw(result)), 0);
        ctx.notify(crate::pubsub::notify::STRING, "set", dest);
    }
    ctx.out.integer(len as i64);
    Ok(())
}
