//! `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]` → `OK`.
//!
//! Creates an empty filter whose first sub-filter holds `capacity` items at `error_rate`.
//! Errors, in RedisBloom's order: 3 to 6 arguments after the name, else wrong arity;
//! `ERR bad error rate` / `ERR (0 < error rate range < 1) ` (its trailing blank included);
//! `ERR bad capacity` / `ERR (capacity should be larger than 0)`; `EXPANSION` as the last
//! argument → `ERR no expansion`; `EXPANSION` with `NONSCALING` →
//! `Nonscaling filters cannot expand`; `ERR bad expansion` /
//! `ERR expansion should be greater or equal to 1`; an existing filter → `ERR item exists`,
//! another type → WRONGTYPE. Like RedisBloom, the options are found anywhere among the
//! arguments.

use bytes::Bytes;
use slotproxy::numbers::{parse_f64, parse_i64};

use super::{arg_index, new_chain, wrong_arity, ITEM_EXISTS};
use crate::cmd::errors::WRONGTYPE;
use crate::cmd::{CmdResult, Ctx};
use crate::types::bloom::DEFAULT_EXPANSION;
use crate::types::Value;

pub fn reserve(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if !(4..=7).contains(&args.len()) {
        return Err(wrong_arity(args));
    }
    let error_rate = parse_f64(&args[2]).ok_or("ERR bad error rate")?;
    if error_rate >= 1.0 || error_rate <= 0.0 {
        return Err("ERR (0 < error rate range < 1) ".into());
    }
    let capacity = parse_i64(&args[3]).ok_or("ERR bad capacity")?;
    if capacity <= 0 {
        return Err("ERR (capacity should be larger than 0)".into());
    }
    let nonscaling = arg_index(args, "NONSCALING").is_some();
    let mut expansion = DEFAULT_EXPANSION as i64;
    if let Some(at) = arg_index(args, "EXPANSION") {
        if at + 1 == args.len() {
            return Err("ERR no expansion".into());
        }
        if nonscaling {
            return Err("Nonscaling filters cannot expand".into());
        }
        expansion = parse_i64(&args[at + 1]).ok_or("ERR bad expansion")?;
        if expansion < 1 {
            return Err("ERR expansion should be greater or equal to 1".into());
        }
    }
    let expansion = u32::try_from(expansion).map_err(|_| "ERR bad expansion")?;
    let key = &args[1];
    let db = ctx.db();
    match db.get_mut(key).map(|e| &e.value) {
        Some(Value::Bloom(_)) => return Err(ITEM_EXISTS.into()),
        Some(_) => return Err(WRONGTYPE.into()),
        None => {}
    }
    let chain = new_chain(capacity as u64, error_rate, expansion, nonscaling)?;
    db.insert(key, Value::Bloom(Box::new(chain)), 0);
    db.dirty += 1;
    ctx.out.simple("OK");
    Ok(())
}
