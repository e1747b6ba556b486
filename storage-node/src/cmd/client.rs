//! `CLIENT` subcommands.
//!
//! - `CLIENT ID` → the connection's id.
//! - `CLIENT SETNAME name` → `+OK`; names may not contain spaces or special characters; an
//!   empty name removes the name.
//! - `CLIENT GETNAME` → the name, or null.
//! - `CLIENT INFO` → this connection's line of `CLIENT LIST`, as verbatim text in RESP3.
//! - `CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|SLAVE|PUBSUB | ID id [id ...]]` → one line per
//!   client: `id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free
//!   argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp` (Redis 7.0's
//!   fields, in its order). `ERR Unknown client type '..'`, `ERR Invalid client ID`.
//! - `CLIENT KILL ip:port` → `+OK`, or `ERR No such client`; may kill the caller.
//! - `CLIENT KILL [ID id] [TYPE type] [ADDR ip:port] [LADDR ip:port] [USER name]
//!   [SKIPME yes|no]` → the number of clients killed; the caller is skipped unless
//!   `SKIPME no`. `USER name` matches the connections logged in as that ACL user.
//! - `CLIENT NO-EVICT on|off` → `+OK` (the node never evicts clients; the flag is shown).
//! - `CLIENT REPLY on|off|skip` → `+OK` for `on`; `off` and `skip` reply nothing.
//! - `CLIENT UNBLOCK id [TIMEOUT|ERROR]` → 1 if client `id` was blocked (BLPOP, ...) and is
//!   now released with its timeout reply (TIMEOUT, the default) or the error `-UNBLOCKED
//!   client unblocked via CLIENT UNBLOCK`; else 0. `ERR CLIENT UNBLOCK reason should be
//!   TIMEOUT or ERROR`.
//! - `CLIENT PAUSE timeout [WRITE|ALL]` → `+OK`; for `timeout` milliseconds other clients'
//!   commands wait (all of them, or with WRITE those that may write or be propagated) and
//!   keys do not expire (`server::pause`). `ERR timeout is not an integer or out of range`,
//!   `ERR timeout is negative`, `ERR CLIENT PAUSE mode must be WRITE or ALL`.
//! - `CLIENT UNPAUSE` → `+OK`; ends CLIENT PAUSE's pause (not a FAILOVER's).
//! - `CLIENT HELP` → the subcommands above.
//!
//! - `CLIENT TRACKING`, `CACHING`, `GETREDIR`, `TRACKINGINFO`: see `super::tracking`.
//!
//! CLIENT SETINFO is Redis 7.2, not 7.0.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;

use super::args::{is, text};
use super::command::write_help;
use super::errors::SYNTAX;
use super::{CmdResult, Ctx, Handler};
use crate::server::clients::{lock, ClientHandle, ReplyMode};
use crate::server::pause::{PauseMode, PausePurpose};

pub const COMMANDS: &[(&str, Handler)] = &[("client", client)];

/// Subcommands of CLIENT this module does not implement.
pub const UNIMPLEMENTED: &[&str] = &[];

const HELP: &[&str] = &[
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
];

/// Redis refuses names with characters outside `!`..`~`.
pub fn validate_name(name: &[u8]) -> CmdResult {
    slotproxy::protocol::hello::validate_client_name(name).map_err(Into::into)
}

fn client(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "id") {
        ctx.out.integer(ctx.client.id() as i64);
    } else if is(sub, "setname") {
        validate_name(&args[2])?;
        *lock(&ctx.client.handle.name) = args[2].to_vec();
        ctx.out.ok();
    } else if is(sub, "getname") {
        let name = lock(&ctx.client.handle.name).clone();
        if name.is_empty() {
            ctx.out.null();
        } else {
            ctx.out.bulk(&name);
        }
    } else if is(sub, "info") {
        let mut line = info_line(&ctx.client.handle);
        line.push('\n');
        ctx.out.verbatim(b"txt", line.as_bytes());
    } else if is(sub, "list") {
        list(ctx, args)?;
    } else if is(sub, "kill") {
        kill(ctx, args)?;
    } else if is(sub, "no-evict") {
        let on = on_off(&args[2]).ok_or(SYNTAX)?;
        ctx.client.handle.no_evict.store(on, Relaxed);
        ctx.out.ok();
    } else if is(sub, "reply") {
        reply(ctx, &args[2])?;
    } else if is(sub, "unblock") {
        unblock(ctx, args)?;
    } else if is(sub, "pause") {
        pause(ctx, args)?;
    } else if is(sub, "unpause") {
        ctx.shared.pause.unpause(PausePurpose::ClientCommand);
        ctx.out.ok();
    } else if is(sub, "tracking") {
        super::tracking::tracking(ctx, args)?;
    } else if is(sub, "caching") {
        super::tracking::caching(ctx, args)?;
    } else if is(sub, "getredir") {
        super::tracking::getredir(ctx, args)?;
    } else if is(sub, "trackinginfo") {
        super::tracking::trackinginfo(ctx, args)?;
    } else if is(sub, "help") {
        write_help(&mut ctx.out, "CLIENT", HELP);
    } else {
        return Err(super::unknown_subcommand(args));
    }
    Ok(())
}

