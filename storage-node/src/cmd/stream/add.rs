//! Adding and trimming.
//!
//! - `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value
//!   [field value ...]` → the new entry's id as a bulk string; a null bulk with NOMKSTREAM
//!   and no key. `id` is `<ms>-<seq>`, `<ms>` (sequence 0) or `<ms>-*` (next sequence).
//! - `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]` → how many entries went.
//!
//! Errors, as Redis 7.0 words them: `ERR The ID specified in XADD is equal or smaller than
//! the target stream top item`, `ERR The ID specified in XADD must be greater than 0-0`,
//! `ERR The stream has exhausted the last possible ID, unable to add more items`,
//! `ERR Elements are too large to be stored`, `ERR The MAXLEN argument must be >= 0.`,
//! `ERR The LIMIT argument must be >= 0.`, and the syntax errors below.
//!
//! `~` trims whole nodes only, at most LIMIT entries (default 100 × stream-node-max-entries);
//! the command is then propagated with `=` and the threshold it reached (the new length, or
//! the first remaining id), and XADD with the id it generated, so replicas and the AOF
//! replay the same result (`streamRewriteApproxSpecifier`, `streamRewriteTrimArgument`).

use bytes::Bytes;

use super::{id_arg, limits, parse_id, strict_id, write_stream, INVALID_ID};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{wrong_arity, CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::pubsub::notify;
use crate::types::stream::{
    IdSyntax, IdText, ParsedId, StreamId, StreamValue, Trim, TrimStrategy, LISTPACK_MAX_SIZE,
};
use crate::types::Value;

const XADD_ID_SYNTAX: IdSyntax = IdSyntax {
    missing_seq: 0,
    strict: true,
    auto_seq: true,
};

/// What XADD's and XTRIM's options asked for.
struct AddTrimArgs {
    trim: Option<Trim>,
    /// Index of the threshold argument (rewritten for propagation after `~`).
    threshold_at: usize,
    no_mkstream: bool,
    /// XADD's id (None for `*`).
    id: Option<ParsedId>,
    /// Index of XADD's id argument.
    id_at: usize,
}

/// Parses the options as `streamParseAddOrTrimArgsOrReply` does.
fn parse_add_trim(ctx: &Ctx<'_>, args: &[Bytes], xadd: bool) -> Result<AddTrimArgs, CmdError> {
    let mut strategy: Option<TrimStrategy> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut parsed = AddTrimArgs {
        trim: None,
        threshold_at: 0,
        no_mkstream: false,
        id: None,
        id_at: args.len(),
    };
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            parsed.id_at = i;
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if strategy.is_some() {
                return Err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible".into());
            }
            approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let threshold = &args[i + 1];
            strategy = Some(if is(opt, "maxlen") {
                let max = int(threshold)?;
                if max < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                TrimStrategy::MaxLen(max as u64)
            } else {
                TrimStrategy::MinId(strict_id(threshold)?)
            });
            i += 1;
            parsed.threshold_at = i;
        } else if is(opt, "limit") && more > 0 {
            let n = int(&args[i + 1])?;
            if n < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            limit = Some(n);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            parsed.no_mkstream = true;
        } else if xadd {
            parsed.id = Some(parse_id(opt, XADD_ID_SYNTAX)?);
            parsed.id_at = i;
            break;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if limit.is_some_and(|n| n != 0) && strategy.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if strategy.is_none() && !xadd {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    let limit = if ctx.client.loading || ctx.client.master {
        // A replayed command (the AOF, a master's stream: Redis's `mustObeyClient`) trims
        // exactly what it says (it was rewritten with `=`).
        0
    } else if let Some(n) = limit {
        if !approx {
            return Err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option".into(),
            );
        }
        n as u64
    } else if approx {
        match 100u64.saturating_mul(limits(ctx).max_entries) {
            0 => 10_000,
            n => n.min(1_000_000),
        }
    } else {
        0
    };
    let Some(strategy) = strategy else {
        return Ok(parsed);
    };
    parsed.trim = Some(Trim {
        strategy,
        approx,
        limit,
    });
    Ok(parsed)
}

pub fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_add_trim(ctx, args, true)?;
    let fields_at = parsed.id_at + 1;
    let field_args = args.get(fields_at..).unwrap_or_default();
    if field_args.len() < 2 || field_args.len() % 2 == 1 {
        return Err(wrong_arity("xadd"));
    }
    if let Some(ParsedId {
        id,
        seq_given: true,
    }) = parsed.id
    {
        if id.is_zero() {
            return Err("ERR The ID specified in XADD must be greater than 0-0".into());
        }
    }
    let key = &args[1];
    let node_limits = limits(ctx);
    let now_ms = ctx.now_ms();
    let propagating = ctx.keyspace.propagation.enabled();
    let db = ctx.db();
    // One lookup when the stream exists (the usual case); a second only after creating it.
    let stream = match write_stream(db, key)? {
        Some(stream) => stream,
        None if parsed.no_mkstream => {
            ctx.out.null();
            return Ok(());
        }
        None => {
            db.insert(key, Value::Stream(Box::new(StreamValue::new())), 0);
            let Some(stream) = write_stream(db, key)? else {
                return Err(crate::cmd::errors::NO_SUCH_KEY.into());
            };
            stream
        }
    };
    if stream.last_id == StreamId::MAX {
        return Err(
            "ERR The stream has exhausted the last possible ID, unable to add more items".into(),
        );
    }
    let Some(id) = stream.next_id(parsed.id, now_ms) else {
        return Err(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item"
                .into(),
        );
    };
    let field_bytes: usize = field_args.iter().map(Bytes::len).sum();
    if field_bytes > LISTPACK_MAX_SIZE {
        return Err("ERR Elements are too large to be stored".into());
    }
    let fields: Vec<&[u8]> = field_args.iter().map(|f| &f[..]).collect();
    stream.append(id, &fields, node_limits);
    let trimmed = parsed.trim.map(|trim| (trim, stream.trim(trim)));
    let rewritten_threshold = trimmed
        .filter(|(trim, _)| trim.approx && propagating)
        .map(|(trim, _)| threshold_reached(stream, trim));
    db.dirty += 1;
    // Formatted once for the reply and the propagated id.
    let id_text = IdText::new(id);
    ctx.out.bulk(id_text.as_bytes());
    ctx.notify(notify::STREAM, "xadd", key);
    if let Some((_, removed)) = trimmed {
        if removed > 0 {
            ctx.notify(notify::STREAM, "xtrim", key);
        }
    }
    // Nothing consumes the rewritten command while propagation is off: skip copying the
    // arguments (and the generated id) for it.
    if propagating {
        let rewritten = rewritten_for_propagation(args, &parsed, rewritten_threshold, &id_text);
        if let Some(propagated) = rewritten {
            ctx.propagate_as(propagated);
        }
    }
    ctx.signal_key_ready(key);
    Ok(())
}

