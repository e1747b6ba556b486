//! `struct`: Roberto Ierusalimschy's struct library as Redis ships it. `pack(fmt, ...)`,
//! `unpack(fmt, s, [pos])` (the values, then the next position) and `size(fmt)`.
//!
//! Format: `<` little endian, `>` big, `=` native (little), `![n]` alignment, `x` a zero
//! byte, `b`/`B` char, `h`/`H` short, `l`/`L` long (8 bytes), `T` size_t, `i`/`I[n]` int of
//! n bytes (default 4), `f` float, `d` double, `s` zero-terminated string, `c[n]` n chars
//! (`c0`: the whole string when packing, the length given by the previous value when
//! unpacking), spaces ignored.

use mlua::{Lua, Table, Value, Variadic};

use super::{arg_error, check_bytes, check_number};
use crate::scripting::engine::{error_at_caller, Args};

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

pub fn open(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let s = lua.create_table()?;
    s.set("pack", lua.create_function(pack)?)?;
    s.set("unpack", lua.create_function(unpack)?)?;
    s.set("size", lua.create_function(size)?)?;
    globals.set("struct", s)?;
    Ok(())
}

struct Header {
    little: bool,
    align: usize,
}

/// One format item: the option letter and its size.
struct Item {
    opt: u8,
    size: usize,
}

struct Format<'a> {
    fmt: &'a [u8],
    pos: usize,
}

impl Format<'_> {
    fn number(&mut self, default: usize) -> usize {
        let start = self.pos;
        while self.fmt.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        if start == self.pos {
            return default;
        }
        std::str::from_utf8(&self.fmt[start..self.pos])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(usize::MAX)
    }

    /// The next item that takes room, after applying header options.
    fn next(&mut self, lua: &Lua, h: &mut Header) -> mlua::Result<Option<Item>> {
        while let Some(&opt) = self.fmt.get(self.pos) {
            self.pos += 1;
            let size = match opt {
                b'b' | b'B' | b'x' => 1,
                b'h' | b'H' => 2,
                b'l' | b'L' | b'T' => 8,
                b'f' => 4,
                b'd' => 8,
                b's' => 0,
                b'c' => self.number(1),
                b'i' | b'I' => {
                    let n = self.number(4);
                    if n > MAXINTSIZE {
                        return Err(error_at_caller(
                            lua,
                            &format!("integral size {n} is larger than limit of {MAXINTSIZE}"),
                        ));
                    }
                    n
                }
                b' ' => continue,
                b'>' => {
                    h.little = false;
                    continue;
                }
                b'<' | b'=' => {
                    h.little = true;
                    continue;
                }
                b'!' => {
                    let a = self.number(MAXALIGN);
                    if !a.is_power_of_two() {
                        return Err(arg_error(lua, 1, "pack", "alignment must be power of 2"));
                    }
                    h.align = a;
                    continue;
                }
                other => {
                    return Err(error_at_caller(
                        lua,
                        &format!("invalid format option '{}'", other as char),
                    ))
                }
            };
            return Ok(Some(Item { opt, size }));
        }
        Ok(None)
    }
}

/// Padding needed before an item at `len`, as the library's `gettoalign`.
fn padding(len: usize, h: &Header, item: &Item) -> usize {
    if matches!(item.opt, b'c' | b's') || item.size <= 1 {
        return 0;
    }
    let align = item.size.min(h.align);
    if align <= 1 {
        return 0;
    }
    (align - (len & (align - 1))) & (align - 1)
}

fn put_int(out: &mut Vec<u8>, value: i128, size: usize, little: bool) {
    let mut bytes: Vec<u8> = (0..size)
        .map(|i| if i < 16 { (value >> (8 * i)) as u8 } else { 0 })
        .collect();
    if !little {
        bytes.reverse();
    }
    out.extend_from_slice(&bytes);
}

