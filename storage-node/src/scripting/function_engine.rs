//! The interpreter function libraries load and run in, set up as Redis 7.0 sets up its own:
//! while a library loads, its code sees only `redis.register_function`, `redis.log` and the
//! version constants (any other global is "nonexistent"); when a function runs, it sees the
//! same environment as EVAL scripts.
//!
//! Each thread keeps its own (see `functions.rs`); loading a library here gives the
//! function handles of this interpreter and the descriptions every thread shares.

use std::sync::Arc;

use mlua::{Function, Lua, Table, Value};

use super::busy::ScriptState;
use super::engine::{error_at_caller, raise, Args, Engine};
use super::functions::FunctionEntry;
use super::shebang::ScriptFlags;

/// A function a library registered: its description and its handle in this interpreter.
pub struct Registered {
    pub entry: FunctionEntry,
    pub func: Function,
}

/// Functions a loading library registered so far.
struct Pending(Vec<Registered>);

/// The interpreter for functions and the environment tables it switches between.
pub struct FunctionEngine {
    pub engine: Engine,
    /// The environment of library code: empty, its `__index` pointing at `load_api` while a
    /// library loads and at the script globals otherwise.
    env_meta: Table,
    env: Table,
    load_api: Table,
}

impl FunctionEngine {
    pub fn new(state: Arc<ScriptState>) -> mlua::Result<FunctionEngine> {
        let engine = Engine::new(state)?;
        let lua = &engine.lua;
        let nonexistent =
            lua.create_function(|lua, (_, key): (Value, Value)| -> mlua::Result<()> {
                let name = super::redis_lib::to_bytes(&key).unwrap_or_default();
                Err(error_at_caller(
                    lua,
                    &format!(
                        "Script attempted to access nonexistent global variable '{}'",
                        String::from_utf8_lossy(&name)
                    ),
                ))
            })?;
        let readonly = lua.create_function(|lua, _: Args| -> mlua::Result<()> {
            Err(error_at_caller(lua, "Attempt to modify a readonly table"))
        })?;
        let protective = |t: &Table| -> mlua::Result<()> {
            let meta = lua.create_table()?;
            meta.raw_set("__index", nonexistent.clone())?;
            meta.raw_set("__newindex", readonly.clone())?;
            t.set_metatable(Some(meta))?;
            Ok(())
        };
        let api_redis = lua.create_table()?;
        api_redis.raw_set("register_function", lua.create_function(register_function)?)?;
        for name in [
            "log",
            "LOG_DEBUG",
            "LOG_VERBOSE",
            "LOG_NOTICE",
            "LOG_WARNING",
            "REDIS_VERSION",
            "REDIS_VERSION_NUM",
        ] {
            api_redis.raw_set(name, engine.redis.raw_get::<Value>(name)?)?;
        }
        protective(&api_redis)?;
        let load_api = lua.create_table()?;
        load_api.raw_set("redis", api_redis)?;
        protective(&load_api)?;
        let env = lua.create_table()?;
        let env_meta = lua.create_table()?;
        env_meta.raw_set("__index", engine.globals.clone())?;
        env_meta.raw_set("__newindex", readonly)?;
        env.set_metatable(Some(env_meta.clone()))?;
        Ok(FunctionEngine {
            engine,
            env_meta,
            env,
            load_api,
        })
    }

