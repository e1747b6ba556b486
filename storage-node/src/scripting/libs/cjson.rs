//! `cjson`: lua-cjson 2.1 with Redis's defaults. `encode` writes numbers with `%.14g`,
//! escapes `/`, treats a table whose keys are all positive integers as an array (holes become
//! `null`; "excessively sparse" arrays are an error), and other tables as objects; `decode`
//! gives `cjson.null` for null. Errors use lua-cjson's texts.
//!
//! Both directions nest at most 1000 deep, as lua-cjson's defaults allow ("Cannot serialise,
//! excessive nesting (1001)", "Found too many nested data structures (1001) at character
//! N"), and walk the nesting with an explicit stack: a script's table may contain itself,
//! and the thread running it has a small stack. Decoding is in `cjson_decode.rs`.
//!
//! The configuration functions (`encode_sparse_array`, `encode_max_depth`, ...) answer the
//! settings as lua-cjson does when called without arguments; changing one is refused with an
//! error rather than accepted and ignored. (In Redis the change would outlive the script and
//! alter every later script's JSON, since the setting lives in the shared interpreter.)

use mlua::{LightUserData, Lua, Table, Value};

use super::{arg_error, format_g, type_name};
use crate::scripting::engine::{error_at_caller, Args};

/// The deepest nesting encoded or decoded (lua-cjson's default).
pub const MAX_DEPTH: usize = 1000;
const SPARSE_RATIO: usize = 2;
const SPARSE_SAFE: usize = 10;

/// lua-cjson's settings and the values they keep here (lua-cjson's defaults).
#[derive(Clone, Copy)]
enum Default {
    Bool(bool),
    Int(i64),
}

const SETTINGS: &[(&str, &[Default])] = &[
    (
        "encode_sparse_array",
        &[Default::Bool(false), Default::Int(2), Default::Int(10)],
    ),
    ("encode_max_depth", &[Default::Int(MAX_DEPTH as i64)]),
    ("decode_max_depth", &[Default::Int(MAX_DEPTH as i64)]),
    ("encode_number_precision", &[Default::Int(14)]),
    ("encode_keep_buffer", &[Default::Bool(true)]),
    ("encode_invalid_numbers", &[Default::Bool(false)]),
    ("decode_invalid_numbers", &[Default::Bool(true)]),
];

/// A setting function: its values without arguments, an error for a change.
fn setting(
    lua: &Lua,
    name: &str,
    defaults: &[Default],
    args: Args,
) -> mlua::Result<mlua::MultiValue> {
    if !args.is_empty() {
        return Err(error_at_caller(
            lua,
            &format!(
                "cjson.{name}: changing lua-cjson's settings is not supported by this server \
                 (the change would outlive the script)"
            ),
        ));
    }
    Ok(defaults
        .iter()
        .map(|d| match d {
            Default::Bool(b) => Value::Boolean(*b),
            Default::Int(n) => Value::Integer(*n),
        })
        .collect())
}

/// `cjson.null`: a NULL light userdata, as lua-cjson's.
pub fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

pub fn open(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let cjson = lua.create_table()?;
    cjson.set("encode", lua.create_function(encode)?)?;
    cjson.set("decode", lua.create_function(super::cjson_decode::decode)?)?;
    cjson.set("null", null())?;
    cjson.set("_NAME", "cjson")?;
    cjson.set("_VERSION", "2.1.0")?;
    for (name, defaults) in SETTINGS {
        cjson.set(
            *name,
            lua.create_function(move |lua, args: Args| setting(lua, name, defaults, args))?,
        )?;
    }
    let same = cjson.clone();
    cjson.set(
        "new",
        lua.create_function(move |_, _: Args| Ok(same.clone()))?,
    )?;
    globals.set("cjson", cjson)?;
    Ok(())
}

fn encode(lua: &Lua, args: Args) -> mlua::Result<mlua::LuaString> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "encode", "expected 1 argument"));
    }
    let mut out = Vec::new();
    encode_value(lua, &args[0], &mut out).map_err(|m| error_at_caller(lua, &m))?;
    lua.create_string(out)
}

