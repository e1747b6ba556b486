//! `cmsgpack`: lua-cmsgpack 0.4. `pack(...)` encodes each argument (integral numbers in
//! the smallest integer form, others as float32 when exact, else float64; tables with keys
//! 1..n as arrays, others as maps; nesting deeper than 16 as nil); `unpack(s)` returns every
//! value; `unpack_one(s, [offset])` and `unpack_limit(s, limit, [offset])` return the next
//! offset (-1 at the end) and then the values.

use mlua::{Lua, Table, Value};

use super::cmsgpack_decode::unpack_values;
use super::{check_bytes, check_number};
use crate::scripting::engine::{error_at_caller, Args};

const MAX_NESTING: usize = 16;

pub fn open(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let m = lua.create_table()?;
    m.set("pack", lua.create_function(pack)?)?;
    m.set(
        "unpack",
        lua.create_function(|lua, args: Args| {
            let data = check_bytes(lua, &args, 0, "unpack")?;
            unpack_values(lua, &data, 0, 0, false)
        })?,
    )?;
    m.set(
        "unpack_one",
        lua.create_function(|lua, args: Args| {
            let data = check_bytes(lua, &args, 0, "unpack_one")?;
            let offset = optional_int(lua, &args, 1, "unpack_one")?;
            unpack_values(lua, &data, 1, offset, true)
        })?,
    )?;
    m.set(
        "unpack_limit",
        lua.create_function(|lua, args: Args| {
            let data = check_bytes(lua, &args, 0, "unpack_limit")?;
            let limit = optional_int(lua, &args, 1, "unpack_limit")?;
            let offset = optional_int(lua, &args, 2, "unpack_limit")?;
            unpack_values(lua, &data, limit, offset, true)
        })?,
    )?;
    m.set("_NAME", "cmsgpack")?;
    m.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    m.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    m.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    globals.set("cmsgpack", m)?;
    Ok(())
}

fn optional_int(lua: &Lua, args: &[Value], i: usize, name: &str) -> mlua::Result<i64> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(0),
        Some(_) => check_number(lua, args, i, name).map(|n| n as i64),
    }
}

fn pack(lua: &Lua, args: Args) -> mlua::Result<mlua::LuaString> {
    if args.is_empty() {
        return Err(error_at_caller(lua, "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for value in args.iter() {
        encode(value, 0, &mut out)?;
    }
    lua.create_string(out)
}

fn encode(value: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match value {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Number(n) => encode_number(*n, out),
        Value::Integer(n) => encode_int(*n, out),
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Table(t) if level < MAX_NESTING => encode_table(t, level + 1, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    if n.is_finite() && (n as i64) as f64 == n {
        encode_int(n as i64, out);
    } else if (n as f32) as f64 == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -(1 << 31) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn encode_table(t: &Table, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    let pairs: Vec<(Value, Value)> = t.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
    let mut max = 0f64;
    let is_array = pairs.iter().all(|(k, _)| match k {
        Value::Number(n) if *n > 0.0 && n.floor() == *n => {
            max = max.max(*n);
            true
        }
        Value::Integer(n) if *n > 0 => {
            max = max.max(*n as f64);
            true
        }
        _ => false,
    }) && max as usize == pairs.len();
    let len = pairs.len();
    let header = |out: &mut Vec<u8>, fix: u8, b16: u8, b32: u8, small: usize| {
        if len <= small {
            out.push(fix | len as u8);
        } else if len <= 0xffff {
            out.push(b16);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(b32);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    };
    if is_array {
        header(out, 0x90, 0xdc, 0xdd, 15);
        for i in 1..=len {
            encode(&t.raw_get::<Value>(i)?, level, out)?;
        }
    } else {
        header(out, 0x80, 0xde, 0xdf, 15);
        for (k, v) in &pairs {
            encode(k, level, out)?;
            encode(v, level, out)?;
        }
    }
    Ok(())
}
