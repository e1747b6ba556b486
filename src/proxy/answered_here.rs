//! Commands the proxy answers itself: connection state, introspection, and a one-node
//! cluster view for cluster-aware clients. Protocol texts, AUTH/HELLO parsing and COMMAND
//! come from the shared core (`crate::protocol`), so they read exactly as the node's.
//!
//! - `PING [msg]`, `ECHO msg`, `QUIT`, `RESET`, `SELECT 0` (other databases: `ERR SELECT is not
//!   allowed in cluster mode`), `READONLY`/`READWRITE`/`ASKING` → `+OK`.
//! - `HELLO [2|3] [AUTH user pass] [SETNAME name]`, `AUTH [user] pass` against the proxy's
//!   own users (`users:` in the config; none configured means no authentication). HELLO
//!   answers `server: slotproxy`, `version: 7.0.15`, `mode: standalone`, `role: master`:
//!   a client sees one Redis 7.0 server that names itself a proxy.
//! - `CLIENT ID|SETNAME|GETNAME|SETINFO|LIST|INFO|KILL|NO-EVICT|NO-TOUCH` on the proxy's
//!   clients; `CLIENT REPLY ON|OFF|SKIP` (the session drops the silenced replies);
//!   `CLIENT TRACKING` and the other known subcommands → `ERR slotproxy: '...' is not
//!   supported through the proxy` (invalidations from the nodes are not relayed).
//! - `COMMAND [COUNT|INFO|DOCS|LIST|GETKEYS|GETKEYSANDFLAGS|HELP]`: the commands the proxy
//!   serves, from the shared Redis 7.0 command table.
//! - `INFO [section ...]`: see `info.rs`.
//! - `CLUSTER KEYSLOT|INFO|SLOTS|SHARDS|NODES|MYID`: the proxy as a one-node cluster owning
//!   every slot (CLUSTER INFO's state is the real cluster's, see `cluster_info.rs`); `CLUSTER COUNTKEYSINSLOT|GETKEYSINSLOT` go to the slot's master.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::clients::{lock, ClientHandle};
use super::forward::{error_reply, forward, Pending};
use super::stats::Stats;
use super::{info, Proxy};
use crate::backend::Lane;
use crate::cluster::{key_slot, CommandSpec};
use crate::protocol::{self, errors, hello, HelloReply, HelloRequest};
use crate::resp::{request_bytes, Proto, ReplyBuf};

/// What the session knows about its client.
pub struct ClientState {
    pub handle: Arc<ClientHandle>,
    pub proto: Proto,
    pub authenticated: bool,
    /// May change the nodes' configuration (CONFIG SET / RESETSTAT): the user's `admin`
    /// flag, or true when no users are configured.
    pub admin: bool,
    /// The configured user the client authenticated as (its own `read_from` applies).
    pub user: Option<String>,
    /// The client's worker thread and shared backend connections.
    pub lane: Lane,
    /// CLIENT REPLY: whether the session writes replies.
    pub reply: ReplyMode,
}

/// CLIENT REPLY's state, as Redis's `CLIENT_REPLY_OFF`, `_SKIP_NEXT` and `_SKIP` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplyMode {
    #[default]
    On,
    Off,
    /// `CLIENT REPLY SKIP` just ran: the command after it is silent.
    SkipNext,
    /// This command is silent; replies resume after it.
    Skip,
}

impl ReplyMode {
    /// Called once per request, after the proxy stepped it: whether that request's reply is
    /// dropped, moving SKIP along as Redis's `resetClient` does.
    pub fn after_command(&mut self) -> bool {
        let silent = matches!(self, ReplyMode::Off | ReplyMode::Skip);
        *self = match *self {
            ReplyMode::Skip => ReplyMode::On,
            ReplyMode::SkipNext => ReplyMode::Skip,
            mode => mode,
        };
        silent
    }
}

