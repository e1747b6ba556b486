//! Adding items, creating the filter with defaults (error rate 0.01, capacity 100,
//! expansion 2) when the key is missing.
//!
//! - `BF.ADD key item` → 1 if the item is new, 0 if it (or a collision) was there.
//! - `BF.MADD key item [item ...]` → an array of those, one per item.
//! - `BF.INSERT key [CAPACITY cap] [ERROR rate] [EXPANSION n] [NOCREATE] [NONSCALING]
//!   ITEMS item [item ...]` → the same array; the options shape a filter it creates and are
//!   ignored for an existing one; `NOCREATE` answers `ERR not found` for a missing key.
//!   Options are recognised as RedisBloom does, by their first letter (`ERROR` and
//!   `EXPANSION` by the second, `NOCREATE` and `NONSCALING` by the third); a bad value is
//!   `Bad error rate` / `Bad capacity` / `Bad expansion`, an unknown word
//!   `Unknown argument received`, and values out of range `Bad argument received` (all
//!   without `ERR`, as RedisBloom sends them). No `ITEMS` or no item: wrong arity.
//!
//! A full `NONSCALING` filter answers `ERR non scaling filter is full` for the item, and
//! the array ends there (the items after it are not tried). WRONGTYPE for another type.

use bytes::Bytes;
use slotproxy::numbers::{parse_f64, parse_i64};

use super::{new_chain, write_bloom, wrong_arity, CANNOT_CREATE, NONSCALING_FULL, NOT_FOUND};
use crate::cmd::{CmdError, CmdResult, Ctx};
use crate::types::bloom::{AddError, DEFAULT_CAPACITY, DEFAULT_ERROR_RATE, DEFAULT_EXPANSION};
use crate::types::Value;

/// How a missing filter is created.
struct CreateOptions {
    capacity: i64,
    error_rate: f64,
    expansion: i64,
    nonscaling: bool,
    autocreate: bool,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            capacity: DEFAULT_CAPACITY as i64,
            error_rate: DEFAULT_ERROR_RATE,
            expansion: DEFAULT_EXPANSION as i64,
            nonscaling: false,
            autocreate: true,
        }
    }
}

pub fn add(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 3 {
        return Err(wrong_arity(args));
    }
    let outcomes = add_items(ctx, &args[1], &args[2..], &CreateOptions::default())?;
    match outcomes.first() {
        Some(Ok(added)) => ctx.out.integer(*added as i64),
        Some(Err(e)) => ctx.out.error(e.message()),
        None => {}
    }
    Ok(())
}

pub fn madd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() < 3 {
        return Err(wrong_arity(args));
    }
    let outcomes = add_items(ctx, &args[1], &args[2..], &CreateOptions::default())?;
    reply_outcomes(ctx, &outcomes);
    Ok(())
}

pub fn insert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() < 4 {
        return Err(wrong_arity(args));
    }
    let mut options = CreateOptions::default();
    let mut at = 2;
    let mut items_at = None;
    while at < args.len() && items_at.is_none() {
        let word = args[at].to_ascii_lowercase();
        let letter = |i: usize| word.get(i).copied().unwrap_or(0);
        match letter(0) {
            b'i' => {
                at += 1;
                items_at = Some(at);
            }
            b'e' => {
                at += 1;
                let value = args.get(at).ok_or_else(|| wrong_arity(args))?;
                if letter(1) == b'r' {
                    options.error_rate = parse_f64(value).ok_or("Bad error rate")?;
                } else {
                    options.expansion = parse_i64(value).ok_or("Bad expansion")?;
                }
                at += 1;
            }
            b'c' => {
                at += 1;
                let value = args.get(at).ok_or_else(|| wrong_arity(args))?;
                options.capacity = parse_i64(value).ok_or("Bad capacity")?;
                at += 1;
            }
            b'n' => {
                if letter(2) == b'c' {
                    options.autocreate = false;
                } else {
                    options.nonscaling = true;
                }
                at += 1;
            }
            _ => return Err("Unknown argument received".into()),
        }
    }
    let items_at = match items_at {
        Some(i) if i < args.len() => i,
        _ => return Err(wrong_arity(args)),
    };
    if options.error_rate <= 0.0
        || options.error_rate >= 1.0
        || options.capacity < 1
        || options.expansion < 1
    {
        return Err("Bad argument received".into());
    }
    let outcomes = add_items(ctx, &args[1], &args[items_at..], &options)?;
    reply_outcomes(ctx, &outcomes);
    Ok(())
}

fn reply_outcomes(ctx: &mut Ctx<'_>, outcomes: &[Result<bool, CmdError>]) {
    ctx.out.array(outcomes.len());
    for outcome in outcomes {
        match outcome {
            Ok(added) => ctx.out.integer(*added as i64),
            Err(e) => ctx.out.error(e.message()),
        }
    }
}

/// Adds `items` in order, creating the filter if allowed; stops after an item that fails.
fn add_items(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    items: &[Bytes],
    options: &CreateOptions,
) -> Result<Vec<Result<bool, CmdError>>, CmdError> {
    let db = ctx.db();
    if write_bloom(db, key)?.is_none() {
        if !options.autocreate {
            return Err(NOT_FOUND.into());
        }
        let expansion = u32::try_from(options.expansion).map_err(|_| "Bad expansion")?;
        let chain = new_chain(
            options.capacity as u64,
            options.error_rate,
            expansion,
            options.nonscaling,
        )?;
        db.insert(key, Value::Bloom(Box::new(chain)), 0);
        db.dirty += 1;
    }
    let Some(bloom) = write_bloom(db, key)? else {
        return Err(NOT_FOUND.into());
    };
    let mut outcomes = Vec::with_capacity(items.len());
    let mut added_any = false;
    for item in items {
        match bloom.add(item) {
            Ok(added) => {
                added_any |= added;
                outcomes.push(Ok(added));
            }
            Err(AddError::Full) => {
                outcomes.push(Err(NONSCALING_FULL.into()));
                break;
            }
            Err(AddError::CannotGrow) => {
                outcomes.push(Err(CANNOT_CREATE.into()));
                break;
            }
        }
    }
    if added_any {
        db.dirty += 1;
    }
    Ok(outcomes)
}
