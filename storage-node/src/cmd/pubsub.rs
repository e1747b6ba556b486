//! Pub/sub commands.
//!
//! - `SUBSCRIBE channel [channel ...]` / `PSUBSCRIBE pattern [pattern ...]` → for each name,
//!   `[subscribe|psubscribe, name, count]` where count is the client's channels plus patterns.
//! - `SSUBSCRIBE shardchannel [...]` → `[ssubscribe, name, count]`, counting shard channels
//!   only; `ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client` inside EXEC.
//! - `UNSUBSCRIBE [channel ...]` / `PUNSUBSCRIBE [pattern ...]` / `SUNSUBSCRIBE [...]` → one
//!   `[unsubscribe, name, count]` per name (all subscriptions of the kind without names); a
//!   client subscribed to nothing gets `[unsubscribe, null, 0]`.
//! - `PUBLISH channel message` / `SPUBLISH shardchannel message` → the number of clients that
//!   received it (a client matching by channel and by patterns counts each time).
//! - `PUBSUB CHANNELS [pattern]` / `PUBSUB SHARDCHANNELS [pattern]` → the active names.
//! - `PUBSUB NUMSUB [channel ...]` / `PUBSUB SHARDNUMSUB [...]` → a flat array of name, count.
//! - `PUBSUB NUMPAT` → the number of distinct patterns subscribed to.
//! - `PUBSUB HELP`.
//!
//! Messages are `[message, channel, payload]`, `[pmessage, pattern, channel, payload]` and
//! `[smessage, channel, payload]`: arrays for RESP2 clients, push frames for RESP3 ones.
//! A RESP2 client with subscriptions may only run (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING,
//! QUIT and RESET ([`check_subscriber_mode`]); PING then answers `[pong, message or ""]`.
//! RESP3 clients may run anything while subscribed.

use bytes::Bytes;
use slotproxy::cluster::CommandSpec;
use slotproxy::resp::Proto;

use super::args::is;
use super::command::write_help;
use super::{CmdResult, Ctx, Handler};
use crate::pubsub::Kind;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("subscribe", subscribe),
    ("psubscribe", psubscribe),
    ("ssubscribe", ssubscribe),
    ("unsubscribe", unsubscribe),
    ("punsubscribe", punsubscribe),
    ("sunsubscribe", sunsubscribe),
    ("publish", publish),
    ("spublish", spublish),
    ("pubsub", pubsub),
];

/// Commands a RESP2 subscriber may run.
const SUBSCRIBER_COMMANDS: &[&str] = &[
    "ping",
    "subscribe",
    "ssubscribe",
    "unsubscribe",
    "sunsubscribe",
    "psubscribe",
    "punsubscribe",
    "quit",
    "reset",
];

/// Refuses other commands from a RESP2 client in subscriber mode.
pub fn check_subscriber_mode(ctx: &Ctx<'_>, spec: &CommandSpec) -> CmdResult {
    let client = &ctx.client;
    if client.nested
        || client.proto != Proto::Resp2
        || !client.subscriptions.active()
        || SUBSCRIBER_COMMANDS.contains(&spec.name.as_str())
    {
        return Ok(());
    }
    Err(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        spec.name
    )
    .into())
}

/// PING from a RESP2 subscriber: `[pong, message or ""]`. Returns false for anyone else.
pub fn subscriber_ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> bool {
    if ctx.client.proto != Proto::Resp2 || !ctx.client.subscriptions.active() || args.len() > 2 {
        return false;
    }
    ctx.out.array(2);
    ctx.out.bulk(b"pong");
    ctx.out.bulk(args.get(1).map_or(&b""[..], |m| &m[..]));
    true
}

fn subscribe_all(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    for name in &args[1..] {
        ctx.keyspace.pubsub.subscribe(
            kind,
            name,
            &mut ctx.client.subscriptions,
            &ctx.client.handle,
            &mut ctx.out,
        );
    }
    Ok(())
}

/// Scripts (which never allow blocking) may not subscribe; EXEC may, except to shard
/// channels, as in Redis 7.0.
fn deny_blocking(ctx: &Ctx<'_>, name: &str, inside_exec_too: bool) -> CmdResult {
    if !ctx.client.may_block && (inside_exec_too || !ctx.client.nested) {
        return Err(format!("ERR {name} isn't allowed for a DENY BLOCKING client").into());
    }
    Ok(())
}

fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    deny_blocking(ctx, "SUBSCRIBE", false)?;
    subscribe_all(ctx, args, Kind::Channel)
}

fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    deny_blocking(ctx, "PSUBSCRIBE", false)?;
    subscribe_all(ctx, args, Kind::Pattern)
}

fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    deny_blocking(ctx, "SSUBSCRIBE", true)?;
    subscribe_all(ctx, args, Kind::Shard)
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    let registry = &mut ctx.keyspace.pubsub;
    let subs = &mut ctx.client.subscriptions;
    let handle = &ctx.client.handle;
    if args.len() == 1 {
        registry.unsubscribe_all(kind, subs, handle, &mut ctx.out);
    } else {
        for name in &args[1..] {
            registry.unsubscribe(kind, name, subs, handle, Some(&mut ctx.out));
        }
    }
    Ok(())
}

fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Channel)
}

fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}

fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

fn publish_generic(ctx: &mut Ctx<'_>, args: &[Bytes], shard: bool) -> CmdResult {
    let me = ctx.client.id();
    let receivers = ctx
        .keyspace
        .pubsub
        .publish(&args[1], &args[2], shard, me, ctx.out.buf);
    // In a cluster a channel message reaches every node's subscribers; a shard message stays
    // with the slot's owner (this node, or the client was redirected).
    if !shard {
        if let Some(cluster) = ctx.shared.cluster.as_deref() {
            cluster.broadcast_publish(&args[1], &args[2]);
        }
    }
    ctx.out.integer(receivers as i64);
    Ok(())
}

fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    publish_generic(ctx, args, false)
}

fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    publish_generic(ctx, args, true)
}

const HELP: &[&str] = &[
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
];

fn pubsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    let registry = &ctx.keyspace.pubsub;
    if args.len() == 2 && is(sub, "help") {
        write_help(&mut ctx.out, "PUBSUB", HELP);
    } else if (is(sub, "channels") || is(sub, "shardchannels")) && args.len() <= 3 {
        let kind = if is(sub, "channels") {
            Kind::Channel
        } else {
            Kind::Shard
        };
        let names = registry.names(kind, args.get(2).map(|p| &p[..]));
        ctx.out.array(names.len());
        for name in names {
            ctx.out.bulk(&name);
        }
    } else if is(sub, "numsub") || is(sub, "shardnumsub") {
        let kind = if is(sub, "numsub") {
            Kind::Channel
        } else {
            Kind::Shard
        };
        ctx.out.array((args.len() - 2) * 2);
        for name in &args[2..] {
            ctx.out.bulk(name);
            ctx.out
                .integer(registry.subscriber_count(kind, name) as i64);
        }
    } else if is(sub, "numpat") && args.len() == 2 {
        ctx.out.integer(registry.len(Kind::Pattern) as i64);
    } else {
        return Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into());
    }
    Ok(())
}