/// A table being encoded, and how far.
enum Open {
    Array {
        table: Table,
        next: usize,
        len: usize,
    },
    /// An object's keys are copied in `next` order into a Lua sequence first: one mlua
    /// reference per open table, however many keys it has.
    Object {
        table: Table,
        keys: Table,
        next: usize,
        len: usize,
    },
}

/// Encodes a value. Nested tables are walked with an explicit stack (the nesting is the
/// script's to choose, up to [`MAX_DEPTH`]), never by recursion.
fn encode_value(lua: &Lua, value: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    let lua_error = |e: mlua::Error| e.to_string();
    let mut open: Vec<Open> = Vec::new();
    let mut current = Some(value.clone());
    loop {
        let Some(value) = current.take() else {
            let Some(top) = open.last_mut() else {
                return Ok(());
            };
            match top {
                Open::Array { table, next, len } => {
                    if *next > *len {
                        out.push(b']');
                        open.pop();
                        continue;
                    }
                    if *next > 1 {
                        out.push(b',');
                    }
                    current = Some(table.raw_get(*next).map_err(lua_error)?);
                    *next += 1;
                }
                Open::Object {
                    table,
                    keys,
                    next,
                    len,
                } => {
                    if *next > *len {
                        out.push(b'}');
                        open.pop();
                        continue;
                    }
                    if *next > 1 {
                        out.push(b',');
                    }
                    let key: Value = keys.raw_get(*next).map_err(lua_error)?;
                    *next += 1;
                    encode_key(&key, out)?;
                    out.push(b':');
                    current = Some(table.raw_get(key).map_err(lua_error)?);
                }
            }
            continue;
        };
        match value {
            Value::Nil => out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
            Value::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Value::Number(n) => encode_number(n, out)?,
            Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::String(s) => encode_string(&s.as_bytes(), out),
            Value::Table(table) => {
                let depth = open.len() + 1;
                if depth > MAX_DEPTH {
                    return Err(format!("Cannot serialise, excessive nesting ({depth})"));
                }
                match array_length(&table)? {
                    Some(len) if len > 0 => {
                        out.push(b'[');
                        open.push(Open::Array {
                            table,
                            next: 1,
                            len,
                        });
                    }
                    _ => {
                        out.push(b'{');
                        let keys = lua.create_table().map_err(lua_error)?;
                        let mut len = 0;
                        for pair in table.pairs::<Value, Value>() {
                            let (key, _) = pair.map_err(lua_error)?;
                            len += 1;
                            keys.raw_set(len, key).map_err(lua_error)?;
                        }
                        open.push(Open::Object {
                            table,
                            keys,
                            next: 1,
                            len,
                        });
                    }
                }
            }
            other => {
                return Err(format!(
                    "Cannot serialise {}: type not supported",
                    type_name(Some(&other))
                ))
            }
        }
    }
}

/// An object key: strings as they are, numbers as strings.
fn encode_key(key: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    match key {
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Number(n) => {
            out.push(b'"');
            encode_number(*n, out)?;
            out.push(b'"');
        }
        Value::Integer(n) => {
            out.push(b'"');
            out.extend_from_slice(n.to_string().as_bytes());
            out.push(b'"');
        }
        other => {
            return Err(format!(
                "Cannot serialise {}: table key must be a number or string",
                type_name(Some(other))
            ))
        }
    }
    Ok(())
}

fn encode_number(n: f64, out: &mut Vec<u8>) -> Result<(), String> {
    if !n.is_finite() {
        return Err("Cannot serialise number: must not be NaN or Inf".into());
    }
    out.extend_from_slice(format_g(n, 14).as_bytes());
    Ok(())
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// lua-cjson's `lua_array_length`: the array length if every key is a positive integer,
/// `None` for an object.
fn array_length(t: &Table) -> Result<Option<usize>, String> {
    let mut max = 0usize;
    let mut items = 0usize;
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        match key {
            Value::Number(k) if k >= 1.0 && k.floor() == k => {
                max = max.max(k as usize);
                items += 1;
            }
            Value::Integer(k) if k >= 1 => {
                max = max.max(k as usize);
                items += 1;
            }
            _ => return Ok(None),
        }
    }
    if max > SPARSE_SAFE && max > items * SPARSE_RATIO {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    Ok(Some(max))
}