fn pause(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 4 {
        return Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into());
    }
    let millis = super::args::timeout_millis(&args[2])?;
    let mode = match args.get(3) {
        None => PauseMode::All,
        Some(mode) if is(mode, "all") => PauseMode::All,
        Some(mode) if is(mode, "write") => PauseMode::Write,
        Some(_) => return Err("ERR CLIENT PAUSE mode must be WRITE or ALL".into()),
    };
    let end = crate::server::pause::end_after(millis);
    ctx.shared
        .pause
        .pause(PausePurpose::ClientCommand, mode, end);
    ctx.out.ok();
    Ok(())
}

fn unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 4 {
        return Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into());
    }
    let with_error = match args.get(3) {
        None => false,
        Some(reason) if is(reason, "timeout") => false,
        Some(reason) if is(reason, "error") => true,
        Some(_) => return Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into()),
    };
    let id = super::args::int(&args[2])?;
    let released =
        u64::try_from(id).is_ok_and(|id| super::wakeup::unblock(ctx.keyspace, id, with_error));
    ctx.out.integer(released as i64);
    Ok(())
}

fn on_off(arg: &[u8]) -> Option<bool> {
    if is(arg, "on") {
        Some(true)
    } else if is(arg, "off") {
        Some(false)
    } else {
        None
    }
}

