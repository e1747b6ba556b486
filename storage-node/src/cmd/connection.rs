//! Connection commands.
//!
//! - `PING [message]` → `+PONG`, or the message as a bulk string.
//! - `ECHO message` → the message.
//! - `QUIT` → `+OK`, then the connection closes.
//! - `SELECT index` → `+OK`; `ERR DB index is out of range`; an index outside a C `int`
//!   gives `ERR value is out of range, value must between -2147483648 and 2147483647`.
//! - `AUTH [username] password` → `+OK`; `WRONGPASS invalid username-password pair or user
//!   is disabled.`; an error if no password is configured.
//! - `HELLO [protover [AUTH username password] [SETNAME name]]` → a map describing the
//!   server (`server`, `version`, `proto`, `id`, `mode`, `role`, `modules`); switches the
//!   connection to RESP2 or RESP3.
//! - `RESET` → `+RESET`: back to database 0, RESP2, no name, replies on, no transaction,
//!   watches or subscriptions, and unauthenticated when a password is configured.

use bytes::Bytes;
use slotproxy::resp::Proto;

use super::args::{int32, is};
use super::errors::{DB_OUT_OF_RANGE, SYNTAX};
use super::{CmdResult, Ctx, Handler};
use crate::server::clients::{lock, ReplyMode};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("ping", ping),
    ("echo", echo),
    ("quit", quit),
    ("select", select),
    ("auth", auth),
    ("hello", hello),
    ("reset", reset),
];

/// The Redis version whose behaviour the node reproduces; clients use it to pick features.
pub const COMPATIBLE_VERSION: &str = "7.0.15";

fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if super::pubsub::subscriber_ping(ctx, args) {
        return Ok(());
    }
    match args.get(1) {
        None => ctx.out.simple("PONG"),
        Some(message) if args.len() == 2 => ctx.out.bulk(message),
        Some(_) => return Err(super::errors::wrong_arity("ping")),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.out.bulk(&args[1]);
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // A C `int`, as Redis reads it: past its range is `value is out of range`, not `DB
    // index is out of range`.
    let index = int32(&args[1])?;
    if ctx.shared.cluster.is_some() && index != 0 {
        return Err("ERR SELECT is not allowed in cluster mode".into());
    }
    if index < 0 || index as usize >= ctx.keyspace.db_count() {
        return Err(DB_OUT_OF_RANGE.into());
    }
    ctx.client.select(index as usize);
    ctx.out.ok();
    Ok(())
}

/// Checks a username/password pair against `requirepass` (the only user is `default`).
fn check_password(ctx: &mut Ctx<'_>, user: &[u8], password: &[u8]) -> CmdResult {
    let configured = ctx.shared.config().requirepass.clone();
    let valid = user == b"default"
        && match &configured {
            Some(expected) => expected.as_slice() == password,
            None => true,
        };
    if valid {
        ctx.client.authenticated = true;
        Ok(())
    } else {
        Err("WRONGPASS invalid username-password pair or user is disabled.".into())
    }
}

fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX.into());
    }
    if args.len() == 2 && ctx.shared.config().requirepass.is_none() {
        return Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".into());
    }
    let (user, password) = match args {
        [_, password] => (&b"default"[..], password),
        [_, user, password] => (&user[..], password),
        _ => return Err(SYNTAX.into()),
    };
    check_password(ctx, user, password)?;
    ctx.out.ok();
    Ok(())
}

fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut proto = ctx.client.proto;
    if let Some(version) = args.get(1) {
        let version = slotproxy::numbers::parse_i64(version).ok_or_else(|| {
            super::CmdError::from("ERR Protocol version is not an integer or out of range")
        })?;
        proto = match version {
            2 => Proto::Resp2,
            3 => Proto::Resp3,
            _ => return Err("NOPROTO unsupported protocol version".into()),
        };
    }
    let mut i = 2;
    let mut credentials = None;
    let mut name = None;
    while i < args.len() {
        let more = args.len() - i - 1;
        if is(&args[i], "auth") && more >= 2 {
            credentials = Some((&args[i + 1], &args[i + 2]));
            i += 3;
        } else if is(&args[i], "setname") && more >= 1 {
            name = Some(&args[i + 1]);
            i += 2;
        } else {
            return Err(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[i])
            )
            .into());
        }
    }
    if let Some((user, password)) = credentials {
        check_password(ctx, user, password)?;
    }
    if !ctx.client.authenticated {
        return Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into());
    }
    if let Some(name) = name {
        super::client::validate_name(name)?;
        *lock(&ctx.client.handle.name) = name.to_vec();
    }
    ctx.client.proto = proto;
    ctx.client.handle.resp.store(
        if proto == Proto::Resp3 { 3 } else { 2 },
        std::sync::atomic::Ordering::Relaxed,
    );
    ctx.out.proto = proto;
    ctx.out.map(7);
    ctx.out.bulk(b"server");
    ctx.out.bulk(b"redis");
    ctx.out.bulk(b"version");
    ctx.out.bulk(COMPATIBLE_VERSION.as_bytes());
    ctx.out.bulk(b"proto");
    ctx.out.integer(if proto == Proto::Resp3 { 3 } else { 2 });
    ctx.out.bulk(b"id");
    ctx.out.integer(ctx.client.id() as i64);
    ctx.out.bulk(b"mode");
    ctx.out
        .bulk(super::info::server_mode(ctx.shared).as_bytes());
    ctx.out.bulk(b"role");
    ctx.out.bulk(b"master");
    ctx.out.bulk(b"modules");
    ctx.out.array(0);
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    super::release_client_state(ctx.keyspace, ctx.client);
    ctx.client.select(0);
    ctx.client.proto = Proto::Resp2;
    ctx.client
        .handle
        .resp
        .store(2, std::sync::atomic::Ordering::Relaxed);
    ctx.out.proto = Proto::Resp2;
    ctx.client.reply_mode = ReplyMode::On;
    ctx.client.authenticated = ctx.shared.config().requirepass.is_none();
    lock(&ctx.client.handle.name).clear();
    ctx.out.simple("RESET");
    Ok(())
}
