//! One Lua interpreter set up as Redis 7.0 sets up its own: the libraries it loads, the
//! globals it removes, readonly globals and library tables, the `redis` table, and the
//! error handler. EVAL scripts and function libraries each get an interpreter, as in Redis,
//! and each thread that runs scripts its own pair (see `scripts.rs`, `functions.rs`).

use std::sync::Arc;

use bstr::BStr;
use bytes::Bytes;

use mlua::{
    chunk::ChunkMode, Either, Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value,
    Variadic, VmState,
};

use super::busy::{ScriptState, KILLED};
use super::call::CallSlot;
use super::{libs, redis_lib};

/// Bytes one interpreter may allocate (all its scripts together). Redis sets no limit; the
/// node bounds script memory so a runaway script fails with an error instead of taking the
/// node's memory. Not a setting: CONFIG must only offer Redis 7.0's settings.
///
/// The limit is armed only while Lua code runs or compiles ([`Engine::limited`]): with a
/// limit set, mlua runs every API call that may allocate (creating a string or table,
/// setting a field) inside its own `lua_pcall` with two freshly allocated C closures, which
/// made that bookkeeping most of an EVAL's cost. The Rust side (KEYS/ARGV, `redis.call`
/// and its reply, the script's result) allocates little and works unlimited, as Redis's C
/// code does; the memory it takes still counts, so the script's next allocation fails once
/// the interpreter is past the limit.
pub const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// Instructions between two runs of the count hook (Redis uses the same period).
const HOOK_PERIOD: u32 = 100_000;

/// redis.call outside a script run (while a function library loads).
const NO_CALLS: &str = "ERR redis.call is not allowed here";

/// Chunk name of the engine's own Lua code; the error handler skips its frames.
pub const INTERNAL_CHUNK: &str = "=redis_internal";

/// Globals a Redis 7.0 script sees (besides KEYS and ARGV); everything else is removed.
const KEPT_GLOBALS: &[&str] = &[
    "_G",
    "_VERSION",
    "__redis__err__handler",
    "assert",
    "bit",
    "cjson",
    "cmsgpack",
    "collectgarbage",
    "coroutine",
    "error",
    "gcinfo",
    "getmetatable",
    "ipairs",
    "load",
    "loadstring",
    "math",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawset",
    "redis",
    "select",
    "setmetatable",
    "string",
    "struct",
    "table",
    "tonumber",
    "tostring",
    "type",
    "unpack",
    "xpcall",
];

/// Library tables scripts may read but not change.
const PROTECTED_TABLES: &[&str] = &[
    "bit",
    "cjson",
    "cmsgpack",
    "coroutine",
    "math",
    "redis",
    "string",
    "struct",
    "table",
];

/// An error raised from Rust that scripts see as Redis's error table `{err = text}`; `text`
/// carries its code (`ERR ...`).
#[derive(Debug)]
pub struct ErrorReply(pub String);

impl std::fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ErrorReply {}

/// Raises `{err = text}` from a Rust function called by a script.
pub fn raise(text: impl Into<String>) -> mlua::Error {
    mlua::Error::external(ErrorReply(text.into()))
}

/// A Lua runtime error with the position of the Lua code calling the running Rust function,
/// as C libraries' `luaL_error` reports it (`user_script:1: message`).
pub fn error_at_caller(lua: &Lua, message: &str) -> mlua::Error {
    let place = lua
        .inspect_stack(1, |d| {
            let line = d.current_line()?;
            let src = d.source().short_src?.into_owned();
            Some(format!("{src}:{line}: "))
        })
        .flatten()
        .unwrap_or_default();
    mlua::Error::RuntimeError(format!("{place}{message}"))
}

/// Why a script stopped with an error: the error text and where it happened.
pub struct ScriptError {
    pub message: String,
    pub place: Option<(String, String)>,
}

pub struct Engine {
    pub lua: Lua,
    /// The readonly globals scripts run with.
    pub globals: Table,
    /// The table behind them (KEYS and ARGV are set here).
    pub real_globals: Table,
    /// The real `redis` table (functions add `register_function` to it).
    pub redis: Table,
    runner: Function,
}

