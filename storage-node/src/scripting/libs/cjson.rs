//! `cjson`: lua-cjson 2.1 with Redis's defaults. `encode` writes numbers with `%.14g`,
//! escapes `/`, treats a table whose keys are all positive integers as an array (holes become
//! `null`; "excessively sparse" arrays are an error), and other tables as objects; `decode`
//! gives `cjson.null` for null. Errors use lua-cjson's texts.
//!
//! Both directions nest at most 1000 deep, as lua-cjson's defaults allow ("Cannot serialise,
//! excessive nesting (1001)", "Found too many nested data structures (1001) at character
//! N"), and walk the nesting with an explicit stack: a script's table may contain itself,
//! and the thread running it has a small stack.
//!
//! The configuration functions (`encode_sparse_array`, `encode_max_depth`, ...) exist but
//! keep the defaults.

use mlua::{LightUserData, Lua, Table, Value};

use super::{arg_error, format_g, type_name};
use crate::scripting::engine::{error_at_caller, Args};

const MAX_DEPTH: usize = 1000;
const SPARSE_RATIO: usize = 2;
const SPARSE_SAFE: usize = 10;

/// `cjson.null`: a NULL light userdata, as lua-cjson's.
pub fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

pub fn open(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let cjson = lua.create_table()?;
    cjson.set("encode", lua.create_function(encode)?)?;
    cjson.set("decode", lua.create_function(decode)?)?;
    cjson.set("null", null())?;
    cjson.set("_NAME", "cjson")?;
    cjson.set("_VERSION", "2.1.0")?;
    for name in [
        "encode_sparse_array",
        "encode_max_depth",
        "decode_max_depth",
        "encode_number_precision",
        "encode_keep_buffer",
        "encode_invalid_numbers",
        "decode_invalid_numbers",
    ] {
        cjson.set(name, lua.create_function(|_, _: Args| Ok(()))?)?;
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

fn decode(lua: &Lua, args: Args) -> mlua::Result<Value> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "decode", "expected 1 argument"));
    }
    let text = super::check_bytes(lua, &args, 0, "decode")?;
    let mut parser = Parser {
        lua,
        s: &text,
        pos: 0,
        depth: 0,
    };
    let result = (|| {
        let token = parser.next_token()?;
        let value = parser.value(token)?;
        let end = parser.next_token()?;
        if end.kind != Kind::End {
            return Err(parser.expected("the end", &end));
        }
        Ok(value)
    })();
    result.map_err(|e| match e {
        DecodeError::Lua(e) => e,
        DecodeError::Message(m) => error_at_caller(lua, &m),
    })
}

enum DecodeError {
    Message(String),
    Lua(mlua::Error),
}

impl From<mlua::Error> for DecodeError {
    fn from(e: mlua::Error) -> Self {
        DecodeError::Lua(e)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    String,
    Number,
    Boolean,
    Null,
    Colon,
    Comma,
    End,
    Error,
}

struct Token {
    kind: Kind,
    /// Where the token starts (0-based).
    index: usize,
    text: Vec<u8>,
    number: f64,
    boolean: bool,
    error: &'static str,
}

struct Parser<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn token(&self, kind: Kind, index: usize) -> Token {
        Token {
            kind,
            index,
            text: Vec::new(),
            number: 0.0,
            boolean: false,
            error: "",
        }
    }

    fn error_token(&self, index: usize, error: &'static str) -> Token {
        Token {
            error,
            ..self.token(Kind::Error, index)
        }
    }

