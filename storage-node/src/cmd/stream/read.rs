//! Reading new entries, waiting for them if asked.
//!
//! `XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]` → for each
//! stream with entries after its id, `[key, entries]` (RESP3: a map of key → entries); a
//! null array when none has any. `$` stands for the stream's last id (0-0 for no key). With
//! BLOCK the client waits up to `milliseconds` (0: forever) for an entry past one of the
//! ids, then gets a null array; inside MULTI it answers at once, and a script may not use
//! BLOCK (`ERR xread command is not allowed with BLOCK option from scripts`).
//!
//! Errors: `ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be
//! specified.`, `ERR The > ID can be specified only when calling XREADGROUP using the GROUP
//! <group> <consumer> option.`, `ERR timeout is not an integer or out of range`,
//! `ERR timeout is negative`, `ERR syntax error`, WRONGTYPE and invalid ids.
//!
//! A blocked XREAD runs again when a stream it waits on gets an entry; it is registered with
//! its `$` ids replaced by the ids they stood for, so it waits for entries after those.

use bytes::Bytes;

use super::{id_arg, read_stream, reply_entries, strict_id};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::blocking::{TimeoutReply, Wants};
use crate::types::stream::StreamId;
use crate::types::Value;

/// XREAD's and XREADGROUP's options.
pub(super) struct ReadArgs {
    pub count: usize,
    /// Milliseconds to wait (None: no BLOCK; Some(0): forever).
    pub block_ms: Option<u64>,
    /// Index of the first key.
    pub keys_at: usize,
    pub streams: usize,
    /// XREADGROUP's group and consumer names.
    pub group: Option<(Bytes, Bytes)>,
    pub noack: bool,
}

impl ReadArgs {
    /// The key arguments.
    pub fn keys<'a>(&self, args: &'a [Bytes]) -> &'a [Bytes] {
        &args[self.keys_at..self.keys_at + self.streams]
    }

    /// The id arguments, one per key.
    pub fn ids<'a>(&self, args: &'a [Bytes]) -> &'a [Bytes] {
        &args[self.keys_at + self.streams..]
    }

    /// COUNT, with 0 (none given) as no limit.
    pub fn limit(&self) -> usize {
        if self.count == 0 {
            usize::MAX
        } else {
            self.count
        }
    }
}

