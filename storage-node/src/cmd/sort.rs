//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC]
//! [ALPHA] [STORE destination]` and `SORT_RO` (the same without STORE).
//!
//! → the elements of a list, set or sorted set, sorted as numbers (ties by the elements'
//! bytes) or, with ALPHA, as byte strings; DESC reverses. BY sorts by the values of other
//! keys, named by replacing the first `*` of the pattern with the element (`key->field`
//! reads a hash field); a pattern without `*` (e.g. `nosort`) skips sorting, except that a
//! set is then sorted with ALPHA when storing, so the result is deterministic. A sorted set
//! that is not sorted comes in score order (reversed by DESC). LIMIT keeps `count` elements
//! from `offset` (a negative count: all). Each GET pattern replaces an element by a looked
//! up value (`#` is the element itself; missing values are null). With STORE the result is
//! saved as a list (missing values as empty strings) and the reply is its length; an empty
//! result deletes the destination. A missing key sorts as empty.
//!
//! Errors: `ERR syntax error`, `ERR value is not an integer or out of range` (LIMIT),
//! WRONGTYPE, `ERR One or more scores can't be converted into double`.
//!
//! Seams for types that live in other modules: [`sort_source`] lists the elements of each
//! sortable type, [`hash_field`] reads `->field` lookups, and [`store_list`] writes the
//! STORE result; each matches on [`Value`] and has one arm per type that exists.

use std::cmp::Ordering;

use bytes::Bytes;

use super::args::{int, is};
use super::errors::{CmdError, SYNTAX, WRONGTYPE};
use super::zset::bounds::strtod_checked;
use super::{CmdResult, Ctx, Handler};
use crate::keyspace::Db;
use crate::types::Value;

pub const COMMANDS: &[(&str, Handler)] = &[("sort", sort), ("sort_ro", sort_ro)];

const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// The elements SORT reads from a value, in the value's own order, and whether the value
/// is a sorted set; None for a type SORT refuses (WRONGTYPE).
fn sort_source(value: &Value) -> Option<(Vec<Vec<u8>>, bool)> {
    match value {
        Value::Set(s) => Some((s.members(), false)),
        Value::ZSet(z) => Some((z.tree.iter().map(|(m, _)| m.to_vec()).collect(), true)),
        Value::List(l) => Some((l.items.iter().map(|e| e.to_vec()).collect(), false)),
        Value::Str(_) | Value::Hash(_) | Value::Bloom(_) | Value::Stream(_) => None,
    }
}

/// The value of `field` in a hash value (`pattern->field` lookups); None if the value is
/// not a hash or lacks the field.
fn hash_field(value: &Value, field: &[u8]) -> Option<Vec<u8>> {
    match value {
        Value::Hash(h) => h.get(field).map(<[u8]>::to_vec),
        Value::Str(_)
        | Value::Set(_)
        | Value::ZSet(_)
        | Value::List(_)
        | Value::Bloom(_)
        | Value::Stream(_) => None,
    }
}

/// Stores SORT's result as a list at `key` (replacing it).
fn store_list(ctx: &mut Ctx<'_>, key: &[u8], elements: Vec<Vec<u8>>) -> CmdResult {
    let mut list = crate::types::ListValue::new();
    list.items
        .extend(elements.iter().map(|e| crate::types::CompactBytes::new(e)));
    ctx.db().insert(key, Value::List(Box::new(list)), 0);
    ctx.notify(crate::pubsub::notify::LIST, "sortstore", key);
    // A stored list may be what a blocked client waits for.
    ctx.signal_key_ready(key);
    Ok(())
}

/// Redis's `lookupKeyByPattern`: the string (or hash field) a pattern names for `element`.
fn lookup_by_pattern(db: &mut Db, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|at| star + 1 + at)
        .filter(|&at| at + 2 < pattern.len());
    let (key_end, field) = match arrow {
        Some(at) => (at, Some(&pattern[at + 2..])),
        None => (pattern.len(), None),
    };
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let value = &db.get(&key)?.value;
    match (field, value) {
        (Some(field), value) => hash_field(value, field),
        (None, Value::Str(s)) => Some(s.as_slice().to_vec()),
        (None, _) => None,
    }
}

struct Options {
    by: Option<Bytes>,
    dont_sort: bool,
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    gets: Vec<Bytes>,
    store: Option<Bytes>,
}

