//! The `redis` table, except `call` and `pcall` (see `call.rs`): `log`, `sha1hex`,
//! `error_reply`, `status_reply`, `setresp`, `set_repl`, `replicate_commands`,
//! `breakpoint`, `debug`, `acl_check_cmd` and the constants, with Redis 7.0's errors.

use mlua::{Lua, Table, Value};

use super::engine::{raise, Args};

/// The protocol `redis.call` replies are converted from, chosen with `redis.setresp`.
pub struct ScriptResp(pub u8);

const WRONG_ARGS: &str = "ERR wrong number or type of arguments";

pub fn open(lua: &Lua, globals: &Table) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.set("log", lua.create_function(log)?)?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.set(name, level)?;
    }
    redis.set("sha1hex", lua.create_function(sha1hex)?)?;
    redis.set("error_reply", lua.create_function(error_reply)?)?;
    redis.set("status_reply", lua.create_function(status_reply)?)?;
    redis.set("setresp", lua.create_function(setresp)?)?;
    redis.set("set_repl", lua.create_function(set_repl)?)?;
    for (name, flags) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.set(name, flags)?;
    }
    redis.set(
        "replicate_commands",
        lua.create_function(|_, _: Args| Ok(true))?,
    )?;
    // Without the script debugger these do nothing, as in Redis.
    redis.set("breakpoint", lua.create_function(|_, _: Args| Ok(false))?)?;
    redis.set("debug", lua.create_function(|_, _: Args| Ok(()))?)?;
    redis.set("acl_check_cmd", lua.create_function(acl_check_cmd)?)?;
    redis.set("REDIS_VERSION", "7.0.15")?;
    redis.set("REDIS_VERSION_NUM", 0x07000f)?;
    globals.set("redis", redis.clone())?;
    lua.set_app_data(ScriptResp(2));
    Ok(redis)
}

/// `lua_tolstring`: the bytes of a string or number argument.
pub fn to_bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Number(n) => Some(super::engine::lua_number_text(*n).into_bytes()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        _ => None,
    }
}

/// `lua_tonumber`: a number, or a string that reads as one.
pub fn to_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => Some(*n),
        Value::Integer(n) => Some(*n as f64),
        Value::String(s) => {
            let text = s.to_str().ok()?;
            let text = text.trim();
            if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                return u64::from_str_radix(hex, 16).ok().map(|n| n as f64);
            }
            text.parse::<f64>().ok()
        }
        _ => None,
    }
}

fn log(_lua: &Lua, args: Args) -> mlua::Result<()> {
    if args.len() < 2 {
        return Err(raise("ERR redis.log() requires two arguments or more."));
    }
    let level = match args[0] {
        Value::Number(n) => n,
        Value::Integer(n) => n as f64,
        _ => return Err(raise("ERR First argument must be a number (log level).")),
    };
    if !(0.0..=3.0).contains(&level) {
        return Err(raise("ERR Invalid debug level."));
    }
    let parts: Vec<String> = args[1..]
        .iter()
        .filter_map(to_bytes)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    if let Some(level) = crate::log::Level::from_number(level as u8) {
        crate::log::write(level, format_args!("{}", parts.join(" ")));
    }
    Ok(())
}

fn sha1hex(_lua: &Lua, args: Args) -> mlua::Result<String> {
    if args.len() != 1 {
        return Err(raise("ERR wrong number of arguments"));
    }
    let bytes = to_bytes(&args[0]).unwrap_or_default();
    Ok(super::sha1_hex(&bytes))
}

/// Redis's `luaPushError` text: `-CODE msg` keeps its code, anything else gets `ERR`.
pub fn error_text(raw: &[u8]) -> String {
    let raw = String::from_utf8_lossy(raw);
    let (code, msg) = match raw.strip_prefix('-') {
        Some(rest) => match rest.split_once(' ') {
            Some((code, msg)) => (code.to_string(), msg.to_string()),
            None => ("ERR".to_string(), rest.to_string()),
        },
        None => ("ERR".to_string(), raw.into_owned()),
    };
    let msg = msg.trim_matches(|c| c == '\r' || c == '\n');
    format!("{code} {msg}")
}

fn single_string(args: &Args) -> Option<Vec<u8>> {
    match args.as_slice() {
        [v @ (Value::String(_) | Value::Number(_) | Value::Integer(_))] => to_bytes(v),
        _ => None,
    }
}

fn error_reply(lua: &Lua, args: Args) -> mlua::Result<Table> {
    let text = match single_string(&args) {
        // Redis adds the `-` first, so the first word becomes the code when there are two.
        Some(raw) if raw.starts_with(b"-") => error_text(&raw),
        Some(raw) => error_text(&[b"-", &raw[..]].concat()),
        None => WRONG_ARGS.to_string(),
    };
    lua.create_table_from([("err", text)])
}

fn status_reply(lua: &Lua, args: Args) -> mlua::Result<Table> {
    match single_string(&args) {
        Some(raw) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(raw)?)?;
            Ok(t)
        }
        None => lua.create_table_from([("err", WRONG_ARGS)]),
    }
}

fn setresp(lua: &Lua, args: Args) -> mlua::Result<()> {
    if args.len() != 1 {
        return Err(raise("ERR redis.setresp() requires one argument."));
    }
    match to_number(&args[0]).map(|n| n as i64) {
        Some(resp @ (2 | 3)) => {
            // Changed in place: inserting app data is refused while any of it is borrowed.
            if let Some(mut current) = lua.app_data_mut::<ScriptResp>() {
                current.0 = resp as u8;
            }
            Ok(())
        }
        _ => Err(raise("ERR RESP version must be 2 or 3.")),
    }
}

fn set_repl(_lua: &Lua, args: Args) -> mlua::Result<()> {
    if args.len() != 1 {
        return Err(raise("ERR redis.set_repl() requires two arguments."));
    }
    match to_number(&args[0]).map(|n| n as i64) {
        Some(0..=3) => Ok(()),
        _ => Err(raise(
            "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        )),
    }
}

/// There are no ACL users besides the default one, which may run every command.
fn acl_check_cmd(_lua: &Lua, args: Args) -> mlua::Result<bool> {
    let name = args.first().and_then(to_bytes).unwrap_or_default();
    let known = slotproxy::cluster::CommandTable::get()
        .command(&name.to_ascii_lowercase())
        .is_some();
    if !known {
        return Err(raise("ERR Invalid command passed to redis.acl_check_cmd()"));
    }
    Ok(true)
}