/// `CLIENT REPLY ON|OFF|SKIP`: ON answers `+OK`; OFF and SKIP answer nothing (their own
/// reply is the first one suppressed); SKIP while OFF changes nothing.
fn client_reply(client: &mut ClientState, mode: &[u8]) -> Result<Bytes, String> {
    match mode.to_ascii_lowercase().as_slice() {
        b"on" => {
            client.reply = ReplyMode::On;
            Ok(ok())
        }
        b"off" => {
            client.reply = ReplyMode::Off;
            Ok(Bytes::new())
        }
        b"skip" => {
            if client.reply != ReplyMode::Off {
                client.reply = ReplyMode::SkipNext;
            }
            Ok(Bytes::new())
        }
        _ => Err(errors::SYNTAX.into()),
    }
}

/// A local command's outcome.
pub enum LocalReply {
    Now(Bytes),
    Later(Pending),
    /// Reply, then close the connection (QUIT).
    Close(Bytes),
    /// RESET: the session also drops its transaction and subscriptions.
    Reset(Bytes),
}

fn reply(proto: Proto, f: impl FnOnce(&mut ReplyBuf<'_>)) -> Bytes {
    let mut buf = BytesMut::new();
    f(&mut ReplyBuf::new(&mut buf, proto));
    buf.freeze()
}

fn ok() -> Bytes {
    Bytes::from_static(b"+OK\r\n")
}

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Answers a local command.
pub fn handle(
    proxy: &Arc<Proxy>,
    client: &mut ClientState,
    spec: &CommandSpec,
    args: &[Bytes],
) -> LocalReply {
    let proto = client.proto;
    let top = spec.name.split('|').next().unwrap_or(&spec.name);
    let result: Result<Bytes, String> = match top {
        // The table's arity (-1) allows any count; PING itself takes one message at most.
        "ping" if args.len() > 2 => Err(crate::protocol::wrong_arity("ping")),
        "ping" => Ok(match args.get(1) {
            Some(message) => reply(proto, |o| o.bulk(message)),
            None => Bytes::from_static(b"+PONG\r\n"),
        }),
        "echo" => Ok(reply(proto, |o| o.bulk(&args[1]))),
        "quit" => return LocalReply::Close(ok()),
        "reset" => {
            client.proto = Proto::Resp2;
            client.reply = ReplyMode::On;
            client.authenticated = proxy.config.load().users.is_empty();
            client.admin = client.authenticated;
            client.user = None;
            lock(&client.handle.name).clear();
            return LocalReply::Reset(Bytes::from_static(b"+RESET\r\n"));
        }
        "readonly" | "readwrite" | "asking" => Ok(ok()),
        "select" => match crate::numbers::parse_i64(&args[1]) {
            Some(0) => Ok(ok()),
            Some(_) => Err("ERR SELECT is not allowed in cluster mode".into()),
            None => Err("ERR value is not an integer or out of range".into()),
        },
        "auth" => auth(proxy, client, args),
        "hello" => hello(proxy, client, args),
        "client" => client_command(proxy, client, args),
        "command" => command(args, proto),
        "info" => {
            let future = info::info(proxy.clone(), args.to_vec(), proto);
            return LocalReply::Later(Pending::Future(Box::pin(future)));
        }
        "cluster" => return cluster(proxy, args, proto, client.lane),
        _ => Err(super::router::unsupported(&spec.name)),
    };
    LocalReply::Now(result.unwrap_or_else(|e| error_reply(&e)))
}

fn check_password(
    proxy: &Proxy,
    client: &mut ClientState,
    user: &[u8],
    password: &[u8],
) -> Result<(), String> {
    let config = proxy.config.load();
    // Without users the proxy is like a Redis whose only user is `default` with `nopass`:
    // any password opens it, any other user name is refused.
    if config.users.is_empty() {
        if user != b"default" {
            return Err(errors::WRONGPASS.into());
        }
        client.authenticated = true;
        client.admin = true;
        return Ok(());
    }
    let valid = config
        .users
        .iter()
        .find(|u| u.name.as_bytes() == user && u.password.as_bytes() == password);
    if let Some(user) = valid {
        client.authenticated = true;
        client.admin = user.admin;
        client.user = Some(user.name.clone());
        Ok(())
    } else {
        Err(errors::WRONGPASS.into())
    }
}

fn auth(proxy: &Proxy, client: &mut ClientState, args: &[Bytes]) -> Result<Bytes, String> {
    let has_password = !proxy.config.load().users.is_empty();
    let (user, password) = hello::parse_auth(args, has_password)?;
    check_password(proxy, client, user, password)?;
    Ok(ok())
}

/// The proxy's HELLO reply names the proxy (`server: slotproxy`) but otherwise looks like a
/// standalone Redis 7.0 master: clients choose features by `version`, and `mode: standalone`
/// tells cluster-aware clients they need not (and cannot usefully) follow slots themselves.
fn hello(proxy: &Proxy, client: &mut ClientState, args: &[Bytes]) -> Result<Bytes, String> {
    let request = HelloRequest::parse(args)?;
    let authenticated = client.authenticated;
    request.authorize(authenticated, |user, password| {
        check_password(proxy, client, user, password)
    })?;
    if let Some(name) = request.setname {
        *lock(&client.handle.name) = name.to_vec();
    }
    let proto = request.proto.unwrap_or(client.proto);
    client.proto = proto;
    Ok(HelloReply {
        server: SERVER_NAME,
        proto,
        id: client.handle.id,
        mode: "standalone",
        role: "master",
    }
    .to_bytes())
}

/// What the proxy calls itself in HELLO and INFO.
pub const SERVER_NAME: &str = "slotproxy";

fn client_command(
    proxy: &Proxy,
    client: &mut ClientState,
    args: &[Bytes],
) -> Result<Bytes, String> {
    let proto = client.proto;
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let resp = if proto == Proto::Resp3 { 3 } else { 2 };
    match sub.as_str() {
        "id" => Ok(reply(proto, |o| o.integer(client.handle.id as i64))),
        "setname" => {
            hello::validate_client_name(&args[2])?;
            *lock(&client.handle.name) = args[2].to_vec();
            Ok(ok())
        }
        "getname" => {
            let name = lock(&client.handle.name).clone();
            Ok(reply(proto, |o| {
                if name.is_empty() {
                    o.null()
                } else {
                    o.bulk(&name)
                }
            }))
        }
        "setinfo" => {
            let value = &args[3];
            if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
                return Err(format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    String::from_utf8_lossy(&args[2]).to_ascii_lowercase()
                ));
            }
            if is(&args[2], "lib-name") {
                *lock(&client.handle.lib_name) = value.to_vec();
            } else if is(&args[2], "lib-ver") {
                *lock(&client.handle.lib_ver) = value.to_vec();
            } else {
                return Err(format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(&args[2])
                ));
            }
            Ok(ok())
        }
        // The proxy never evicts a client to free memory, so ON holds as promised and OFF
        // changes nothing; the argument is still checked as Redis checks it. (NO-TOUCH is
        // Redis 7.2: 7.0's command table does not have it.)
        "no-evict" if is(&args[2], "on") || is(&args[2], "off") => Ok(ok()),
        "no-evict" => Err("ERR syntax error".into()),
        "info" => {
            let line = client.handle.info_line(resp) + "\n";
            Ok(reply(proto, |o| o.verbatim(b"txt", line.as_bytes())))
        }
        "list" => {
            let text: String = proxy
                .clients
                .snapshot()
                .iter()
                .map(|c| c.info_line(2) + "\n")
                .collect();
            Ok(reply(proto, |o| o.verbatim(b"txt", text.as_bytes())))
        }
        "kill" => client_kill(proxy, client, args),
        "reply" => client_reply(client, &args[2]),
        // Known to Redis 7.0 (the table look-up let it through) but not served here:
        // tracking needs invalidations from every node, which the proxy does not relay.
        _ => Err(super::router::unsupported(&format!("client|{sub}"))),
    }
}

