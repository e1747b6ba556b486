//! `math.random` and `math.randomseed` as Redis replaces them: a 48-bit linear congruential
//! generator (`lrand48`) seeded with 0 when the interpreter starts. Redis 7.0 does not reseed
//! it per script, so only sequences after `math.randomseed(n)` are reproducible.

use mlua::{Lua, Table};

use super::engine::{error_at_caller, Args};
use super::redis_lib::to_number;

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
/// Redis divides by `INT32_MAX` to get a value in [0, 1).
const LRAND48_MAX: f64 = i32::MAX as f64;

/// The generator's state.
pub struct Rand48(u64);

impl Rand48 {
    pub fn seeded(seed: i32) -> Rand48 {
        Rand48((((seed as u32) as u64) << 16 | 0x330E) & MASK)
    }

    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(MULTIPLIER).wrapping_add(INCREMENT) & MASK;
        (self.0 >> 17) as u32
    }
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    lua.set_app_data(Rand48::seeded(0));
    let math: Table = globals.get("math")?;
    math.set("random", lua.create_function(random)?)?;
    math.set(
        "randomseed",
        lua.create_function(|lua, args: Args| {
            let seed = args.first().and_then(to_number).ok_or_else(|| {
                error_at_caller(
                    lua,
                    "bad argument #1 to 'randomseed' (number expected, got no value)",
                )
            })?;
            lua.set_app_data(Rand48::seeded(seed as i64 as i32));
            Ok(())
        })?,
    )?;
    Ok(())
}

/// Lua 5.1's `math.random`, drawing from the generator above.
fn random(lua: &Lua, args: Args) -> mlua::Result<f64> {
    let drawn = match lua.app_data_mut::<Rand48>() {
        Some(mut state) => state.next(),
        None => 0,
    };
    let r = f64::from(drawn % i32::MAX as u32) / LRAND48_MAX;
    let int_arg = |i: usize| -> mlua::Result<f64> {
        args.get(i)
            .and_then(to_number)
            .map(f64::floor)
            .ok_or_else(|| {
                error_at_caller(
                    lua,
                    &format!("bad argument #{} to 'random' (number expected)", i + 1),
                )
            })
    };
    match args.len() {
        0 => Ok(r),
        1 => {
            let upper = int_arg(0)?;
            if upper < 1.0 {
                return Err(error_at_caller(
                    lua,
                    "bad argument #1 to 'random' (interval is empty)",
                ));
            }
            Ok((r * upper).floor() + 1.0)
        }
        2 => {
            let (lower, upper) = (int_arg(0)?, int_arg(1)?);
            if lower > upper {
                return Err(error_at_caller(
                    lua,
                    "bad argument #2 to 'random' (interval is empty)",
                ));
            }
            Ok((r * (upper - lower + 1.0)).floor() + lower)
        }
        _ => Err(error_at_caller(lua, "wrong number of arguments")),
    }
}