/// XADD as replicas and the AOF must replay it, when that differs from what was sent: with
/// the id it generated, and after `~` with `=` and `approx_threshold`, the threshold it
/// reached. The arguments are copied only when one is rewritten.
fn rewritten_for_propagation(
    args: &[Bytes],
    parsed: &AddTrimArgs,
    approx_threshold: Option<Bytes>,
    id_text: &IdText,
) -> Option<Vec<Bytes>> {
    let mut propagated: Option<Vec<Bytes>> = None;
    if let Some(threshold) = approx_threshold {
        let rewritten = propagated.get_or_insert_with(|| args.to_vec());
        rewritten[parsed.threshold_at - 1] = Bytes::from_static(b"=");
        rewritten[parsed.threshold_at] = threshold;
    }
    if !matches!(
        parsed.id,
        Some(ParsedId {
            seq_given: true,
            ..
        })
    ) {
        let rewritten = propagated.get_or_insert_with(|| args.to_vec());
        rewritten[parsed.id_at] = Bytes::copy_from_slice(id_text.as_bytes());
    }
    propagated.filter(|p| p != args)
}

/// After a `~` trim, the exact threshold that gives the same stream: the length for MAXLEN,
/// the first id (tombstones included) for MINID.
fn threshold_reached(stream: &StreamValue, trim: Trim) -> Bytes {
    match trim.strategy {
        TrimStrategy::MaxLen(_) => Bytes::from(stream.length.to_string()),
        TrimStrategy::MinId(_) => id_arg(stream.edge_id(true, false)),
    }
}

pub fn xtrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let parsed = parse_add_trim(ctx, args, false)?;
    let Some(trim) = parsed.trim else {
        return Err(INVALID_ID.into());
    };
    let db = ctx.db();
    let Some(stream) = write_stream(db, key)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let removed = stream.trim(trim);
    let threshold = threshold_reached(stream, trim);
    db.dirty += removed;
    ctx.out.integer(removed as i64);
    if removed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
        if trim.approx {
            let mut propagated = args.to_vec();
            propagated[parsed.threshold_at - 1] = Bytes::from_static(b"=");
            propagated[parsed.threshold_at] = threshold;
            ctx.propagate_as(propagated);
        }
    }
    Ok(())
}