    fn next_token(&mut self) -> Result<Token, DecodeError> {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = self.s.get(start) else {
            return Ok(self.token(Kind::End, start));
        };
        let single = match c {
            b'{' => Some(Kind::ObjBegin),
            b'}' => Some(Kind::ObjEnd),
            b'[' => Some(Kind::ArrBegin),
            b']' => Some(Kind::ArrEnd),
            b':' => Some(Kind::Colon),
            b',' => Some(Kind::Comma),
            _ => None,
        };
        if let Some(kind) = single {
            self.pos += 1;
            return Ok(self.token(kind, start));
        }
        if c == b'"' {
            return Ok(self.string(start));
        }
        for (word, kind, b) in [
            (&b"true"[..], Kind::Boolean, true),
            (b"false", Kind::Boolean, false),
            (b"null", Kind::Null, false),
        ] {
            if self.s[start..].starts_with(word) {
                self.pos += word.len();
                return Ok(Token {
                    boolean: b,
                    ..self.token(kind, start)
                });
            }
        }
        if c == b'-' || c.is_ascii_digit() || c == b'.' || c.is_ascii_alphabetic() {
            let end = self.s[start..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')))
                .map_or(self.s.len(), |n| start + n);
            // lua-cjson reads numbers with strtod, which also takes `inf` and `nan`.
            let text = String::from_utf8_lossy(&self.s[start..end]).to_ascii_lowercase();
            if let Some(n) = strtod_prefix(&text) {
                self.pos = start + n.1;
                return Ok(Token {
                    number: n.0,
                    ..self.token(Kind::Number, start)
                });
            }
        }
        Ok(self.error_token(start, "invalid token"))
    }

    fn string(&mut self, start: usize) -> Token {
        let mut text = Vec::new();
        let mut i = start + 1;
        loop {
            let Some(&c) = self.s.get(i) else {
                return self.error_token(i, "unexpected end of string");
            };
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(i + 1) else {
                        return self.error_token(i + 1, "unexpected end of string");
                    };
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(8),
                        b'f' => Some(12),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        _ => None,
                    };
                    if let Some(b) = simple {
                        text.push(b);
                        i += 2;
                    } else if e == b'u' {
                        match self.unicode_escape(i) {
                            Some((ch, used)) => {
                                let mut buf = [0u8; 4];
                                text.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                                i += used;
                            }
                            None => return self.error_token(i, "invalid unicode escape code"),
                        }
                    } else {
                        return self.error_token(i, "invalid escape code");
                    }
                }
                _ => {
                    text.push(c);
                    i += 1;
                }
            }
        }
        self.pos = i + 1;
        Token {
            text,
            ..self.token(Kind::String, start)
        }
    }

    /// `\uXXXX` (with a surrogate pair when needed) at `i`; the char and bytes used.
    fn unicode_escape(&self, i: usize) -> Option<(char, usize)> {
        let hex = |at: usize| -> Option<u32> {
            let digits = self.s.get(at..at + 4)?;
            u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
        };
        let high = hex(i + 2)?;
        if (0xD800..0xDC00).contains(&high) {
            if self.s.get(i + 6..i + 8)? != b"\\u" {
                return None;
            }
            let low = hex(i + 8)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(code)?, 12));
        }
        if (0xDC00..0xE000).contains(&high) {
            return None;
        }
        Some((char::from_u32(high)?, 6))
    }

    fn expected(&self, what: &str, found: &Token) -> DecodeError {
        let name = match found.kind {
            Kind::ObjBegin => "T_OBJ_BEGIN",
            Kind::ObjEnd => "T_OBJ_END",
            Kind::ArrBegin => "T_ARR_BEGIN",
            Kind::ArrEnd => "T_ARR_END",
            Kind::String => "T_STRING",
            Kind::Number => "T_NUMBER",
            Kind::Boolean => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error => found.error,
        };
        DecodeError::Message(format!(
            "Expected {what} but found {name} at character {}",
            found.index + 1
        ))
    }

    fn nest(&mut self, token: &Token) -> Result<(), DecodeError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(DecodeError::Message(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth,
                token.index + 1
            )));
        }
        Ok(())
    }

    /// Parses the value `token` starts. Nested arrays and objects are walked with an explicit
    /// stack (bounded by [`MAX_DEPTH`]), never by recursion.
    fn value(&mut self, mut token: Token) -> Result<Value, DecodeError> {
        let mut open: Vec<Container> = Vec::new();
        loop {
            let mut value = match token.kind {
                Kind::String => Value::String(self.lua.create_string(&token.text)?),
                Kind::Number => Value::Number(token.number),
                Kind::Boolean => Value::Boolean(token.boolean),
                Kind::Null => null(),
                Kind::ObjBegin | Kind::ArrBegin => {
                    self.nest(&token)?;
                    let table = self.lua.create_table()?;
                    let first = self.next_token()?;
                    let is_object = token.kind == Kind::ObjBegin;
                    let end = if is_object {
                        Kind::ObjEnd
                    } else {
                        Kind::ArrEnd
                    };
                    if first.kind == end {
                        self.depth -= 1;
                        Value::Table(table)
                    } else if is_object {
                        let key = self.object_key(first)?;
                        open.push(Container::Object { table, key });
                        token = self.next_token()?;
                        continue;
                    } else {
                        open.push(Container::Array { table, next: 1 });
                        token = first;
                        continue;
                    }
                }
                _ => return Err(self.expected("value", &token)),
            };
            // Store the value in its container; close every container that then ends.
            loop {
                let Some(top) = open.last_mut() else {
                    return Ok(value);
                };
                let sep = self.next_token()?;
                match top {
                    Container::Array { table, next } => {
                        table.raw_set(*next, value)?;
                        *next += 1;
                        match sep.kind {
                            Kind::ArrEnd => {}
                            Kind::Comma => {
                                token = self.next_token()?;
                                break;
                            }
                            _ => return Err(self.expected("comma or array end", &sep)),
                        }
                    }
                    Container::Object { table, key } => {
                        table.raw_set(key.clone(), value)?;
                        match sep.kind {
                            Kind::ObjEnd => {}
                            Kind::Comma => {
                                let next = self.next_token()?;
                                *key = self.object_key(next)?;
                                token = self.next_token()?;
                                break;
                            }
                            _ => return Err(self.expected("comma or object end", &sep)),
                        }
                    }
                }
                self.depth -= 1;
                value = match open.pop() {
                    Some(Container::Array { table, .. } | Container::Object { table, .. }) => {
                        Value::Table(table)
                    }
                    None => Value::Nil,
                };
            }
        }
    }

    /// An object's key (`token`) and the colon after it.
    fn object_key(&mut self, token: Token) -> Result<mlua::LuaString, DecodeError> {
        if token.kind != Kind::String {
            return Err(self.expected("object key string", &token));
        }
        let key = self.lua.create_string(&token.text)?;
        let colon = self.next_token()?;
        if colon.kind != Kind::Colon {
            return Err(self.expected("colon", &colon));
        }
        Ok(key)
    }
}