fn client_kill(proxy: &Proxy, client: &ClientState, args: &[Bytes]) -> Result<Bytes, String> {
    let clients = proxy.clients.snapshot();
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(&args[2]);
        let target = clients.iter().find(|c| c.addr.to_string() == addr);
        return match target {
            Some(c) => {
                c.request_kill();
                Ok(ok())
            }
            None => Err("ERR No such client".into()),
        };
    }
    let mut killed = 0;
    let filters = &args[2..];
    if !filters.len().is_multiple_of(2) {
        return Err("ERR syntax error".into());
    }
    let mut skip_me = true;
    let mut matchers: Vec<(String, String)> = Vec::new();
    for pair in filters.chunks(2) {
        let key = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        let value = String::from_utf8_lossy(&pair[1]).into_owned();
        match key.as_str() {
            "skipme" => skip_me = value.eq_ignore_ascii_case("yes"),
            "id" | "addr" | "laddr" | "user" => matchers.push((key, value)),
            _ => return Err("ERR syntax error".into()),
        }
    }
    for c in &clients {
        if skip_me && c.id == client.handle.id {
            continue;
        }
        let matches = matchers.iter().all(|(k, v)| match k.as_str() {
            "id" => c.id.to_string() == *v,
            "addr" => c.addr.to_string() == *v,
            "laddr" => c.local_addr.to_string() == *v,
            _ => v == "default",
        });
        if matches {
            c.request_kill();
            killed += 1;
        }
    }
    Ok(reply(client.proto, |o| o.integer(killed)))
}