/// Parses XREAD's options, or XREADGROUP's (`group`), as `xreadCommand` does.
pub(super) fn parse_read(ctx: &Ctx<'_>, args: &[Bytes], group: bool) -> Result<ReadArgs, CmdError> {
    let mut parsed = ReadArgs {
        count: 0,
        block_ms: None,
        keys_at: 0,
        streams: 0,
        group: None,
        noack: false,
    };
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let opt = &args[i];
        if is(opt, "block") && more > 0 {
            if script_running(ctx) {
                return Err(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&args[0])
                )
                .into());
            }
            i += 1;
            parsed.block_ms = Some(timeout_ms(ctx, &args[i])?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            parsed.count = usize::try_from(int(&args[i])?.max(0)).unwrap_or(usize::MAX);
        } else if is(opt, "streams") && more > 0 {
            parsed.keys_at = i + 1;
            let rest = args.len() - parsed.keys_at;
            if !rest.is_multiple_of(2) {
                return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into());
            }
            parsed.streams = rest / 2;
            break;
        } else if is(opt, "group") && more >= 2 {
            if !group {
                return Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            parsed.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if is(opt, "noack") {
            if !group {
                return Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            parsed.noack = true;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if parsed.keys_at == 0 {
        return Err(SYNTAX.into());
    }
    if group && parsed.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    Ok(parsed)
}

/// Whether the command runs inside a script (where Redis refuses BLOCK outright rather
/// than answering as a timeout, as it does inside MULTI).
fn script_running(ctx: &Ctx<'_>) -> bool {
    !matches!(
        ctx.shared.scripting.state.status(u64::MAX),
        crate::scripting::busy::Status::Idle
    )
}

/// BLOCK's milliseconds (`getTimeoutFromObjectOrReply` in milliseconds).
pub(super) fn timeout_ms(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, CmdError> {
    let ms = crate::cmd::args::int_in_range_or(
        arg,
        i64::MIN,
        i64::MAX,
        "ERR timeout is not an integer or out of range",
    )?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    let now = i64::try_from(ctx.now_ms()).unwrap_or(i64::MAX);
    if ms > 0 && ms > i64::MAX - now {
        return Err("ERR timeout is out of range".into());
    }
    Ok(ms as u64)
}

pub fn xread(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_read(ctx, args, false)?;
    let keys = &args[parsed.keys_at..parsed.keys_at + parsed.streams];
    let id_args = &args[parsed.keys_at + parsed.streams..];
    if let Some(woken_by) = ctx.client.woken_by.clone() {
        // Run again with the ids it registered (no `$` left), for the signalled key only.
        let after = id_args
            .iter()
            .map(|arg| strict_id(arg))
            .collect::<Result<Vec<StreamId>, CmdError>>()?;
        return serve_woken(ctx, args, &parsed, &after, &woken_by);
    }
    let mut after: Vec<StreamId> = Vec::with_capacity(parsed.streams);
    for (key, id_arg) in keys.iter().zip(id_args) {
        let stream = read_stream(ctx.db(), key)?;
        let id = match &id_arg[..] {
            b"$" => stream.map_or(StreamId::MIN, |s| s.last_id),
            b">" => {
                return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.".into());
            }
            text => strict_id(text)?,
        };
        after.push(id);
    }
    let resp3 = ctx.out.is_resp3();
    let count = if parsed.count == 0 {
        usize::MAX
    } else {
        parsed.count
    };
    // Which streams have entries past their id (a lookup each, as Redis counts them).
    let db = ctx.keyspace.db(ctx.client.db);
    let mut ready: Vec<(&Bytes, StreamId)> = Vec::new();
    for (key, &gt) in keys.iter().zip(&after) {
        let Ok(Some(stream)) = read_stream(db, key) else {
            continue;
        };
        if let Some(start) = gt.next().filter(|_| stream.edge_id(false, true) > gt) {
            ready.push((key, start));
        }
    }
    if !ready.is_empty() {
        let out = &mut ctx.out;
        if resp3 {
            out.map(ready.len());
        } else {
            out.array(ready.len());
        }
        for (key, start) in ready {
            if !resp3 {
                out.array(2);
            }
            out.bulk(key);
            if let Some(Value::Stream(stream)) = db.peek(key).map(|entry| &entry.value) {
                reply_entries(out, stream.range(start, StreamId::MAX).take(count));
            }
        }
        return Ok(());
    }
    match parsed.block_ms {
        Some(ms) if ctx.may_block() => {
            let timeout = (ms > 0).then(|| std::time::Duration::from_millis(ms));
            let mut rerun = args.to_vec();
            for (i, id) in after.into_iter().enumerate() {
                rerun[parsed.keys_at + parsed.streams + i] = id_arg(id);
            }
            ctx.block_on(
                keys.to_vec(),
                Wants::Stream,
                timeout,
                TimeoutReply::NullArray,
            );
            ctx.rerun_blocked_as(rerun);
        }
        _ => ctx.out.null_array(),
    }
    Ok(())
}

/// A blocked XREAD run again because `key` was signalled: as Redis's
/// `serveClientsBlockedOnKey`, it answers for that stream alone as soon as the stream's last
/// id passed the one it waited after (even if the entries since were deleted: then with no
/// entries), and otherwise keeps waiting.
fn serve_woken(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    parsed: &ReadArgs,
    after: &[StreamId],
    key: &Bytes,
) -> CmdResult {
    let keys = &args[parsed.keys_at..parsed.keys_at + parsed.streams];
    let Some(index) = keys.iter().position(|k| k == key) else {
        return wait_again(ctx, args, parsed);
    };
    let gt = after[index];
    let count = if parsed.count == 0 {
        usize::MAX
    } else {
        parsed.count
    };
    let resp3 = ctx.out.is_resp3();
    let db = ctx.keyspace.db(ctx.client.db);
    let stream = match db.peek(key).map(|entry| &entry.value) {
        Some(Value::Stream(stream)) if stream.last_id > gt => stream,
        _ => return wait_again(ctx, args, parsed),
    };
    let out = &mut ctx.out;
    if resp3 {
        out.map(1);
    } else {
        out.array(1);
        out.array(2);
    }
    out.bulk(key);
    match gt.next() {
        Some(start) => reply_entries(out, stream.range(start, StreamId::MAX).take(count)),
        None => out.array(0),
    }
    Ok(())
}

/// Keeps a woken XREAD waiting (its registration, ids included, stays as it was).
fn wait_again(ctx: &mut Ctx<'_>, args: &[Bytes], parsed: &ReadArgs) -> CmdResult {
    let keys = args[parsed.keys_at..parsed.keys_at + parsed.streams].to_vec();
    ctx.block_on(keys, Wants::Stream, None, TimeoutReply::NullArray);
    Ok(())
}
