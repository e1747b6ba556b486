//! Decoding for `cmsgpack.unpack`, `unpack_one` and `unpack_limit`.
//!
//! lua-cmsgpack decodes recursively on the Lua stack and fails cleanly when the stack is
//! full (Lua 5.1 allows C code [`LUA_MAX_C_STACK`] slots): an array holds two slots per
//! level (the table and the index being filled), a map one or two (the table, and the key
//! while its value decodes), every value one, and each decoded top-level value stays on
//! the stack until returned. Input nested past that fails with lua-cmsgpack's
//! `stack overflow (...)` errors at the same point. Here the nesting is walked with an
//! explicit stack of open tables, so hostile input cannot overflow the thread's stack.

use mlua::{Lua, Table, Value, Variadic};

use crate::scripting::engine::error_at_caller;

/// Lua 5.1's `LUAI_MAXCSTACK`: the most stack slots a C function may use.
const LUA_MAX_C_STACK: usize = 8000;
/// The check before every value (`mp_decode_to_lua_type`).
const VALUE_NEEDS_ROOM: &str =
    "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)";
/// The check after an array's table is created (`mp_decode_to_lua_array`).
const ARRAY_NEEDS_ROOM: &str = "stack overflow (in function mp_decode_to_lua_array)";
/// The check before the next offset is pushed (`mp_unpack_full`).
const OFFSET_NEEDS_ROOM: &str = "stack overflow (in function mp_unpack_full)";

enum Bad {
    Eof,
    Format,
    /// The Lua stack lua-cmsgpack works on is full; the message says where.
    Stack(&'static str),
    Lua(mlua::Error),
}

impl From<mlua::Error> for Bad {
    fn from(e: mlua::Error) -> Self {
        Bad::Lua(e)
    }
}

/// A table being filled: its kind, and the elements (or map pairs) still to come.
struct Open {
    kind: Kind,
    left: usize,
}

enum Kind {
    /// The index the next element goes to.
    Array { next: usize },
    /// Whether the key of the next pair has been read (it waits in the stash).
    Map { has_key: bool },
}

/// What one type tag starts: a complete value, or a table whose elements follow.
enum Item {
    Value(Value),
    Table(Table, Open),
}

struct Decoder<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    pos: usize,
    /// Lua stack slots lua-cmsgpack would hold at this point of the input.
    slots: usize,
    /// Where [`Decoder::value`] keeps the outer open tables and pending map keys.
    stash: Table,
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        let end = self.pos.checked_add(n).ok_or(Bad::Eof)?;
        let bytes = self.data.get(self.pos..end).ok_or(Bad::Eof)?;
        self.pos = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, Bad> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn room(&self, slots: usize, message: &'static str) -> Result<(), Bad> {
        if slots > LUA_MAX_C_STACK {
            return Err(Bad::Stack(message));
        }
        Ok(())
    }

    /// Decodes one complete value, leaving its slot taken.
    ///
    /// Only the innermost open table is held as a reference; the outer ones and pending map
    /// keys wait in one Lua table (the stash: the table at depth `d` under `2d - 1`, its
    /// key under `2d`), as mlua's references live on a Lua stack of their own, limited
    /// like any other.
    fn value(&mut self) -> Result<Value, Bad> {
        let mut open: Vec<Open> = Vec::new();
        let mut top: Option<Table> = None;
        let stash = self.stash.clone();
        loop {
            if let Some(Open {
                kind: Kind::Array { .. },
                ..
            }) = open.last()
            {
                // The index an element is stored under.
                self.slots += 1;
            }
            let mut value = match self.item()? {
                Item::Value(v) => v,
                Item::Table(table, state) if state.left == 0 => Value::Table(table),
                Item::Table(table, state) => {
                    if let Some(outer) = top.replace(table) {
                        stash.raw_set(open.len() * 2 - 1, outer)?;
                    }
                    open.push(state);
                    continue;
                }
            };
            // Store the value in its table, and every table that is then complete in its own.
            loop {
                let depth = open.len();
                let (Some(state), Some(table)) = (open.last_mut(), top.as_ref()) else {
                    return Ok(value);
                };
                match &mut state.kind {
                    Kind::Array { next } => {
                        table.raw_set(*next, value)?;
                        *next += 1;
                    }
                    Kind::Map { has_key } => {
                        if !*has_key {
                            *has_key = true;
                            stash.raw_set(depth * 2, value)?;
                            break;
                        }
                        *has_key = false;
                        let key: Value = stash.raw_get(depth * 2)?;
                        stash.raw_set(depth * 2, Value::Nil)?;
                        if !key.is_nil() {
                            table.raw_set(key, value)?;
                        }
                    }
                }
                state.left -= 1;
                self.slots -= 2;
                if state.left > 0 {
                    break;
                }
                open.pop();
                value = top.take().map_or(Value::Nil, Value::Table);
                if !open.is_empty() {
                    let index = open.len() * 2 - 1;
                    top = Some(stash.raw_get(index)?);
                    stash.raw_set(index, Value::Nil)?;
                }
            }
        }
    }

