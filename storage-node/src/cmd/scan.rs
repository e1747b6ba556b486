//! `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`
//!
//! → a two-element array: the next cursor (a bulk string, `0` when the iteration is over)
//! and an array of keys. Every key present for the whole iteration is returned at least once;
//! COUNT (default 10) is a hint for how much work one call does; MATCH keeps keys matching
//! the glob pattern and TYPE keys of that type (case-insensitive), both applied after the
//! keys are collected, so a call may return fewer keys than COUNT, even none, before the end.
//! Cursor values are this node's own (see `keyspace::scan` for their format), so they differ
//! from Redis's; the guarantees are the same.
//!
//! Errors: `ERR invalid cursor`; `ERR value is not an integer or out of range` for a bad
//! COUNT; `ERR syntax error` for COUNT < 1, a missing option value or an unknown option.
//!
//! [`parse_cursor`] and [`ScanOptions`] are shared with HSCAN, SSCAN and ZSCAN.

use bytes::Bytes;
use slotproxy::glob::glob_match;

use super::args::{int, is};
use super::errors::{CmdError, SYNTAX};
use super::{CmdResult, Ctx, Handler};
use crate::keyspace::scan::scan;

pub const COMMANDS: &[(&str, Handler)] = &[("scan", scan_command)];

const INVALID_CURSOR: &str = "ERR invalid cursor";

/// Reads a cursor the way Redis does with `strtoul`: an optional sign (a negative value wraps
/// around), decimal digits, nothing after them; leading whitespace and overflow are errors.
/// The argument is read as a C string, so it ends at a NUL byte, and an empty one is 0.
pub fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    let text = arg.split(|&b| b == 0).next().unwrap_or_default();
    let invalid = || CmdError::from(INVALID_CURSOR);
    let Some(&first) = text.first() else {
        return Ok(0);
    };
    if matches!(first, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return Err(invalid());
    }
    let (negative, digits) = match first {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// The options of the SCAN family.
pub struct ScanOptions<'a> {
    pub count: usize,
    /// The MATCH pattern, unless it is absent or a lone `*` (which matches everything).
    pub pattern: Option<&'a [u8]>,
    pub type_name: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    /// Parses the options after the cursor. TYPE is accepted only when `allow_type` (SCAN).
    pub fn parse(options: &'a [Bytes], allow_type: bool) -> Result<ScanOptions<'a>, CmdError> {
        let mut parsed = ScanOptions {
            count: 10,
            pattern: None,
            type_name: None,
        };
        let mut i = 0;
        while i < options.len() {
            let (option, value) = match options.get(i + 1) {
                Some(value) => (&options[i], value),
                None => return Err(SYNTAX.into()),
            };
            if is(option, "count") {
                let count = int(value)?;
                if count < 1 {
                    return Err(SYNTAX.into());
                }
                parsed.count = usize::try_from(count).unwrap_or(usize::MAX);
            } else if is(option, "match") {
                parsed.pattern = (&value[..] != b"*").then_some(&value[..]);
            } else if is(option, "type") && allow_type {
                parsed.type_name = Some(&value[..]);
            } else {
                return Err(SYNTAX.into());
            }
            i += 2;
        }
        Ok(parsed)
    }

    /// Whether a key passes the MATCH filter.
    pub fn matches(&self, key: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, key, false))
    }
}

fn scan_command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = parse_cursor(&args[1])?;
    let options = ScanOptions::parse(&args[2..], true)?;
    let db = ctx.keyspace.db(ctx.client.db);
    let page = scan(db, cursor, options.count);
    let keys: Vec<&[u8]> = page
        .keys
        .iter()
        .filter(|k| options.matches(&k.key))
        .filter(|k| match options.type_name {
            None => true,
            Some(wanted) => {
                // Redis looks the key up to read its type, which counts as a keyspace hit.
                db.hits += 1;
                wanted.eq_ignore_ascii_case(k.type_name.as_bytes())
            }
        })
        .map(|k| k.key.as_slice())
        .collect();
    ctx.out.array(2);
    ctx.out.bulk(page.cursor.to_string().as_bytes());
    ctx.out.array(keys.len());
    for key in keys {
        ctx.out.bulk(key);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"+7"), Ok(7));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"-0"), Ok(0));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"-18446744073709551615"), Ok(1));
        assert_eq!(parse_cursor(b"12\0junk"), Ok(12));
        for bad in [
            &b"18446744073709551616"[..],
            b" 0",
            b"\t1",
            b"0 ",
            b"x",
            b"-",
            b"+",
            b"1x",
            b"0x10",
            b"+-1",
        ] {
            assert!(parse_cursor(bad).is_err(), "{bad:?}");
        }
    }
}
