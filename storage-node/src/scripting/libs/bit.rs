//! `bit`: LuaBitOp 1.0. Numbers are taken modulo 2^32 as signed 32-bit integers and
//! results are signed 32-bit integers.

use mlua::{Lua, Table, Value};

use super::check_number;
use crate::scripting::engine::Args;

/// LuaBitOp's conversion: adding 2^52 + 2^51 leaves the integer part, rounded, in the low
/// bits of the double.
fn to_bit(n: f64) -> i32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

fn arg(lua: &Lua, args: &[Value], i: usize, name: &str) -> mlua::Result<i32> {
    check_number(lua, args, i, name).map(to_bit)
}

pub fn open(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let bit = lua.create_table()?;
    macro_rules! unary {
        ($name:literal, $f:expr) => {
            bit.set(
                $name,
                lua.create_function(|lua, args: Args| {
                    let f: fn(i32) -> i32 = $f;
                    Ok(f64::from(f(arg(lua, &args, 0, $name)?)))
                })?,
            )?;
        };
    }
    unary!("tobit", |x| x);
    unary!("bnot", |x| !x);
    unary!("bswap", |x| x.swap_bytes());
    macro_rules! fold {
        ($name:literal, $f:expr) => {
            bit.set(
                $name,
                lua.create_function(|lua, args: Args| {
                    let f: fn(i32, i32) -> i32 = $f;
                    let mut acc = arg(lua, &args, 0, $name)?;
                    for i in 1..args.len() {
                        acc = f(acc, arg(lua, &args, i, $name)?);
                    }
                    Ok(f64::from(acc))
                })?,
            )?;
        };
    }
    fold!("band", |a, b| a & b);
    fold!("bor", |a, b| a | b);
    fold!("bxor", |a, b| a ^ b);
    macro_rules! shift {
        ($name:literal, $f:expr) => {
            bit.set(
                $name,
                lua.create_function(|lua, args: Args| {
                    let f: fn(i32, u32) -> i32 = $f;
                    let x = arg(lua, &args, 0, $name)?;
                    let n = arg(lua, &args, 1, $name)? as u32 & 31;
                    Ok(f64::from(f(x, n)))
                })?,
            )?;
        };
    }
    shift!("lshift", |x, n| ((x as u32) << n) as i32);
    shift!("rshift", |x, n| ((x as u32) >> n) as i32);
    shift!("arshift", |x, n| x >> n);
    shift!("rol", |x, n| (x as u32).rotate_left(n) as i32);
    shift!("ror", |x, n| (x as u32).rotate_right(n) as i32);
    bit.set(
        "tohex",
        lua.create_function(|lua, args: Args| {
            let x = arg(lua, &args, 0, "tohex")? as u32;
            let mut n = match args.get(1) {
                None | Some(Value::Nil) => 8,
                Some(_) => arg(lua, &args, 1, "tohex")?,
            };
            let upper = n < 0;
            if upper {
                n = n.wrapping_neg();
            }
            let n = (n as u32).min(8) as usize;
            let text = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(text[8 - n..].to_string())
        })?,
    )?;
    globals.set("bit", bit)?;
    Ok(())
}