    /// Reads one type tag and what follows it, up to a table's elements.
    fn item(&mut self) -> Result<Item, Bad> {
        if self.pos >= self.data.len() {
            return Err(Bad::Eof);
        }
        self.room(self.slots + 1, VALUE_NEEDS_ROOM)?;
        let tag = self.take(1)?[0];
        let number = |n: f64| Ok(Item::Value(Value::Number(n)));
        let item = match tag {
            0x00..=0x7f => number(f64::from(tag)),
            0x80..=0x8f => self.map(usize::from(tag & 0x0f)),
            0x90..=0x9f => self.array(usize::from(tag & 0x0f)),
            0xa0..=0xbf => self.string(usize::from(tag & 0x1f)),
            0xc0 => Ok(Item::Value(Value::Nil)),
            0xc2 => Ok(Item::Value(Value::Boolean(false))),
            0xc3 => Ok(Item::Value(Value::Boolean(true))),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(n)
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                self.string(n)
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                self.string(n)
            }
            0xca => number(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => number(f64::from_bits(self.uint(8)?)),
            0xcc => number(self.uint(1)? as f64),
            0xcd => number(self.uint(2)? as f64),
            0xce => number(self.uint(4)? as f64),
            0xcf => number(self.uint(8)? as f64),
            0xd0 => number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => number(self.uint(8)? as i64 as f64),
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(n)
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(n)
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(n)
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(n)
            }
            0xe0..=0xff => number(f64::from(tag as i8)),
            _ => Err(Bad::Format),
        }?;
        self.slots += 1;
        Ok(item)
    }

    fn string(&mut self, len: usize) -> Result<Item, Bad> {
        let bytes = self.take(len)?;
        Ok(Item::Value(Value::String(self.lua.create_string(bytes)?)))
    }

    fn array(&mut self, len: usize) -> Result<Item, Bad> {
        // The table's own slot is counted by `item`; lua-cmsgpack checks for one more.
        self.room(self.slots + 2, ARRAY_NEEDS_ROOM)?;
        let state = Open {
            kind: Kind::Array { next: 1 },
            left: len,
        };
        Ok(Item::Table(self.lua.create_table()?, state))
    }

    fn map(&mut self, len: usize) -> Result<Item, Bad> {
        let state = Open {
            kind: Kind::Map { has_key: false },
            left: len,
        };
        Ok(Item::Table(self.lua.create_table()?, state))
    }
}

/// The values of `data` from `offset` on, at most `limit` of them (0: all), preceded by
/// the next offset (-1 at the end) when `with_offset`.
pub fn unpack_values(
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
    let mut decoder = Decoder {
        lua,
        data,
        pos: offset as usize,
        // The input string, the only argument left on the stack.
        slots: 1,
        stash: lua.create_table()?,
    };
    let mut values = Variadic::new();
    let fail = |bad: Bad| match bad {
        Bad::Eof => error_at_caller(lua, "Missing bytes in input."),
        Bad::Format => error_at_caller(lua, "Bad data format in input."),
        Bad::Stack(message) => error_at_caller(lua, message),
        Bad::Lua(e) => e,
    };
    while decoder.pos < data.len() && values.len() < limit {
        values.push(decoder.value().map_err(fail)?);
    }
    if with_offset {
        decoder
            .room(decoder.slots + 1, OFFSET_NEEDS_ROOM)
            .map_err(fail)?;
        let next = if decoder.pos >= data.len() {
            -1.0
        } else {
            decoder.pos as f64
        };
        values.insert(0, Value::Number(next));
    }
    Ok(values)
}
