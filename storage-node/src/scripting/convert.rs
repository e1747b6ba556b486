//! Conversions between Redis replies and Lua values, as Redis 7.0 makes them.
//!
//! Reply → Lua (`redis.call`): integer → number, bulk → string, null → false (RESP2) or nil
//! (RESP3), array → table, status → `{ok=}`, error → `{err=}`; with `redis.setresp(3)`:
//! map → `{map={...}}`, set → `{set={member=true}}`, double → `{double=n}`, big number →
//! `{big_number=s}`, boolean → boolean, verbatim → `{verbatim_string={format=, string=}}`.
//!
//! Lua → reply (the script's result): number → integer (truncated), string → bulk, boolean
//! → 1 / nil (or a RESP3 boolean after `setresp(3)`), table with `err` → error, `ok` →
//! status, `double`, `big_number`, `map`, `set`, else array up to the first nil; anything
//! else → nil.

use mlua::{Lua, Table, Value};
use slotproxy::resp::{Frame, ReplyBuf};

use super::engine::lua_bytes;

pub fn frame_to_lua(lua: &Lua, frame: &Frame, resp3: bool) -> mlua::Result<Value> {
    let bytes = |b: &[u8]| -> mlua::Result<Value> { Ok(Value::String(lua.create_string(b)?)) };
    // One call into Lua per table: each call has a fixed cost (mlua's lock and stack checks).
    let tagged = |tag: &str, value: Value| -> mlua::Result<Value> {
        Ok(Value::Table(lua.create_table_from([(tag, value)])?))
    };
    Ok(match frame {
        Frame::Integer(n) => Value::Number(*n as f64),
        Frame::Bulk(b) => bytes(b)?,
        Frame::Null | Frame::NullArray => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Frame::Simple(s) => Value::Table(lua.create_table_from([("ok", lua_bytes(s))])?),
        Frame::Error(e) | Frame::BlobError(e) => {
            Value::Table(lua.create_table_from([("err", lua_bytes(e))])?)
        }
        Frame::Array(items) | Frame::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                // Strings and numbers go straight into the table: made into a `Value`
                // first, each string would be a reference taken and dropped again.
                match item {
                    Frame::Bulk(b) => t.raw_set(i + 1, lua_bytes(b))?,
                    Frame::Integer(n) => t.raw_set(i + 1, *n as f64)?,
                    other => t.raw_set(i + 1, frame_to_lua(lua, other, resp3)?)?,
                }
            }
            Value::Table(t)
        }
        Frame::Map(pairs) => {
            let t = lua.create_table()?;
            for (k, v) in pairs {
                t.raw_set(frame_to_lua(lua, k, resp3)?, frame_to_lua(lua, v, resp3)?)?;
            }
            tagged("map", Value::Table(t))?
        }
        Frame::Set(items) => {
            let t = lua.create_table()?;
            for item in items {
                t.raw_set(frame_to_lua(lua, item, resp3)?, true)?;
            }
            tagged("set", Value::Table(t))?
        }
        Frame::Double(d) => tagged("double", Value::Number(*d))?,
        Frame::Boolean(b) => Value::Boolean(*b),
        Frame::BigNumber(n) => tagged("big_number", bytes(n)?)?,
        Frame::Verbatim { format, text } => {
            let inner = lua.create_table()?;
            inner.raw_set("format", lua.create_string(format)?)?;
            inner.raw_set("string", lua.create_string(text)?)?;
            tagged("verbatim_string", Value::Table(inner))?
        }
    })
}

/// A field of a table, read raw, if it has the given Lua type.
fn field(t: &Table, key: &str) -> Value {
    t.raw_get::<Value>(key).unwrap_or(Value::Nil)
}

/// The error text of a table with a string `err` field.
pub fn error_field(value: &Value) -> Option<String> {
    match value {
        Value::Table(t) => match field(t, "err") {
            Value::String(s) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// Writes a script's result, or returns the error text of an error table (the command
/// then fails with it). `resp3` is the script's `redis.setresp` choice.
pub fn write_result(out: &mut ReplyBuf<'_>, value: &Value, resp3: bool) -> Result<(), String> {
    let Value::Table(t) = value else {
        write_lua_value(out, value, resp3);
        return Ok(());
    };
    match field(t, "err") {
        Value::String(e) => Err(String::from_utf8_lossy(&e.as_bytes()).into_owned()),
        err => {
            write_fields(out, t, err, resp3);
            Ok(())
        }
    }
}

/// A Lua number as Redis replies with it: the C cast `(long long)` on x86-64, which
/// truncates toward zero and turns NaN and anything outside `i64` into `i64::MIN` (Rust's
/// `as` would saturate `inf` to `i64::MAX` and NaN to 0).
fn number_to_integer(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Writes a script's result. `resp3` is the script's `redis.setresp` choice.
pub fn write_lua_value(out: &mut ReplyBuf<'_>, value: &Value, resp3: bool) {
    match value {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Number(n) => out.integer(number_to_integer(*n)),
        Value::Integer(n) => out.integer(*n),
        Value::Boolean(b) => {
            if resp3 {
                out.boolean(*b)
            } else if *b {
                out.integer(1)
            } else {
                out.null()
            }
        }
        Value::Table(t) => write_table(out, t, resp3),
        _ => out.null(),
    }
}

fn write_table(out: &mut ReplyBuf<'_>, t: &Table, resp3: bool) {
    write_fields(out, t, field(t, "err"), resp3);
}

/// [`write_table`] with its `err` field already read.
fn write_fields(out: &mut ReplyBuf<'_>, t: &Table, err: Value, resp3: bool) {
    if let Value::String(e) = err {
        out.error_bytes(&e.as_bytes());
        return;
    }
    if let Value::String(s) = field(t, "ok") {
        out.simple_bytes(&sanitize(&s.as_bytes()));
        return;
    }
    match field(t, "double") {
        Value::Number(d) => return out.double(d),
        Value::Integer(d) => return out.double(d as f64),
        _ => {}
    }
    if let Value::String(s) = field(t, "big_number") {
        out.big_number(&sanitize(&s.as_bytes()));
        return;
    }
    if let Value::Table(map) = field(t, "map") {
        let pairs: Vec<(Value, Value)> =
            map.pairs::<Value, Value>().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write_lua_value(out, k, resp3);
            write_lua_value(out, v, resp3);
        }
        return;
    }
    if let Value::Table(set) = field(t, "set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .filter_map(|p| p.ok().map(|(k, _)| k))
            .collect();
        out.set(members.len());
        for m in &members {
            write_lua_value(out, m, resp3);
        }
        return;
    }
    let mut items = Vec::new();
    loop {
        match t.raw_get::<Value>(items.len() + 1) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for item in &items {
        write_lua_value(out, item, resp3);
    }
}

/// Status and big-number texts cannot hold line breaks; Redis turns them into spaces.
fn sanitize(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}
