//! `cjson.decode`: lua-cjson 2.1's parser, with its error texts. Objects and arrays nest at
//! most [`MAX_DEPTH`] deep ("Found too many nested data structures (1001) at character
//! N") and are walked with an explicit stack, never by recursion.

use mlua::{Lua, Table, Value};

use super::arg_error;
use super::cjson::{null, MAX_DEPTH};
use crate::scripting::engine::{error_at_caller, Args};

/// `cjson.decode(text)`: the Lua value of a JSON text (`cjson.null` for null).
pub fn decode(lua: &Lua, args: Args) -> mlua::Result<Value> {
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
