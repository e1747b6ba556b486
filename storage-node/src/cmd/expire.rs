//! Key expiry commands.
//!
//! - `EXPIRE key seconds [NX|XX|GT|LT]`, `PEXPIRE key milliseconds [...]`,
//!   `EXPIREAT key unix-seconds [...]`, `PEXPIREAT key unix-milliseconds [...]`
//!   → 1 if the timeout was set (or the key deleted because the time is already past),
//!   0 if the key is missing or a condition failed. Conditions: NX only without a TTL, XX
//!   only with one, GT only if later than the current TTL, LT only if earlier (a key
//!   without a TTL counts as an infinite TTL: GT always fails, LT always applies).
//!   Errors: `ERR Unsupported option <opt>`, `ERR NX and XX, GT or LT options at the same
//!   time are not compatible`, `ERR GT and LT options at the same time are not compatible`,
//!   `ERR invalid expire time in '<command>' command` when the time overflows.
//! - `TTL key` / `PTTL key` → remaining seconds (rounded) / milliseconds; -1 without a TTL,
//!   -2 for a missing key.
//! - `EXPIRETIME key` / `PEXPIRETIME key` → the absolute Unix time in seconds (rounded) /
//!   milliseconds; -1 / -2 as above.
//! - `PERSIST key` → 1 if a TTL was removed, else 0.

use bytes::Bytes;

use super::args::{int, is};
use super::errors::{CmdError, INVALID_EXPIRE};
use super::{CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("expire", expire),
    ("pexpire", pexpire),
    ("expireat", expireat),
    ("pexpireat", pexpireat),
    ("ttl", ttl),
    ("pttl", pttl),
    ("expiretime", expiretime),
    ("pexpiretime", pexpiretime),
    ("persist", persist),
];

/// The unit of the time argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Milliseconds,
}

/// Whether the time argument counts from now or from the Unix epoch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Now,
    Epoch,
}

/// The condition options of the EXPIRE family.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    fn parse(options: &[Bytes]) -> Result<Conditions, CmdError> {
        let mut c = Conditions::default();
        for option in options {
            match () {
                _ if is(option, "nx") => c.nx = true,
                _ if is(option, "xx") => c.xx = true,
                _ if is(option, "gt") => c.gt = true,
                _ if is(option, "lt") => c.lt = true,
                _ => {
                    // Redis prints the option as a C string: it ends at a NUL byte.
                    let shown = slotproxy::protocol::errors::c_string(option);
                    return Err(format!("ERR Unsupported option {shown}").into());
                }
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into(),
            );
        }
        if c.gt && c.lt {
            return Err("ERR GT and LT options at the same time are not compatible".into());
        }
        Ok(c)
    }

    /// Whether the new expiry time may replace `current` (None: the key has no TTL).
    fn allow(&self, current: Option<i64>, when: i64) -> bool {
        if self.nx && current.is_some() || self.xx && current.is_none() {
            return false;
        }
        // No TTL is an infinite TTL: nothing is greater, everything is less.
        if self.gt && current.is_none_or(|c| when <= c) {
            return false;
        }
        !(self.lt && current.is_some_and(|c| when >= c))
    }
}

fn expire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, Base::Now, Unit::Seconds, "expire")
}

fn pexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, Base::Now, Unit::Milliseconds, "pexpire")
}

fn expireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, Base::Epoch, Unit::Seconds, "expireat")
}

fn pexpireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, Base::Epoch, Unit::Milliseconds, "pexpireat")
}

/// The absolute expiry time in Unix milliseconds for a time argument, or the overflow error.
/// Negative results are allowed: they mean "already expired".
pub fn absolute_expire_ms(
    arg: &[u8],
    base_ms: i64,
    in_seconds: bool,
    command: &str,
) -> Result<i64, CmdError> {
    let invalid = || CmdError::from(INVALID_EXPIRE.replace("{}", command));
    let mut when = int(arg)?;
    if in_seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    // Redis only rejects overflow past the top; a sum below i64::MIN cannot happen since
    // the base is never negative.
    if when > i64::MAX - base_ms {
        return Err(invalid());
    }
    Ok(when + base_ms)
}

fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    base: Base,
    unit: Unit,
    command: &str,
) -> CmdResult {
    let conditions = Conditions::parse(&args[3..])?;
    let now = ctx.now_ms() as i64;
    let base_ms = if base == Base::Now { now } else { 0 };
    let when = absolute_expire_ms(&args[2], base_ms, unit == Unit::Seconds, command)?;
    let key = &args[1];
    let removes_past = crate::replication::replica::removes_past_expiry(ctx.shared);
    let db = ctx.db();
    let Some(entry) = db.get_mut(key) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let current = entry.has_expiry().then_some(entry.expire_at_ms() as i64);
    if !conditions.allow(current, when) {
        ctx.out.integer(0);
        return Ok(());
    }
    // Propagated as DEL (UNLINK with lazyfree-lazy-expire), or as PEXPIREAT with the
    // conditions given (Redis's `expireGenericCommand`), so a replay later sets the same
    // instant.
    if when <= now && removes_past {
        db.remove(key);
        ctx.notify(crate::pubsub::notify::GENERIC, "del", key);
        ctx.propagate_as_expired(key.clone());
    } else {
        db.set_expiry(key, when as u64);
        ctx.notify(crate::pubsub::notify::GENERIC, "expire", key);
        if command != "pexpireat" {
            let mut rewritten = vec![
                Bytes::from_static(b"PEXPIREAT"),
                key.clone(),
                Bytes::from(when.to_string()),
            ];
            rewritten.extend(args[3..].iter().cloned());
            ctx.propagate_as(rewritten);
        }
    }
    ctx.out.integer(1);
    Ok(())
}

fn ttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, Unit::Seconds, Base::Now)
}

fn pttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, Unit::Milliseconds, Base::Now)
}

fn expiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, Unit::Seconds, Base::Epoch)
}

fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, Unit::Milliseconds, Base::Epoch)
}

fn ttl_generic(ctx: &mut Ctx<'_>, args: &[Bytes], unit: Unit, base: Base) -> CmdResult {
    let now = ctx.now_ms() as i64;
    let reply = match ctx.db().get_no_touch(&args[1]) {
        None => -2,
        Some(e) if !e.has_expiry() => -1,
        Some(e) => {
            let at = e.expire_at_ms() as i64;
            let ms = if base == Base::Now { at - now } else { at }.max(0);
            match unit {
                Unit::Milliseconds => ms,
                // Rounded to the nearest second; i128 so the largest times do not overflow.
                Unit::Seconds => ((i128::from(ms) + 500) / 1000) as i64,
            }
        }
    };
    ctx.out.integer(reply);
    Ok(())
}

fn persist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let db = ctx.db();
    let had_ttl = db.get_mut(&args[1]).is_some_and(|e| e.has_expiry());
    if had_ttl {
        db.set_expiry(&args[1], 0);
        ctx.notify(crate::pubsub::notify::GENERIC, "persist", &args[1]);
    }
    ctx.out.integer(had_ttl as i64);
    Ok(())
}
