//! `cmsgpack`: lua-cmsgpack 0.4. `pack(...)` encodes each argument (integral numbers in
//! the smallest integer form, others as float32 when exact, else float64; tables with keys
//! 1..n as arrays, others as maps; nesting deeper than 16 as nil); `unpack(s)` returns every
//! value; `unpack_one(s, [offset])` and `unpack_limit(s, limit, [offset])` return the next
//! offset (-1 at the end) and then the values.

use mlua::{Lua, Table, Value, Variadic};

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

enum Bad {
    Eof,
    Format,
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Bad> {
        let bytes = self.data.get(self.pos..self.pos + n).ok_or(Bad::Eof)?;
        self.pos += n;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, Bad> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }
}

fn decode(lua: &Lua, c: &mut Cursor<'_>) -> Result<mlua::Result<Value>, Bad> {
    let tag = c.take(1)?[0];
    let string = |lua: &Lua, c: &mut Cursor<'_>, len: usize| -> Result<mlua::Result<Value>, Bad> {
        let bytes = c.take(len)?;
        Ok(lua.create_string(bytes).map(Value::String))
    };
    let number = |n: f64| Ok(Ok(Value::Number(n)));
    match tag {
        0x00..=0x7f => number(f64::from(tag)),
        0x80..=0x8f => decode_map(lua, c, usize::from(tag & 0x0f)),
        0x90..=0x9f => decode_array(lua, c, usize::from(tag & 0x0f)),
        0xa0..=0xbf => string(lua, c, usize::from(tag & 0x1f)),
        0xc0 => Ok(Ok(Value::Nil)),
        0xc2 => Ok(Ok(Value::Boolean(false))),
        0xc3 => Ok(Ok(Value::Boolean(true))),
        0xc4 | 0xd9 => {
            let n = c.uint(1)? as usize;
            string(lua, c, n)
        }
        0xc5 | 0xda => {
            let n = c.uint(2)? as usize;
            string(lua, c, n)
        }
        0xc6 | 0xdb => {
            let n = c.uint(4)? as usize;
            string(lua, c, n)
        }
        0xca => number(f64::from(f32::from_bits(c.uint(4)? as u32))),
        0xcb => number(f64::from_bits(c.uint(8)?)),
        0xcc => number(c.uint(1)? as f64),
        0xcd => number(c.uint(2)? as f64),
        0xce => number(c.uint(4)? as f64),
        0xcf => number(c.uint(8)? as f64),
        0xd0 => number(f64::from(c.uint(1)? as u8 as i8)),
        0xd1 => number(f64::from(c.uint(2)? as u16 as i16)),
        0xd2 => number(f64::from(c.uint(4)? as u32 as i32)),
        0xd3 => number(c.uint(8)? as i64 as f64),
        0xdc => {
            let n = c.uint(2)? as usize;
            decode_array(lua, c, n)
        }
        0xdd => {
            let n = c.uint(4)? as usize;
            decode_array(lua, c, n)
        }
        0xde => {
            let n = c.uint(2)? as usize;
            decode_map(lua, c, n)
        }
        0xdf => {
            let n = c.uint(4)? as usize;
            decode_map(lua, c, n)
        }
        0xe0..=0xff => number(f64::from(tag as i8)),
        _ => Err(Bad::Format),
    }
}

fn decode_array(lua: &Lua, c: &mut Cursor<'_>, len: usize) -> Result<mlua::Result<Value>, Bad> {
    let t = match lua.create_table() {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    for i in 1..=len {
        let v = match decode(lua, c)? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if let Err(e) = t.raw_set(i, v) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(Value::Table(t)))
}

fn decode_map(lua: &Lua, c: &mut Cursor<'_>, len: usize) -> Result<mlua::Result<Value>, Bad> {
    let t = match lua.create_table() {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    for _ in 0..len {
        let k = match decode(lua, c)? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let v = match decode(lua, c)? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if !k.is_nil() {
            if let Err(e) = t.raw_set(k, v) {
                return Ok(Err(e));
            }
        }
    }
    Ok(Ok(Value::Table(t)))
}

fn unpack_values(
    lua: &Lua,
    data: &[u8],
    limit: i64,
    offset: i64,
    with_offset: bool,
) -> mlua::Result<Variadic<Value>> {
    if offset < 0 || limit < 0 {
        return Err(error_at_caller(
            lua,
            &format!(
                "Invalid request to unpack with offset of {offset} and limit of {}.",
                data.len()
            ),
        ));
    }
    if offset as usize > data.len() {
        return Err(error_at_caller(
            lua,
            &format!(
                "Start offset {offset} greater than input length {}.",
                data.len()
            ),
        ));
    }
    let limit = if limit == 0 {
        usize::MAX
    } else {
        limit as usize
    };
    let mut cursor = Cursor {
        data,
        pos: offset as usize,
    };
    let mut values = Variadic::new();
    while cursor.pos < data.len() && values.len() < limit {
        match decode(lua, &mut cursor) {
            Ok(v) => values.push(v?),
            Err(Bad::Eof) => return Err(error_at_caller(lua, "Missing bytes in input.")),
            Err(Bad::Format) => return Err(error_at_caller(lua, "Bad data format in input.")),
        }
    }
    if with_offset {
        let next = if cursor.pos >= data.len() {
            -1.0
        } else {
            cursor.pos as f64
        };
        values.insert(0, Value::Number(next));
    }
    Ok(values)
}