fn parse(args: &[Bytes], read_only: bool) -> Result<Options, CmdError> {
    let mut options = Options {
        by: None,
        dont_sort: false,
        desc: false,
        alpha: false,
        limit: None,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let arg = &args[j];
        if is(arg, "asc") {
            options.desc = false;
        } else if is(arg, "desc") {
            options.desc = true;
        } else if is(arg, "alpha") {
            options.alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            options.limit = Some((int(&args[j + 1])?, int(&args[j + 2])?));
            j += 2;
        } else if is(arg, "store") && left >= 1 && !read_only {
            options.store = Some(args[j + 1].clone());
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            let pattern = args[j + 1].clone();
            options.dont_sort = !pattern.contains(&b'*');
            options.by = Some(pattern);
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            options.gets.push(args[j + 1].clone());
            j += 1;
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    Ok(options)
}

/// The sort key of one element.
enum Weight {
    Number(f64),
    Text(Option<Vec<u8>>),
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &[Bytes], read_only: bool) -> CmdResult {
    let mut options = parse(args, read_only)?;
    let db = ctx.db();
    let (mut elements, is_zset) = match db.get(&args[1]) {
        None => (Vec::new(), false),
        Some(entry) => sort_source(&entry.value).ok_or(CmdError::from(WRONGTYPE))?,
    };
    // Redis 7.0 "destructively converts encoded sorted sets for SORT" (sort.c): a listpack
    // sorted set is a skiplist from then on (OBJECT ENCODING, SCAN order).
    if is_zset {
        if let Some(Value::ZSet(z)) = db.peek_mut(&args[1]).map(|e| &mut e.value) {
            z.convert_to_skiplist();
        }
    }
    let is_set = matches!(db.peek(&args[1]).map(|e| &e.value), Some(Value::Set(_)));
    let is_list = matches!(db.peek(&args[1]).map(|e| &e.value), Some(Value::List(_)));
    if options.dont_sort && is_set && options.store.is_some() {
        options.dont_sort = false;
        options.alpha = true;
        options.by = None;
    }
    if options.dont_sort {
        // Lists and sorted sets keep their own order, read from the tail for DESC (Redis
        // walks a list backwards from `length - start - 1`); sets have no order to reverse.
        if (is_zset || is_list) && options.desc {
            elements.reverse();
        }
    } else {
        sort_elements(db, &mut elements, &options)?;
    }
    let (start, end) = limit_range(options.limit, elements.len());
    let selected = &elements[start..end];
    let mut output: Vec<Option<Vec<u8>>> = Vec::new();
    for element in selected {
        if options.gets.is_empty() {
            output.push(Some(element.clone()));
        }
        for pattern in &options.gets {
            output.push(lookup_by_pattern(db, pattern, element));
        }
    }
    match &options.store {
        Some(destination) => {
            if output.is_empty() {
                if ctx.db().remove(destination).is_some() {
                    ctx.notify(crate::pubsub::notify::GENERIC, "del", destination);
                }
                ctx.out.integer(0);
                return Ok(());
            }
            let len = output.len();
            let values = output.into_iter().map(Option::unwrap_or_default).collect();
            store_list(ctx, destination, values)?;
            ctx.out.integer(len as i64);
        }
        None => {
            ctx.out.array(output.len());
            for value in &output {
                match value {
                    Some(v) => ctx.out.bulk(v),
                    None => ctx.out.null(),
                }
            }
        }
    }
    Ok(())
}

/// Sorts as Redis's `sortCompare` does.
fn sort_elements(db: &mut Db, elements: &mut Vec<Vec<u8>>, options: &Options) -> CmdResult {
    let mut weighted: Vec<(Weight, Vec<u8>)> = Vec::with_capacity(elements.len());
    for element in elements.drain(..) {
        let by_value = match &options.by {
            Some(pattern) => lookup_by_pattern(db, pattern, &element),
            None => Some(element.clone()),
        };
        let weight = if options.alpha {
            Weight::Text(if options.by.is_some() { by_value } else { None })
        } else {
            match by_value {
                Some(text) => Weight::Number(strtod_checked(&text).ok_or(NOT_DOUBLE)?),
                None => Weight::Number(0.0),
            }
        };
        weighted.push((weight, element));
    }
    let by_pattern = options.by.is_some();
    weighted.sort_by(|(wa, a), (wb, b)| {
        let order = match (wa, wb) {
            (Weight::Number(x), Weight::Number(y)) => x
                .partial_cmp(y)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.cmp(b)),
            (Weight::Text(x), Weight::Text(y)) if by_pattern => x.cmp(y),
            _ => a.cmp(b),
        };
        if options.desc {
            order.reverse()
        } else {
            order
        }
    });
    elements.extend(weighted.into_iter().map(|(_, e)| e));
    Ok(())
}

/// The `[start, end)` slice LIMIT keeps, clamped as Redis does.
fn limit_range(limit: Option<(i64, i64)>, len: usize) -> (usize, usize) {
    let len = len as i64;
    let (offset, count) = limit.unwrap_or((0, -1));
    let mut start = offset.max(0);
    let mut end = if count < 0 {
        len - 1
    } else {
        start.saturating_add(count) - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    if start < 0 || end < start {
        return (0, 0);
    }
    (start as usize, end as usize + 1)
}

fn sort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    sort_generic(ctx, args, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    sort_generic(ctx, args, true)
}