/// An array or object being decoded.
enum Container {
    /// The index of the next element.
    Array { table: Table, next: usize },
    /// The key of the value being parsed.
    Object { table: Table, key: mlua::LuaString },
}

/// The longest prefix of `text` that C's `strtod` reads, and its value.
fn strtod_prefix(text: &str) -> Option<(f64, usize)> {
    for special in ["-infinity", "infinity", "-inf", "inf", "-nan", "nan"] {
        if text.starts_with(special) {
            let v = if special.contains("nan") {
                f64::NAN
            } else if special.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            return Some((v, special.len()));
        }
    }
    // The longest prefix of the form [sign] digits [. digits] [e [sign] digits], found in
    // one pass: trying every prefix from the longest took quadratic time, minutes on a
    // 40 kB argument.
    let bytes = text.as_bytes();
    let digits_from = |i: usize| {
        bytes[i.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut end = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    let whole = digits_from(end);
    end += whole;
    let mut fraction = 0;
    if bytes.get(end) == Some(&b'.') {
        fraction = digits_from(end + 1);
        if whole + fraction > 0 {
            end += 1 + fraction;
        }
    }
    if whole + fraction == 0 {
        return None;
    }
    if bytes.get(end) == Some(&b'e') {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let exponent = digits_from(end + 1 + sign);
        if exponent > 0 {
            end += 1 + sign + exponent;
        }
    }
    text[..end].parse::<f64>().ok().map(|v| (v, end))
}

#[cfg(test)]
mod tests {
    use super::strtod_prefix;

    /// The definition: the longest prefix of number characters that parses.
    fn longest_parsing_prefix(text: &str) -> Option<(f64, usize)> {
        (1..=text.len()).rev().find_map(|end| {
            let candidate = &text[..end];
            let plain = candidate
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e'));
            if !plain {
                return None;
            }
            candidate.parse::<f64>().ok().map(|v| (v, end))
        })
    }

    #[test]
    fn number_prefix_is_the_longest_that_parses() {
        let alphabet = ['1', '0', '+', '-', '.', 'e', 'x'];
        let mut texts = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(longer);
        }
        for text in &texts {
            assert_eq!(
                strtod_prefix(text),
                longest_parsing_prefix(text),
                "{text:?}"
            );
        }
    }
}