impl Engine {
    pub fn new(state: Arc<ScriptState>) -> mlua::Result<Engine> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )?;
        let real_globals = lua.globals();
        for lib in [
            libs::bit::open,
            libs::cjson::open,
            libs::cmsgpack::open,
            libs::structlib::open,
        ] {
            lib(&lua, &real_globals)?;
        }
        let redis = redis_lib::open(&lua, &real_globals)?;
        super::rand48::install(&lua, &real_globals)?;
        let handler = lua.create_function(error_handler)?;
        let text_of = lua.create_function(|_, err: Value| {
            Ok(match err {
                Value::Error(e) => match e.downcast_ref::<ErrorReply>() {
                    Some(reply) => reply.0.clone(),
                    None => innermost_message(&e),
                },
                _ => String::new(),
            })
        })?;
        let (globals, runner): (Table, Function) = lua
            .load(include_str!("glue.lua"))
            .set_name(INTERNAL_CHUNK)
            .call((
                real_globals.clone(),
                handler,
                PROTECTED_TABLES.to_vec(),
                text_of,
            ))?;
        // Only now: the glue above captured some of what goes (setfenv, the raw pcall).
        let names: Vec<String> = real_globals
            .pairs::<String, Value>()
            .filter_map(|pair| pair.ok().map(|(k, _)| k))
            .collect();
        for name in names {
            if !KEPT_GLOBALS.contains(&name.as_str()) {
                real_globals.raw_set(name, Value::Nil)?;
            }
        }
        // Registered once: the running command's environment is app data (see `call.rs`).
        lua.set_app_data(CallSlot::default());
        for (name, raising) in [("call", true), ("pcall", false)] {
            let f = lua.create_function(move |lua, args: Variadic<Value>| {
                let (reply, failed) = unlimited(lua, || {
                    let mut slot = lua
                        .app_data_mut::<CallSlot>()
                        .ok_or_else(|| raise(NO_CALLS))?;
                    slot.call(lua, raising, &args)
                        .ok_or_else(|| raise(NO_CALLS))?
                })?;
                if failed {
                    let text = super::convert::error_field(&reply).unwrap_or_default();
                    return Err(raise(text));
                }
                Ok(reply)
            })?;
            redis.raw_set(name, f)?;
        }
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_PERIOD),
            move |_lua, _debug| {
                if state.kill_requested() {
                    crate::log::warning!("Lua script killed by user with SCRIPT KILL.");
                    return Err(raise(KILLED));
                }
                state.report_if_slow();
                state.offload_if_long();
                Ok(VmState::Continue)
            },
        )?;
        Ok(Engine {
            lua,
            globals,
            real_globals,
            redis,
            runner,
        })
    }

    /// Compiles source code into a function running with the readonly globals. The error
    /// is Lua's message (`user_script:1: ...`).
    pub fn compile(&self, source: &[u8], chunk_name: &str) -> Result<Function, String> {
        self.limited(|| {
            self.lua
                .load(source)
                .set_name(chunk_name)
                .set_mode(ChunkMode::Text)
                .set_environment(self.globals.clone())
                .into_function()
        })
        .map_err(|e| match e {
            mlua::Error::SyntaxError { message, .. } => message,
            other => other.to_string(),
        })
    }

    /// Runs a compiled script (`function` false: an EVAL body, which sees `keys` and `argv`
    /// as KEYS and ARGV) or function (which gets them as its arguments), its `redis.call`s
    /// going to the environment lent to the interpreter (see `call.rs`), and returns what
    /// it returned or why it failed.
    pub fn run(
        &mut self,
        f: &Function,
        keys: &[Bytes],
        argv: &[Bytes],
        function: bool,
    ) -> Result<Value, ScriptError> {
        // The tables are made before the memory limit is armed: see MEMORY_LIMIT.
        let result = string_tables(&self.lua, keys, argv).and_then(|(keys, argv)| {
            self.limited(|| {
                self.runner
                    .call::<(bool, Value)>((f, keys, argv, !function))
            })
        });
        // Redis also forces a collection step every 50 scripts, "to avoid a full cycle".
        // Lua 5.1's collector is incremental and paces itself by allocation already; the
        // forced step only restarts a cycle Lua would have started later. Without it the
        // collector ran 40% fewer instructions per EVAL (callgrind, `redis.call('SET')`).
        match result {
            Ok((true, value)) => Ok(value),
            Ok((false, Value::Table(t))) => Err(script_error(&t)),
            Ok((false, other)) => Err(ScriptError {
                message: other
                    .to_string()
                    .unwrap_or_else(|_| "execution failure".into()),
                place: None,
            }),
            Err(e) => Err(ScriptError {
                message: e.to_string(),
                place: None,
            }),
        }
    }
}