fn command(args: &[Bytes], proto: Proto) -> Result<Bytes, String> {
    let served = |spec: &CommandSpec| super::router::served(spec);
    let mut buf = BytesMut::new();
    protocol::command::reply(&mut ReplyBuf::new(&mut buf, proto), args, &served)?;
    Ok(buf.freeze())
}

fn cluster(proxy: &Arc<Proxy>, args: &[Bytes], proto: Proto, lane: Lane) -> LocalReply {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let host = proxy.listen_addr.ip().to_string();
    let port = proxy.listen_addr.port() as i64;
    let id = proxy.id.clone();
    let now = |bytes: Bytes| LocalReply::Now(bytes);
    match sub.as_str() {
        "keyslot" if args.len() == 3 => now(reply(proto, |o| o.integer(key_slot(&args[2]) as i64))),
        "myid" => now(reply(proto, |o| o.bulk(id.as_bytes()))),
        "info" => LocalReply::Later(Pending::Future(Box::pin(super::cluster_info::reply(
            proxy.clone(),
            proto,
        )))),
        "slots" => now(reply(proto, |o| {
            o.array(1);
            o.array(3);
            o.integer(0);
            o.integer(16383);
            o.array(4);
            o.bulk(host.as_bytes());
            o.integer(port);
            o.bulk(id.as_bytes());
            o.map(0);
        })),
        "shards" => now(reply(proto, |o| {
            o.array(1);
            o.map(2);
            o.bulk(b"slots");
            o.array(2);
            o.integer(0);
            o.integer(16383);
            o.bulk(b"nodes");
            o.array(1);
            o.map(7);
            for (k, v) in [
                ("id", id.as_str()),
                ("ip", host.as_str()),
                ("endpoint", host.as_str()),
                ("role", "master"),
            ] {
                o.bulk(k.as_bytes());
                o.bulk(v.as_bytes());
            }
            o.bulk(b"port");
            o.integer(port);
            o.bulk(b"replication-offset");
            o.integer(0);
            o.bulk(b"health");
            o.bulk(b"online");
        })),
        "nodes" => {
            let line = format!("{id} {host}:{port}@0 myself,master - 0 0 1 connected 0-16383\n");
            now(reply(proto, |o| o.verbatim(b"txt", line.as_bytes())))
        }
        "countkeysinslot" | "getkeysinslot" => {
            let Some(slot) = crate::numbers::parse_i64(&args[2]).filter(|s| (0..16384).contains(s))
            else {
                return now(error_reply("ERR Invalid slot"));
            };
            LocalReply::Later(forward(
                proxy,
                Some(slot as u16),
                request_bytes(args),
                proto,
                lane,
            ))
        }
        _ => {
            Stats::inc(&proxy.stats.errors);
            now(error_reply(&super::router::unsupported(&format!(
                "cluster|{sub}"
            ))))
        }
    }
}
