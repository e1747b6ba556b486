//! `DUMP` and `RESTORE`: a key's value in Redis 7.0's DUMP payload format.
//!
//! - `DUMP key` → the payload (type byte, RDB-encoded value, RDB version 10, CRC-64), the
//!   same bytes redis-server 7.0 produces; null if the key is missing.
//! - `RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`
//!   → `+OK`. `ttl` is milliseconds from now (0: no expiry), or a Unix time in milliseconds
//!   with ABSTTL; a time already past answers `+OK` without creating the key (and with
//!   REPLACE, still deletes the old one). FREQ sets the key's access counter under an LFU
//!   `maxmemory-policy`, IDLETIME its idle time otherwise (the other is validated and
//!   ignored, as in Redis); the two exclude each other.
//!
//! Errors, checked in Redis's order: a bad option (`ERR syntax error`, `ERR Invalid IDLETIME
//! value, must be >= 0`, `ERR Invalid FREQ value, must be >= 0 and <= 255`), an existing key
//! without REPLACE (`BUSYKEY Target key name already exists.`), a bad TTL (`ERR Invalid TTL
//! value, must be >= 0`), a payload from a newer RDB version or with a wrong checksum (`ERR
//! DUMP payload version or checksum are wrong`), an unreadable value or an unknown type
//! (`ERR Bad data format`). Payloads of types this node does not hold yet (sets, sorted
//! sets, ...) and the ziplist/zipmap encodings of Redis before 7.0 are also refused with
//! `ERR Bad data format`.

use bytes::Bytes;

use super::args::{self, is};
use super::errors::{BUSYKEY, SYNTAX};
use super::{CmdResult, Ctx, Handler};
use crate::persistence::payload::{self, PayloadError};
use crate::persistence::rdb::Encodings;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("dump", dump),
    ("restore", restore),
    // What MIGRATE sends in cluster mode: RESTORE, allowed in an importing slot (the
    // command table flags it `asking`).
    ("restore-asking", restore),
];

const INVALID_TTL: &str = "ERR Invalid TTL value, must be >= 0";
const INVALID_IDLETIME: &str = "ERR Invalid IDLETIME value, must be >= 0";
const INVALID_FREQ: &str = "ERR Invalid FREQ value, must be >= 0 and <= 255";
const VERSION_OR_CHECKSUM: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_DATA: &str = "ERR Bad data format";

fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let encodings = Encodings::from_config(&ctx.shared.config());
    match ctx.db().get(&args[1]) {
        None => ctx.out.null(),
        Some(entry) => {
            let payload = payload::dump(&entry.value, &encodings);
            ctx.out.bulk(&payload);
        }
    }
    Ok(())
}

/// RESTORE's options.
#[derive(Default)]
struct RestoreOptions {
    replace: bool,
    absolute_ttl: bool,
    idle_seconds: Option<i64>,
    frequency: Option<i64>,
}

impl RestoreOptions {
    fn parse(options: &[Bytes]) -> Result<RestoreOptions, super::CmdError> {
        let mut parsed = RestoreOptions::default();
        let mut i = 0;
        while i < options.len() {
            let option = &options[i];
            let has_value = i + 1 < options.len();
            if is(option, "replace") {
                parsed.replace = true;
            } else if is(option, "absttl") {
                parsed.absolute_ttl = true;
            } else if is(option, "idletime") && has_value && parsed.frequency.is_none() {
                i += 1;
                let idle = args::int(&options[i])?;
                if idle < 0 {
                    return Err(INVALID_IDLETIME.into());
                }
                parsed.idle_seconds = Some(idle);
            } else if is(option, "freq") && has_value && parsed.idle_seconds.is_none() {
                i += 1;
                let frequency = args::int(&options[i])?;
                if !(0..=255).contains(&frequency) {
                    return Err(INVALID_FREQ.into());
                }
                parsed.frequency = Some(frequency);
            } else {
                return Err(SYNTAX.into());
            }
            i += 1;
        }
        Ok(parsed)
    }
}

fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let options = RestoreOptions::parse(&args[4..])?;
    let key = &args[1];
    if !options.replace && ctx.db().contains(key) {
        return Err(BUSYKEY.into());
    }
    let ttl = args::int(&args[2])?;
    if ttl < 0 {
        return Err(INVALID_TTL.into());
    }
    let encodings = Encodings::from_config(&ctx.shared.config());
    let mut value = payload::restore(&args[3], &encodings).map_err(|e| match e {
        PayloadError::VersionOrChecksum => VERSION_OR_CHECKSUM,
        PayloadError::BadData(_) => BAD_DATA,
    })?;
    {
        let config = ctx.shared.config();
        value.refit_encoding(config.set_max_intset_entries, config.zset_limits());
    }

    let now = ctx.now_ms();
    let removes_past = crate::replication::replica::removes_past_expiry(ctx.shared);
    let db = ctx.db();
    let replaced = options.replace && db.remove(key).is_some();
    // Redis adds in signed 64 bits and lets a huge TTL wrap into the past.
    let expire_at = if options.absolute_ttl {
        ttl
    } else {
        ttl.wrapping_add(now as i64)
    };
    if ttl != 0 && expire_at <= now as i64 && removes_past {
        if replaced {
            ctx.notify(crate::pubsub::notify::GENERIC, "del", key);
            ctx.propagate_as(vec![Bytes::from_static(b"DEL"), key.clone()]);
        }
        ctx.out.ok();
        return Ok(());
    }
    let expire_at = if ttl == 0 { 0 } else { expire_at as u64 };
    db.insert(key, value, expire_at);
    // A relative TTL is propagated as the absolute time it gave (Redis's ABSTTL rewrite).
    let relative_ttl = ttl != 0 && !options.absolute_ttl;
    // Only RESTORE with an IDLETIME or FREQ that applies looks the key up again (MIGRATE
    // sends neither). The frequency was checked to be 0..=255 with the options.
    let frequency = options.frequency.map(|f| f.clamp(0, 255) as u8);
    db.set_access_hint(key, frequency, options.idle_seconds, now);
    ctx.notify(crate::pubsub::notify::GENERIC, "restore", key);
    if relative_ttl {
        let mut rewritten = args.to_vec();
        rewritten[2] = Bytes::from(expire_at.to_string());
        rewritten.push(Bytes::from_static(b"ABSTTL"));
        ctx.propagate_as(rewritten);
    }
    // The restored value may be what a blocked client waits for (Redis's `dbAdd` signals
    // every new key; the waiter checks the type).
    ctx.signal_key_ready(key);
    ctx.out.ok();
    Ok(())
}
