//! The options of SET and GETEX, read with Redis's rules.
//!
//! - SET takes `NX | XX`, `GET`, and one of `EX seconds | PX ms | EXAT unix-s | PXAT unix-ms
//!   | KEEPTTL`.
//! - GETEX takes one of `EX | PX | EXAT | PXAT | PERSIST`.
//!
//! As in Redis, repeating the same option is allowed (the last expire time wins), while
//! combining conflicting ones, an option the command does not take, or an expire option
//! without its value is `ERR syntax error`. The expire value itself is checked later (see
//! [`Expire::deadline`]) because Redis reports other errors first.

use bytes::Bytes;

use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, INVALID_EXPIRE, SYNTAX};

/// Which command the options belong to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Set,
    GetEx,
}

/// An expire time as given: `EX`, `PX`, `EXAT` or `PXAT` and its value.
#[derive(Clone, Copy)]
pub struct Expire<'a> {
    pub value: &'a [u8],
    /// Milliseconds per unit: 1000 for seconds, 1 for milliseconds.
    pub unit_ms: i64,
    /// `EXAT` / `PXAT`: a Unix time rather than a time from now.
    pub absolute: bool,
}

#[derive(Default)]
pub struct Options<'a> {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keep_ttl: bool,
    pub persist: bool,
    pub expire: Option<Expire<'a>>,
}

impl<'a> Options<'a> {
    /// Reads the options after the key (and value, for SET).
    pub fn parse(args: &'a [Bytes], command: Command) -> Result<Options<'a>, CmdError> {
        let mut options = Options::default();
        let is_set = command == Command::Set;
        let mut i = 0;
        while i < args.len() {
            let option = &args[i];
            let next = args.get(i + 1);
            if is(option, "nx") && !options.xx && is_set {
                options.nx = true;
            } else if is(option, "xx") && !options.nx && is_set {
                options.xx = true;
            } else if is(option, "get") && is_set {
                options.get = true;
            } else if is(option, "keepttl")
                && !options.persist
                && options.expire.is_none()
                && is_set
            {
                options.keep_ttl = true;
            } else if is(option, "persist")
                && !is_set
                && options.expire.is_none()
                && !options.keep_ttl
            {
                options.persist = true;
            } else if let (Some((unit_ms, absolute)), Some(value)) = (expire_kind(option), next) {
                // The same kind may repeat (the last one wins); different kinds conflict.
                let same_kind = options
                    .expire
                    .is_none_or(|e| (e.unit_ms, e.absolute) == (unit_ms, absolute));
                if options.keep_ttl || options.persist || !same_kind {
                    return Err(SYNTAX.into());
                }
                options.expire = Some(Expire {
                    value,
                    unit_ms,
                    absolute,
                });
                i += 1;
            } else {
                return Err(SYNTAX.into());
            }
            i += 1;
        }
        Ok(options)
    }
}

/// The unit and kind of an expire option name.
fn expire_kind(option: &[u8]) -> Option<(i64, bool)> {
    if is(option, "ex") {
        Some((1000, false))
    } else if is(option, "px") {
        Some((1, false))
    } else if is(option, "exat") {
        Some((1000, true))
    } else if is(option, "pxat") {
        Some((1, true))
    } else {
        None
    }
}

impl Expire<'_> {
    /// A relative expire time (SETEX, PSETEX).
    pub fn relative(value: &[u8], unit_ms: i64) -> Expire<'_> {
        Expire {
            value,
            unit_ms,
            absolute: false,
        }
    }

    /// The absolute expiry in Unix milliseconds. A value that is not an integer is
    /// `ERR value is not an integer or out of range`; zero, negative, or overflowing values
    /// are `ERR invalid expire time in '<command>' command`.
    pub fn deadline(&self, now_ms: u64, command: &str) -> Result<u64, CmdError> {
        let invalid = || CmdError::from(INVALID_EXPIRE.replace("{}", command));
        let n = int(self.value)?;
        if n <= 0 {
            return Err(invalid());
        }
        let mut ms = n.checked_mul(self.unit_ms).ok_or_else(invalid)?;
        if !self.absolute {
            ms = ms.checked_add(now_ms as i64).ok_or_else(invalid)?;
        }
        Ok(ms as u64)
    }
}