fn pack(lua: &Lua, args: Args) -> mlua::Result<mlua::LuaString> {
    let fmt = check_bytes(lua, &args, 0, "pack")?;
    let mut f = Format { fmt: &fmt, pos: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut out = Vec::new();
    let mut arg = 1;
    while let Some(item) = f.next(lua, &mut h)? {
        out.resize(out.len() + padding(out.len(), &h, &item), 0);
        match item.opt {
            b'x' => out.push(0),
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, &args, arg, "pack")?;
                arg += 1;
                put_int(&mut out, n as i64 as i128, item.size, h.little);
            }
            b'f' => {
                let n = check_number(lua, &args, arg, "pack")? as f32;
                arg += 1;
                let mut b = n.to_le_bytes().to_vec();
                if !h.little {
                    b.reverse();
                }
                out.extend_from_slice(&b);
            }
            b'd' => {
                let n = check_number(lua, &args, arg, "pack")?;
                arg += 1;
                let mut b = n.to_le_bytes().to_vec();
                if !h.little {
                    b.reverse();
                }
                out.extend_from_slice(&b);
            }
            b'c' | b's' => {
                let s = check_bytes(lua, &args, arg, "pack")?;
                let mut len = s.len();
                if item.opt == b'c' && item.size != 0 {
                    if s.len() < item.size {
                        return Err(arg_error(lua, arg + 1, "pack", "string too short"));
                    }
                    len = item.size;
                }
                arg += 1;
                out.extend_from_slice(&s[..len]);
                if item.opt == b's' {
                    out.push(0);
                }
            }
            _ => {}
        }
    }
    lua.create_string(out)
}

fn get_int(data: &[u8], little: bool, signed: bool) -> f64 {
    let mut value: u128 = 0;
    let take = data.len().min(16);
    for i in 0..take {
        let b = if little {
            data[take - 1 - i]
        } else {
            data[i + data.len() - take]
        };
        value = (value << 8) | u128::from(b);
    }
    if signed && take > 0 && take < 16 {
        let bits = 8 * take as u32;
        let shifted = (value << (128 - bits)) as i128 >> (128 - bits);
        return shifted as f64;
    }
    value as f64
}

fn unpack(lua: &Lua, args: Args) -> mlua::Result<Variadic<Value>> {
    let fmt = check_bytes(lua, &args, 0, "unpack")?;
    let data = check_bytes(lua, &args, 1, "unpack")?;
    let mut pos = match args.get(2) {
        None | Some(Value::Nil) => 0,
        Some(_) => (check_number(lua, &args, 2, "unpack")? as i64 - 1).max(0) as usize,
    };
    if pos > data.len() {
        return Err(arg_error(lua, 3, "unpack", "offset must be 1 or greater"));
    }
    let mut f = Format { fmt: &fmt, pos: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut values = Variadic::new();
    let short = || arg_error(lua, 2, "unpack", "data string too short");
    while let Some(item) = f.next(lua, &mut h)? {
        pos += padding(pos, &h, &item);
        if pos + item.size > data.len() {
            return Err(short());
        }
        match item.opt {
            b'x' => {}
            b'b' | b'h' | b'l' | b'i' | b'B' | b'H' | b'L' | b'T' | b'I' => {
                let signed = item.opt.is_ascii_lowercase();
                let n = get_int(&data[pos..pos + item.size], h.little, signed);
                values.push(Value::Number(n));
            }
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let n = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                values.push(Value::Number(f64::from(n)));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let n = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                values.push(Value::Number(n));
            }
            b'c' => {
                let mut size = item.size;
                if size == 0 {
                    // The length is the previous value, which is replaced by the string.
                    let Some(Value::Number(n)) = values.pop() else {
                        return Err(error_at_caller(lua, "format 'c0' needs a previous size"));
                    };
                    size = n as usize;
                    if pos + size > data.len() {
                        return Err(short());
                    }
                }
                values.push(Value::String(lua.create_string(&data[pos..pos + size])?));
                pos += size;
                continue;
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(error_at_caller(lua, "unfinished string in data"));
                };
                values.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                pos += end + 1;
                continue;
            }
            _ => {}
        }
        pos += item.size;
    }
    values.push(Value::Number((pos + 1) as f64));
    Ok(values)
}

fn size(lua: &Lua, args: Args) -> mlua::Result<f64> {
    let fmt = check_bytes(lua, &args, 0, "size")?;
    let mut f = Format { fmt: &fmt, pos: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut total = 0usize;
    while let Some(item) = f.next(lua, &mut h)? {
        if item.opt == b's' {
            return Err(arg_error(lua, 1, "size", "option 's' has no fixed size"));
        }
        if item.opt == b'c' && item.size == 0 {
            return Err(arg_error(lua, 1, "size", "option 'c0' has no fixed size"));
        }
        total += padding(total, &h, &item) + item.size;
    }
    Ok(total as f64)
}
