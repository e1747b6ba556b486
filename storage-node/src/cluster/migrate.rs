//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password |
//! AUTH2 username password] [KEYS key [key ...]]`
//!
//! Moves keys to another node: their DUMP payloads are sent as `RESTORE-ASKING key ttl
//! payload [REPLACE]` (plain `RESTORE` when this node is not in cluster mode), pipelined
//! after an optional AUTH and a SELECT, and each key the target accepted is deleted here
//! unless COPY. Replies, as Redis 7.0:
//!
//! - `+OK`; `+NOKEY` when none of the keys exists.
//! - `-ERR Target instance replied with error: <its error>` (for example BUSYKEY without
//!   REPLACE); keys accepted before the error are still moved.
//! - `-IOERR error or timeout connecting to the client` (no connection within the
//!   timeout), `-IOERR error or timeout writing to target instance`, `-IOERR error or
//!   timeout reading to target instance`. A cached connection that fails for another
//!   reason than a timeout is retried once on a new one.
//! - `ERR When using MIGRATE KEYS option, the key argument must be set to the empty
//!   string`, `ERR syntax error`, `ERR value is not an integer or out of range`.
//!
//! Like Redis, the command runs synchronously: the node serves nobody else meanwhile, and
//! the timeout (milliseconds, 1000 when not positive) bounds each connect, write and read.
//! Connections are cached per target for 10 s, with the database they last selected.
//!
//! `RESTORE-ASKING` is RESTORE, allowed in a slot this node is importing.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use slotproxy::resp::encode_request;

use crate::cmd::args::{int, int32, is};
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdError, CmdResult, Ctx};
use crate::persistence::payload;
use crate::server::clients::lock;

const CACHE_IDLE: Duration = Duration::from_secs(10);
const CACHE_MAX: usize = 64;

/// A cached connection to a MIGRATE target.
struct Cached {
    stream: TcpStream,
    /// The database the connection has selected (`None`: unknown).
    selected: Option<i64>,
    last_use: Instant,
    /// Bytes read past the last reply line.
    pending: Vec<u8>,
}

/// Connections MIGRATE keeps open, by `host:port`.
#[derive(Default)]
pub struct SocketCache(Mutex<HashMap<String, Cached>>);

/// How a MIGRATE attempt failed on the socket.
#[derive(PartialEq, Eq)]
enum SocketError {
    Connect,
    Write { timed_out: bool },
    Read { timed_out: bool },
}

struct Options {
    copy: bool,
    replace: bool,
    auth: Option<(Option<Bytes>, Bytes)>,
    first_key: usize,
}

fn parse_options(args: &[Bytes]) -> Result<Options, CmdError> {
    let mut options = Options {
        copy: false,
        replace: false,
        auth: None,
        first_key: 3,
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let arg = &args[j];
        if is(arg, "copy") {
            options.copy = true;
        } else if is(arg, "replace") {
            options.replace = true;
        } else if is(arg, "auth") {
            if more < 1 {
                return Err(SYNTAX.into());
            }
            options.auth = Some((None, args[j + 1].clone()));
            j += 1;
        } else if is(arg, "auth2") {
            if more < 2 {
                return Err(SYNTAX.into());
            }
            options.auth = Some((Some(args[j + 1].clone()), args[j + 2].clone()));
            j += 2;
        } else if is(arg, "keys") {
            if !args[3].is_empty() {
                return Err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string".into());
            }
            options.first_key = j + 1;
            return Ok(options);
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    Ok(options)
}

/// `atoi`: the leading digits, 0 when there are none (Redis reads the port this way).
fn atoi_port(arg: &[u8]) -> u16 {
    let digits: String = arg
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| b as char)
        .collect();
    digits.parse().unwrap_or(0)
}

pub fn migrate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = parse_options(args)?;
    let timeout = int(&args[5])?;
    let db_index = int32(&args[4]).map_err(|_| CmdError::from(crate::cmd::errors::NOT_INTEGER))?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let key_args: &[Bytes] = if options.first_key == 3 {
        &args[3..4]
    } else {
        &args[options.first_key..]
    };
    let now = ctx.now_ms();
    let encodings = crate::persistence::rdb::Encodings::from_config(&ctx.shared.config());
    let keys: Vec<(Bytes, Vec<u8>, u64)> = {
        let db = ctx.db();
        key_args
            .iter()
            .filter_map(|key| {
                db.get(key).map(|e| {
                    (
                        key.clone(),
                        payload::dump(&e.value, &encodings),
                        e.expire_at_ms(),
                    )
                })
            })
            .collect()
    };
    if keys.is_empty() {
        ctx.out.simple("NOKEY");
        return Ok(());
    }
    let restore: &[u8] = if ctx.shared.cluster.is_some() {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    let target = format!(
        "{}:{}",
        String::from_utf8_lossy(&args[1]),
        atoi_port(&args[2])
    );
    let mut may_retry = true;
    loop {
        let attempt = transfer(
            ctx, &target, timeout, db_index, &options, restore, &keys, now,
        );
        match attempt {
            Ok(replies) => return finish(ctx, &target, db_index, &options, &keys, replies),
            Err(error) => {
                lock(&ctx.shared.migrate_sockets.0).remove(&target);
                let timed_out = matches!(
                    error,
                    SocketError::Write { timed_out: true } | SocketError::Read { timed_out: true }
                );
                if error != SocketError::Connect && !timed_out && may_retry {
                    may_retry = false;
                    continue;
                }
                return Err(match error {
                    SocketError::Connect => "IOERR error or timeout connecting to the client",
                    SocketError::Write { .. } => {
                        "IOERR error or timeout writing to target instance"
                    }
                    SocketError::Read { .. } => "IOERR error or timeout reading to target instance",
                }
                .into());
            }
        }
    }
}

/// The target's reply lines: to AUTH, to SELECT, and one per key.
struct Replies {
    auth: Option<Vec<u8>>,
    select: Option<Vec<u8>>,
    keys: Vec<Vec<u8>>,
}

#[allow(clippy::too_many_arguments)]
fn transfer(
    ctx: &Ctx<'_>,
    target: &str,
    timeout: Duration,
    db_index: i64,
    options: &Options,
    restore: &[u8],
    keys: &[(Bytes, Vec<u8>, u64)],
    now_ms: u64,
) -> Result<Replies, SocketError> {
    let mut cache = lock(&ctx.shared.migrate_sockets.0);
    cache.retain(|_, c| c.last_use.elapsed() < CACHE_IDLE);
    if !cache.contains_key(target) {
        if cache.len() >= CACHE_MAX {
            if let Some(victim) = cache.keys().next().cloned() {
                cache.remove(&victim);
            }
        }
        let stream = connect(target, timeout)?;
        cache.insert(
            target.to_string(),
            Cached {
                stream,
                selected: None,
                last_use: Instant::now(),
                pending: Vec::new(),
            },
        );
    }
    let cached = cache.get_mut(target).ok_or(SocketError::Connect)?;
    cached.last_use = Instant::now();
    let mut request = bytes::BytesMut::new();
    if let Some((user, password)) = &options.auth {
        match user {
            Some(user) => encode_request(&mut request, &[&b"AUTH"[..], user, password]),
            None => encode_request(&mut request, &[&b"AUTH"[..], password]),
        }
    }
    let select = cached.selected != Some(db_index);
    if select {
        encode_request(
            &mut request,
            &[&b"SELECT"[..], db_index.to_string().as_bytes()],
        );
    }
    for (key, payload, expire_at) in keys {
        let ttl = if *expire_at == 0 {
            0
        } else {
            expire_at.saturating_sub(now_ms).max(1)
        };
        let ttl = ttl.to_string();
        let mut parts: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), payload];
        if options.replace {
            parts.push(b"REPLACE");
        }
        encode_request(&mut request, &parts);
    }
    let stream = &mut cached.stream;
    let _ = stream.set_write_timeout(Some(timeout));
    let _ = stream.set_read_timeout(Some(timeout));
    if let Err(e) = stream.write_all(&request) {
        return Err(SocketError::Write {
            timed_out: is_timeout(&e),
        });
    }
    let mut read = || read_line(&mut cached.stream, &mut cached.pending);
    let auth = match options.auth {
        Some(_) => Some(read()?),
        None => None,
    };
    let select_reply = if select { Some(read()?) } else { None };
    let mut replies = Vec::with_capacity(keys.len());
    for _ in keys {
        replies.push(read()?);
    }
    Ok(Replies {
        auth,
        select: select_reply,
        keys: replies,
    })
}

