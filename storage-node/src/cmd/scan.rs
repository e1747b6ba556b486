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

/// Reads a cursor the way Redis does with `strtoul` (shared with the proxy's SCAN:
/// [`slotproxy::numbers::parse_cursor`]).
pub fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    slotproxy::numbers::parse_cursor(arg).ok_or_else(|| CmdError::from(INVALID_CURSOR))
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