impl Engine {
    /// Runs a function with the error handler and no redis.call (a library loading).
    /// The error is the `err` text.
    pub fn run_plain(&mut self, f: &Function) -> Result<(), String> {
        let result = self.limited(|| {
            self.runner
                .call::<(bool, Value)>((f, Value::Nil, Value::Nil, false))
        });
        match result {
            Ok((true, _)) => Ok(()),
            Ok((false, Value::Table(t))) => Err(script_error(&t).message),
            Ok((false, other)) => Err(other.to_string().unwrap_or_default()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Bytes to push as a Lua string. mlua pushes a `&str` directly but makes any other byte
/// string a Lua value (a reference, dropped again) first; short UTF-8 is the usual case.
/// Longer strings skip the UTF-8 check, which would cost more than it saves.
pub fn lua_bytes(bytes: &[u8]) -> Either<&str, &BStr> {
    if bytes.len() <= 256 {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return Either::Left(text);
        }
    }
    Either::Right(BStr::new(bytes))
}

/// KEYS and ARGV as Lua tables, each made with one call into Lua.
fn string_tables(lua: &Lua, keys: &[Bytes], argv: &[Bytes]) -> mlua::Result<(Table, Table)> {
    let table = |items: &[Bytes]| lua.create_sequence_from(items.iter().map(|b| lua_bytes(b)));
    Ok((table(keys)?, table(argv)?))
}

impl Engine {
    /// Runs `f` (Lua code running or compiling) with the interpreter's memory limit armed;
    /// see [`MEMORY_LIMIT`].
    pub fn limited<R>(&self, f: impl FnOnce() -> R) -> R {
        let _ = self.lua.set_memory_limit(MEMORY_LIMIT);
        let result = f();
        let _ = self.lua.set_memory_limit(0);
        result
    }
}

/// Runs `f` (Rust work for a script, called from Lua) with the memory limit lifted, and
/// arms it again as it was; see [`MEMORY_LIMIT`].
fn unlimited<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    let previous = lua.set_memory_limit(0).unwrap_or(0);
    let result = f();
    let _ = lua.set_memory_limit(previous);
    result
}

/// Reads Redis's error table `{err=, source=, line=}`.
fn script_error(t: &Table) -> ScriptError {
    let text = |key: &str| -> Option<String> {
        match t.raw_get::<Value>(key).ok()? {
            Value::String(s) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
            Value::Number(n) => Some(lua_number_text(n)),
            Value::Integer(n) => Some(n.to_string()),
            _ => None,
        }
    };
    ScriptError {
        message: text("err").unwrap_or_default(),
        place: text("source").zip(text("line")),
    }
}

/// A number as Lua's `tostring` writes it (`%.14g`).
pub fn lua_number_text(n: f64) -> String {
    super::libs::format_g(n, 14)
}

/// Redis's `__redis__err__handler`: turns the error into a table with `err`, `source` and
/// `line`. The failing function is the caller of the handler; errors raised by a C (here:
/// Rust) function are reported at its Lua caller, and the engine's own Lua wrappers are
/// skipped the same way.
fn error_handler(lua: &Lua, err: Value) -> mlua::Result<Value> {
    let frame = |level: usize| {
        lua.inspect_stack(level, |d| {
            let source = d.source();
            (
                source.what,
                source.source.map(|s| s.into_owned()),
                d.current_line(),
            )
        })
    };
    let mut info = frame(1);
    if matches!(info, Some(("C", _, _))) {
        info = frame(2);
    }
    if matches!(&info, Some((_, Some(s), _)) if s == INTERNAL_CHUNK) {
        info = frame(3);
    }
    let table = match err {
        Value::Table(t) => t,
        Value::Error(e) => lua.create_table_from([("err", rust_error_text(&e))])?,
        other => {
            let text = match &other {
                Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                Value::Number(n) => lua_number_text(*n),
                Value::Nil => "nil".into(),
                Value::Boolean(b) => b.to_string(),
                v => format!("{}: {:p}", v.type_name(), v.to_pointer()),
            };
            lua.create_table_from([("err", format!("ERR {text}"))])?
        }
    };
    if let Some((_, source, line)) = info {
        table.raw_set("source", source)?;
        table.raw_set("line", line.map(|l| l as i64))?;
    }
    Ok(Value::Table(table))
}

/// The text of an error a Rust function raised: an [`ErrorReply`]'s own text, or `ERR`
/// and the message.
fn rust_error_text(e: &mlua::Error) -> String {
    match e.downcast_ref::<ErrorReply>() {
        Some(reply) => reply.0.clone(),
        None => format!("ERR {}", innermost_message(e)),
    }
}

/// The message of a Rust error raised inside Lua, without mlua's wrapping.
fn innermost_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => innermost_message(cause),
        mlua::Error::MemoryError(_) => "not enough memory".into(),
        other => other.to_string(),
    }
}

/// Arguments of a Rust function, for the `Variadic` helpers of the libraries.
pub type Args = Variadic<Value>;
