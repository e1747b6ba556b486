//! Connection commands.
//!
//! - `PING [message]` → `+PONG`, or the message as a bulk string.
//! - `ECHO message` → the message.
//! - `QUIT` → `+OK`, then the connection closes.
//! - `SELECT index` → `+OK`; `ERR DB index is out of range`; an index outside a C `int`
//!   gives `ERR value is out of range, value must between -2147483648 and 2147483647`.
//! - `AUTH [username] password` → `+OK`, logged in as that ACL user (`default` without a
//!   name); `WRONGPASS invalid username-password pair or user is disabled.` (and an ACL LOG
//!   entry); an error for `AUTH password` when the default user has no password.
//! - `HELLO [protover [AUTH username password] [SETNAME name]]` → a map describing the
//!   server (`server`, `version`, `proto`, `id`, `mode`, `role`, `modules`); switches the
//!   connection to RESP2 or RESP3.
//! - `RESET` → `+RESET`: back to database 0, RESP2, no name, replies on, no transaction,
//!   watches or subscriptions, the `default` user, unauthenticated when it has a password.

use bytes::Bytes;
use slotproxy::protocol::errors;
use slotproxy::protocol::hello::{self, HelloReply, HelloRequest};
use slotproxy::resp::Proto;

use super::args::int32;
use super::errors::DB_OUT_OF_RANGE;
use super::{CmdResult, Ctx, Handler};
use crate::acl::Reason;
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
pub use slotproxy::protocol::REDIS_VERSION as COMPATIBLE_VERSION;

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

/// Logs the client in as `user` if the password is right; a failure goes to the ACL log
/// (reason `auth`, the command as sent, the user tried), as in Redis.
fn check_password(
    ctx: &mut Ctx<'_>,
    command: &[u8],
    user: &[u8],
    password: &[u8],
) -> Result<(), String> {
    if ctx.shared.acl.credentials_valid(user, password) {
        ctx.client.authenticated = true;
        ctx.client.acl_unrestricted_at = 0;
        *lock(&ctx.client.handle.user) = Bytes::copy_from_slice(user);
        Ok(())
    } else {
        let context = super::acl_gate::log_context(ctx.client);
        super::acl_gate::log_refusal(ctx, Reason::Auth, context, command, user);
        Err(errors::WRONGPASS.into())
    }
}

fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let has_password = !ctx.shared.acl.default_needs_no_password();
    let (user, password) = hello::parse_auth(args, has_password)?;
    check_password(ctx, &args[0], user, password)?;
    ctx.out.ok();
    Ok(())
}

fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let request = HelloRequest::parse(args)?;
    let authenticated = ctx.client.authenticated;
    request.authorize(authenticated, |user, password| {
        check_password(ctx, &args[0], user, password)
    })?;
    if let Some(name) = request.setname {
        *lock(&ctx.client.handle.name) = name.to_vec();
    }
    let proto = request.proto.unwrap_or(ctx.client.proto);
    ctx.client.proto = proto;
    ctx.client.handle.resp.store(
        if proto == Proto::Resp3 { 3 } else { 2 },
        std::sync::atomic::Ordering::Relaxed,
    );
    ctx.out.proto = proto;
    HelloReply {
        server: "redis",
        proto,
        id: ctx.client.id(),
        mode: super::info::server_mode(ctx.shared),
        role: "master",
    }
    .write(&mut ctx.out);
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
    // Back to the default user, logged in if it needs no password (Redis's
    // `clientSetDefaultAuth`).
    *lock(&ctx.client.handle.user) = Bytes::from_static(b"default");
    ctx.client.acl_unrestricted_at = 0;
    ctx.client.authenticated = ctx.shared.acl.default_needs_no_password();
    lock(&ctx.client.handle.name).clear();
    ctx.out.simple("RESET");
    Ok(())
}