fn reply(ctx: &mut Ctx<'_>, mode: &[u8]) -> CmdResult {
    if is(mode, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if is(mode, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if is(mode, "skip") {
        // SKIP while replies are off changes nothing, as in Redis.
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(SYNTAX.into());
    }
    Ok(())
}

/// Client types as CLIENT LIST / KILL TYPE name them: a client with subscriptions is
/// `pubsub`, a replica of this node `replica` (`slave`), every other one `normal`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    PubSub,
    Master,
}

fn client_type(name: &Bytes) -> Result<ClientType, super::CmdError> {
    let kind = if is(name, "normal") {
        ClientType::Normal
    } else if is(name, "slave") || is(name, "replica") {
        ClientType::Replica
    } else if is(name, "pubsub") {
        ClientType::PubSub
    } else if is(name, "master") {
        ClientType::Master
    } else {
        return Err(format!("ERR Unknown client type '{}'", text(name)).into());
    };
    Ok(kind)
}

fn type_of(client: &ClientHandle) -> ClientType {
    if client.replica.load(Relaxed) {
        ClientType::Replica
    } else if client.pubsub.is_subscriber() {
        ClientType::PubSub
    } else {
        ClientType::Normal
    }
}

fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let clients = ctx.shared.clients.snapshot();
    let mut selected: Vec<Arc<ClientHandle>> = Vec::new();
    if args.len() == 4 && is(&args[2], "type") {
        let wanted = client_type(&args[3])?;
        selected.extend(clients.into_iter().filter(|c| type_of(c) == wanted));
    } else if args.len() > 3 && is(&args[2], "id") {
        for id in &args[3..] {
            let id = slotproxy::numbers::parse_i64(id).ok_or("ERR Invalid client ID")?;
            if let Some(found) = clients.iter().find(|c| c.id as i64 == id) {
                selected.push(found.clone());
            }
        }
    } else if args.len() == 2 {
        selected = clients;
    } else {
        return Err(SYNTAX.into());
    }
    let mut text = String::new();
    for handle in &selected {
        text.push_str(&info_line(handle));
        text.push('\n');
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// What CLIENT KILL matches on.
#[derive(Default)]
struct KillFilter {
    addr: Option<String>,
    laddr: Option<String>,
    kind: Option<ClientType>,
    id: Option<u64>,
    user: Option<Bytes>,
    skip_me: bool,
}

impl KillFilter {
    fn matches(&self, client: &ClientHandle, me: u64) -> bool {
        self.addr
            .as_ref()
            .is_none_or(|a| *a == client.addr.to_string())
            && self
                .laddr
                .as_ref()
                .is_none_or(|a| *a == client.local_addr.to_string())
            && self.kind.is_none_or(|k| k == type_of(client))
            && self.id.is_none_or(|id| id == client.id)
            && self.user.as_ref().is_none_or(|user| *user == client.user())
            && !(self.skip_me && client.id == me)
    }
}

fn parse_kill_filter(acl: &crate::acl::Acl, args: &[Bytes]) -> Result<KillFilter, super::CmdError> {
    let mut filter = KillFilter {
        skip_me: true,
        ..KillFilter::default()
    };
    for pair in args[2..].chunks(2) {
        let [option, value] = pair else {
            return Err(SYNTAX.into());
        };
        if is(option, "id") {
            let id = slotproxy::numbers::parse_i64(value)
                .filter(|&id| id >= 1)
                .ok_or("ERR client-id should be greater than 0")?;
            filter.id = Some(id as u64);
        } else if is(option, "type") {
            filter.kind = Some(client_type(value)?);
        } else if is(option, "addr") {
            filter.addr = Some(text(value));
        } else if is(option, "laddr") {
            filter.laddr = Some(text(value));
        } else if is(option, "user") {
            if !acl.users().contains_key(value.as_ref()) {
                return Err(format!("ERR No such user '{}'", text(value)).into());
            }
            filter.user = Some(value.clone());
        } else if is(option, "skipme") {
            filter.skip_me = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return Err(SYNTAX.into());
            };
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok(filter)
}

fn kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let old_form = args.len() == 3;
    let filter = if old_form {
        // CLIENT KILL ip:port, which may kill the caller itself.
        KillFilter {
            addr: Some(text(&args[2])),
            ..KillFilter::default()
        }
    } else {
        parse_kill_filter(&ctx.shared.acl, args)?
    };
    let me = ctx.client.id();
    let mut killed = 0;
    for handle in ctx.shared.clients.snapshot() {
        if handle.killed.load(Relaxed) || !filter.matches(&handle, me) {
            continue;
        }
        if handle.id == me {
            // Our own connection closes once this reply is written.
            ctx.client.close_after_reply = true;
        } else {
            handle.request_kill();
        }
        killed += 1;
    }
    // A replica's link to its master is no registered client: it matches TYPE master
    // alone, and is dropped (it connects again and continues with PSYNC).
    let master_only = filter.addr.is_none() && filter.laddr.is_none() && filter.id.is_none();
    if !old_form
        && master_only
        && filter.kind == Some(ClientType::Master)
        && ctx.shared.replication.link.drop_master_connection()
    {
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            return Err("ERR No such client".into());
        }
        ctx.out.ok();
    } else {
        ctx.out.integer(killed);
    }
    Ok(())
}

/// One line of CLIENT LIST for a client, without the newline. `omem` is the output produced
/// for the client and not yet taken by its socket (see [`crate::server::client_peaks::output_waiting`]). Fields the node
/// does not track (Redis's reply list layout, argument memory) show 0.
pub fn info_line(client: &ClientHandle) -> String {
    let mut flags = String::new();
    let multi = client.multi_queued.load(Relaxed);
    if client.replica.load(Relaxed) {
        flags.push('S');
    }
    if client.monitor.load(Relaxed) {
        flags.push('O');
    }
    if client.pubsub.is_subscriber() {
        flags.push('P');
    }
    if multi >= 0 {
        flags.push('x');
    }
    let tracking = &client.tracking;
    if tracking.on.load(Relaxed) {
        flags.push('t');
    }
    if tracking.broken_redirect.load(Relaxed) {
        flags.push('R');
    }
    if tracking.bcast.load(Relaxed) {
        flags.push('B');
    }
    if client.watch_dirty.load(Relaxed) {
        flags.push('d');
    }
    if client.killed.load(Relaxed) {
        flags.push('A');
    }
    if client.no_evict.load(Relaxed) {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let name = String::from_utf8_lossy(&lock(&client.name)).into_owned();
    let qbuf = client.query_buffer.load(Relaxed);
    let omem = crate::server::client_peaks::output_waiting(client);
    format!(
        "id={id} addr={addr} laddr={laddr} fd={fd} name={name} age={age} idle={idle} \
         flags={flags} db={db} sub={sub} psub={psub} ssub={ssub} multi={multi} qbuf={qbuf} qbuf-free=0 \
         argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={omem} tot-mem={tot_mem} events=r \
         cmd={cmd} user={user} redir={redir} resp={resp}",
        user = String::from_utf8_lossy(&client.user()),
        id = client.id,
        addr = client.addr,
        laddr = client.local_addr,
        fd = client.fd.load(Relaxed),
        age = client.age_seconds(),
        idle = client.idle_seconds(),
        db = client.db.load(Relaxed),
        sub = client.pubsub.channels.load(Relaxed),
        psub = client.pubsub.patterns.load(Relaxed),
        ssub = client.pubsub.shard_channels.load(Relaxed),
        cmd = lock(&client.last_command),
        resp = client.resp.load(Relaxed),
        redir = tracking.redirect.load(Relaxed),
        tot_mem = qbuf + omem,
    )
}
