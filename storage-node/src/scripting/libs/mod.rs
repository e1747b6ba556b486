//! The C libraries Redis preloads into Lua, written in Rust with the same behaviour:
//! `bit` (LuaBitOp), `cjson` (lua-cjson), `cmsgpack` (lua-cmsgpack) and `struct`.

pub mod bit;
pub mod cjson;
mod cjson_decode;
pub mod cmsgpack;
mod cmsgpack_decode;
pub mod structlib;

use mlua::{Lua, Value};

pub use slotproxy::resp::format_g;

use super::engine::error_at_caller;
use super::redis_lib::to_number;

/// The Lua type name of a value, as error messages write it.
pub fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Number(_) | Value::Integer(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::LightUserData(_)) | Some(Value::UserData(_)) | Some(Value::Error(_)) => {
            "userdata"
        }
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// `luaL_argerror`: `bad argument #n to 'name' (message)`, at the caller's position.
pub fn arg_error(lua: &Lua, n: usize, name: &str, message: &str) -> mlua::Error {
    error_at_caller(lua, &format!("bad argument #{n} to '{name}' ({message})"))
}

/// `luaL_checknumber` for argument `i` (0-based).
pub fn check_number(lua: &Lua, args: &[Value], i: usize, name: &str) -> mlua::Result<f64> {
    args.get(i).and_then(to_number).ok_or_else(|| {
        arg_error(
            lua,
            i + 1,
            name,
            &format!("number expected, got {}", type_name(args.get(i))),
        )
    })
}

/// `luaL_checklstring` for argument `i` (0-based): strings and numbers.
pub fn check_bytes(lua: &Lua, args: &[Value], i: usize, name: &str) -> mlua::Result<Vec<u8>> {
    args.get(i)
        .and_then(super::redis_lib::to_bytes)
        .ok_or_else(|| {
            arg_error(
                lua,
                i + 1,
                name,
                &format!("string expected, got {}", type_name(args.get(i))),
            )
        })
}