/// Applies the target's replies: deletes what it accepted (unless COPY) and answers.
fn finish(
    ctx: &mut Ctx<'_>,
    target: &str,
    db_index: i64,
    options: &Options,
    keys: &[(Bytes, Vec<u8>, u64)],
    replies: Replies,
) -> CmdResult {
    let setup_error = [&replies.auth, &replies.select]
        .into_iter()
        .flatten()
        .find(|line| line.first() == Some(&b'-'));
    let mut error: Option<String> = setup_error.map(|line| {
        format!(
            "ERR Target instance replied with error: {}",
            String::from_utf8_lossy(&line[1..])
        )
    });
    // The keys removed here are propagated as one DEL (Redis's rewrite of MIGRATE): a
    // replay of the AOF must not migrate anything.
    let mut deleted = vec![Bytes::from_static(b"DEL")];
    if error.is_none() {
        for ((key, _, _), reply) in keys.iter().zip(&replies.keys) {
            if reply.first() == Some(&b'-') {
                error.get_or_insert_with(|| {
                    format!(
                        "ERR Target instance replied with error: {}",
                        String::from_utf8_lossy(&reply[1..])
                    )
                });
            } else if !options.copy && ctx.db().remove(key).is_some() {
                deleted.push(key.clone());
            }
        }
    }
    if deleted.len() > 1 {
        ctx.propagate_as(deleted);
    }
    let mut cache = lock(&ctx.shared.migrate_sockets.0);
    if let Some(cached) = cache.get_mut(target) {
        cached.selected = if error.is_none() {
            Some(db_index)
        } else {
            None
        };
    }
    drop(cache);
    match error {
        Some(e) => Err(e.into()),
        None => {
            ctx.out.ok();
            Ok(())
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Connects as Redis does: a name that does not resolve or a connect that times out is a
/// connect error; a refused connection only shows when writing.
fn connect(target: &str, timeout: Duration) -> Result<TcpStream, SocketError> {
    let addr = target
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or(SocketError::Connect)?;
    match TcpStream::connect_timeout(&addr, timeout) {
        Ok(stream) => {
            let _ = stream.set_nodelay(true);
            Ok(stream)
        }
        Err(e) if is_timeout(&e) => Err(SocketError::Connect),
        Err(_) => Err(SocketError::Write { timed_out: false }),
    }
}

/// One reply line without its CRLF (Redis's `syncReadLine`).
fn read_line(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Result<Vec<u8>, SocketError> {
    let deadline_guard = 1 << 20;
    loop {
        if let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = pending.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(line);
        }
        if pending.len() > deadline_guard {
            return Err(SocketError::Read { timed_out: false });
        }
        let mut chunk = [0u8; 512];
        match stream.read(&mut chunk) {
            Ok(0) => return Err(SocketError::Read { timed_out: false }),
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
            Err(e) => {
                return Err(SocketError::Read {
                    timed_out: is_timeout(&e),
                })
            }
        }
    }
}