    /// Compiles and runs a library's code; returns the functions it registered.
    pub fn load(&mut self, code: &[u8]) -> Result<Vec<Registered>, String> {
        let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
        let engine = &self.engine;
        let func = engine
            .limited(|| {
                engine
                    .lua
                    .load(&code[end..])
                    .set_name("@user_function")
                    .set_environment(self.env.clone())
                    .into_function()
            })
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => {
                    format!("ERR Error compiling function: {message}")
                }
                other => format!("ERR Error compiling function: {other}"),
            })?;
        let lua = self.engine.lua.clone();
        lua.set_app_data(Pending(Vec::new()));
        let switch = |to: &Table| self.env_meta.raw_set("__index", to.clone());
        switch(&self.load_api).map_err(|e| format!("ERR {e}"))?;
        let result = self.engine.run_plain(&func);
        switch(&self.engine.globals).map_err(|e| format!("ERR {e}"))?;
        let pending = lua
            .remove_app_data::<Pending>()
            .map(|p| p.0)
            .unwrap_or_default();
        if let Err(message) = result {
            return Err(format!("ERR Error registering functions: {message}"));
        }
        if pending.is_empty() {
            return Err("ERR No functions registered".into());
        }
        Ok(pending)
    }
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name=,
/// callback=, flags=, description=}`, while a library loads.
fn register_function(lua: &Lua, args: Args) -> mlua::Result<()> {
    let entry = match args.as_slice() {
        [Value::Table(t)] => named_registration(t)?,
        [_] => return Err(raise(
            "ERR calling redis.register_function with a single argument is only applicable to Lua \
             table (representing named arguments).",
        )),
        [name, callback] => {
            let name = super::redis_lib::to_bytes(name).ok_or_else(|| {
                raise("ERR first argument to redis.register_function must be a string")
            })?;
            let Value::Function(func) = callback else {
                return Err(raise(
                    "ERR second argument to redis.register_function must be a function",
                ));
            };
            Registered {
                entry: FunctionEntry {
                    name: String::from_utf8_lossy(&name).into_owned(),
                    flags: ScriptFlags::default(),
                    description: None,
                },
                func: func.clone(),
            }
        }
        _ => {
            return Err(raise(
                "ERR wrong number of arguments to redis.register_function",
            ))
        }
    };
    if !super::functions::valid_name(entry.entry.name.as_bytes()) {
        return Err(raise(format!("ERR {}", super::functions::NAME_RULES)));
    }
    let mut pending = lua.app_data_mut::<Pending>().ok_or_else(|| {
        raise("ERR redis.register_function can only be called on FUNCTION LOAD command")
    })?;
    if pending.0.iter().any(|f| f.entry.name == entry.entry.name) {
        return Err(raise("ERR Function already exists in the library"));
    }
    pending.0.push(entry);
    Ok(())
}

fn named_registration(t: &Table) -> mlua::Result<Registered> {
    let mut name = None;
    let mut func = None;
    let mut flags = ScriptFlags::default();
    let mut description = None;
    for pair in t.pairs::<Value, Value>() {
        let (key, value) = pair?;
        let key = super::redis_lib::to_bytes(&key).unwrap_or_default();
        match &key[..] {
            b"function_name" => {
                name = Some(super::redis_lib::to_bytes(&value).ok_or_else(|| {
                    raise("ERR function_name argument given to redis.register_function must be a string")
                })?)
            }
            b"callback" => match value {
                Value::Function(f) => func = Some(f),
                _ => {
                    return Err(raise(
                        "ERR callback argument given to redis.register_function must be a function",
                    ))
                }
            },
            b"description" => {
                description = Some(super::redis_lib::to_bytes(&value).ok_or_else(|| {
                    raise("ERR description argument given to redis.register_function must be a string")
                })?)
            }
            b"flags" => {
                let Value::Table(list) = value else {
                    return Err(raise(
                        "ERR flags argument to redis.register_function must be a table representing \
                         function flags",
                    ));
                };
                for flag in list.sequence_values::<Value>() {
                    let flag = super::redis_lib::to_bytes(&flag?).unwrap_or_default();
                    if !flags.set(&flag) {
                        return Err(raise("ERR unknown flag given"));
                    }
                }
            }
            _ => return Err(raise("ERR unknown argument given to redis.register_function")),
        }
    }
    let name =
        name.ok_or_else(|| raise("ERR redis.register_function must get a function name argument"))?;
    let func =
        func.ok_or_else(|| raise("ERR redis.register_function must get a callback argument"))?;
    Ok(Registered {
        entry: FunctionEntry {
            name: String::from_utf8_lossy(&name).into_owned(),
            flags,
            description,
        },
        func,
    })
}
