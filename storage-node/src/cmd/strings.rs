//! String commands.
//!
//! - `GET key` → the value, or null; WRONGTYPE for non-strings.
//! - `SET key value` → `+OK`.

use bytes::Bytes;

use super::errors::WRONGTYPE;
use super::{CmdResult, Ctx, Handler};
use crate::types::{StringValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[("get", get), ("set", set)];

fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    match ctx.db().get(&args[1]).map(|e| &e.value) {
        None => ctx.out.null(),
        Some(Value::Str(s)) => {
            let bytes = s.as_slice().to_vec();
            ctx.out.bulk(&bytes)
        }
        #[allow(unreachable_patterns)]
        Some(_) => return Err(WRONGTYPE.into()),
    }
    Ok(())
}

fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.db()
        .insert(&args[1], Value::Str(StringValue::new(&args[2])), 0);
    ctx.out.ok();
    Ok(())
}
