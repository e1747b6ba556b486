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

/// Deepest reply converted. Command replies nest a few levels; the frame comes from
/// `parse_frame`, which bounds nesting itself, and the walk recurses, so it checks again.
const MAX_REPLY_DEPTH: usize = 512;

pub fn frame_to_lua(lua: &Lua, frame: &Frame, resp3: bool) -> mlua::Result<Value> {
    nested_frame_to_lua(lua, frame, resp3, 0)
}

fn nested_frame_to_lua(lua: &Lua, frame: &Frame, resp3: bool, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_REPLY_DEPTH {
        return Err(super::engine::raise(STACK_LIMIT_ERROR));
    }
    let frame_to_lua = |lua, frame, resp3| nested_frame_to_lua(lua, frame, resp3, depth + 1);
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

/// Lua 5.1's `LUAI_MAXCSTACK`: the most stack slots C code may hold at once. Redis
/// converts a script's result with the Lua C API, each nested value holding a few slots, and
/// answers `reached lua stack limit` in place of a value it has no room for; the same count
/// is kept here, so the walk is bounded and its output matches Redis byte for byte.
const LUA_MAX_C_STACK: usize = 8000;
/// Slots in use when the conversion starts: the error handler and the result.
const SLOTS_AT_TOP: usize = 2;
/// Slots Redis makes sure of before converting one value (a map needs four).
const SLOTS_PER_VALUE: usize = 4;
/// Extra slots a nested value is converted with: below an array the element; below a map
/// the map table, the iteration key and value and the key's copy (the key) or not (the
/// value); below a set the set table, the key and its copy.
const ARRAY_ITEM_SLOTS: usize = 1;
const MAP_KEY_SLOTS: usize = 4;
const MAP_VALUE_SLOTS: usize = 3;
const SET_MEMBER_SLOTS: usize = 3;

const STACK_LIMIT_ERROR: &str = "ERR reached lua stack limit";

/// Writes a script's result, or returns the error text of an error table (the command
/// then fails with it). `resp3` is the script's `redis.setresp` choice.
pub fn write_result(
    lua: &Lua,
    out: &mut ReplyBuf<'_>,
    value: &Value,
    resp3: bool,
) -> Result<(), String> {
    if let Some(text) = error_field(value) {
        return Err(text);
    }
    write_lua_value(lua, out, value, resp3);
    Ok(())
}

/// What is left to write of one aggregate. Values are read one at a time rather than
/// collected: mlua keeps each reference Rust holds on a Lua stack of its own, limited like
/// any Lua stack, and a reply of thousands of strings came out cut short.
struct Pending {
    /// An array's table, or a map's or set's keys in iteration order (a Lua sequence);
    /// `None` while in the [`Stash`].
    items: Option<Table>,
    /// A map's table, to read each key's value from.
    map: Option<Table>,
    /// The map's table is in the [`Stash`].
    map_stashed: bool,
    next: usize,
    len: usize,
    /// A map's value is next rather than its next key.
    value_next: bool,
    /// The Lua stack slots the aggregate's values are converted with.
    item_slots: usize,
    value_slots: usize,
}

impl Pending {
    fn next(&mut self) -> Option<(Value, usize)> {
        let items = self.items.as_ref()?;
        if let (true, Some(map)) = (self.value_next, &self.map) {
            self.value_next = false;
            let key = items.raw_get::<Value>(self.next - 1).unwrap_or(Value::Nil);
            let value = map.raw_get::<Value>(key).unwrap_or(Value::Nil);
            return Some((value, self.value_slots));
        }
        if self.next > self.len {
            return None;
        }
        let item = items.raw_get::<Value>(self.next).unwrap_or(Value::Nil);
        self.next += 1;
        self.value_next = self.map.is_some();
        Some((item, self.item_slots))
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
///
/// Nested tables are walked with an explicit stack, never by recursion: a script controls
/// the nesting (a table may even contain itself), and the walk is bounded by the Lua stack
/// count Redis keeps ([`LUA_MAX_C_STACK`]).
pub fn write_lua_value(lua: &Lua, out: &mut ReplyBuf<'_>, value: &Value, resp3: bool) {
    let mut open: Vec<Pending> = Vec::new();
    let mut stash = Stash::default();
    let mut current = Some((value.clone(), SLOTS_AT_TOP));
    loop {
        let Some((value, slots)) = current.take() else {
            let Some(top) = open.last_mut() else {
                return;
            };
            current = top.next();
            if current.is_none() {
                open.pop();
                let depth = open.len();
                if let Some(outer) = open.last_mut() {
                    stash.restore(outer, depth);
                }
            }
            continue;
        };
        if slots + SLOTS_PER_VALUE > LUA_MAX_C_STACK {
            out.error(STACK_LIMIT_ERROR);
            continue;
        }
        match value {
            Value::String(s) => out.bulk(&s.as_bytes()),
            Value::Number(n) => out.integer(number_to_integer(n)),
            Value::Integer(n) => out.integer(n),
            Value::Boolean(b) => {
                if resp3 {
                    out.boolean(b)
                } else if b {
                    out.integer(1)
                } else {
                    out.null()
                }
            }
            Value::Table(t) => {
                if let Some(pending) = write_table_head(lua, out, t, slots) {
                    let depth = open.len();
                    if let Some(outer) = open.last_mut() {
                        stash.keep(lua, outer, depth);
                    }
                    open.push(pending);
                }
            }
            _ => out.null(),
        }
    }
}

/// The tables of the aggregates being written, except the innermost one's: kept in one Lua
/// table (depth `d`'s items under `2d - 1`, its map under `2d`) rather than as one mlua
/// reference each, which a reply nested thousands deep would run out of.
#[derive(Default)]
struct Stash(Option<Table>);

impl Stash {
    fn keep(&mut self, lua: &Lua, pending: &mut Pending, depth: usize) {
        if self.0.is_none() {
            self.0 = lua.create_table().ok();
        }
        let Some(stash) = &self.0 else {
            // No table to keep them in: hold the references instead.
            return;
        };
        if let Some(items) = &pending.items {
            if stash.raw_set(depth * 2 - 1, items).is_ok() {
                pending.items = None;
            }
        }
        if let Some(map) = &pending.map {
            if stash.raw_set(depth * 2, map).is_ok() {
                pending.map = None;
                pending.map_stashed = true;
            }
        }
    }

    fn restore(&mut self, pending: &mut Pending, depth: usize) {
        let Some(stash) = &self.0 else { return };
        if pending.items.is_none() {
            pending.items = stash.raw_get(depth * 2 - 1).ok();
            let _ = stash.raw_set(depth * 2 - 1, Value::Nil);
        }
        if pending.map_stashed {
            pending.map = stash.raw_get(depth * 2).ok();
            pending.map_stashed = false;
            let _ = stash.raw_set(depth * 2, Value::Nil);
        }
    }
}

/// Writes a table that is a single reply (error, status, double, big number), or the
/// header of an aggregate and returns what remains to write of it.
fn write_table_head(lua: &Lua, out: &mut ReplyBuf<'_>, t: Table, slots: usize) -> Option<Pending> {
    if let Value::String(e) = field(&t, "err") {
        out.error_bytes(&e.as_bytes());
        return None;
    }
    if let Value::String(s) = field(&t, "ok") {
        out.simple_bytes(&sanitize(&s.as_bytes()));
        return None;
    }
    match field(&t, "double") {
        Value::Number(d) => {
            out.double(d);
            return None;
        }
        Value::Integer(d) => {
            out.double(d as f64);
            return None;
        }
        _ => {}
    }
    if let Value::String(s) = field(&t, "big_number") {
        out.big_number(&sanitize(&s.as_bytes()));
        return None;
    }
    let (items, map, len, item_slots, value_slots) = if let Value::Table(map) = field(&t, "map") {
        let (keys, len) = keys_in_order(lua, &map);
        out.map(len);
        (
            keys,
            Some(map),
            len,
            slots + MAP_KEY_SLOTS,
            slots + MAP_VALUE_SLOTS,
        )
    } else if let Value::Table(set) = field(&t, "set") {
        let (keys, len) = keys_in_order(lua, &set);
        out.set(len);
        (keys, None, len, slots + SET_MEMBER_SLOTS, 0)
    } else {
        // An array runs up to the first nil.
        let mut len = 0;
        while !matches!(t.raw_get::<Value>(len + 1), Ok(Value::Nil) | Err(_)) {
            len += 1;
        }
        out.array(len);
        (t, None, len, slots + ARRAY_ITEM_SLOTS, 0)
    };
    Some(Pending {
        items: Some(items),
        map,
        map_stashed: false,
        next: 1,
        len,
        value_next: false,
        item_slots,
        value_slots,
    })
}

/// A table's keys in `next` order, as a Lua sequence, and their number.
fn keys_in_order(lua: &Lua, table: &Table) -> (Table, usize) {
    let Ok(keys) = lua.create_table() else {
        return (table.clone(), 0);
    };
    let mut len = 0;
    for key in table
        .pairs::<Value, Value>()
        .filter_map(|p| p.ok().map(|(k, _)| k))
    {
        if keys.raw_set(len + 1, key).is_ok() {
            len += 1;
        }
    }
    (keys, len)
}

/// Status and big-number texts cannot hold line breaks; Redis turns them into spaces.
fn sanitize(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}
