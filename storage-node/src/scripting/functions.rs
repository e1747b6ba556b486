//! Function libraries, as Redis 7.0 keeps them: each library is Lua code whose first line
//! is `#!lua name=<library>`; running it calls `redis.register_function` for each function.
//!
//! Libraries run in their own interpreter. While a library loads, its code sees only
//! `redis.register_function`, `redis.log` and the version constants (any other global is
//! "nonexistent"); when a function runs, it sees the same environment as EVAL scripts.

use std::sync::Arc;

use bytes::Bytes;
use mlua::{Function, Lua, Table, Value};

use super::busy::ScriptState;
use super::engine::{error_at_caller, raise, Args, Engine};
use super::shebang::ScriptFlags;
use crate::cmd::CmdError;

/// One registered function.
pub struct FunctionEntry {
    pub name: String,
    pub func: Function,
    pub flags: ScriptFlags,
    pub description: Option<Vec<u8>>,
}

pub struct Library {
    pub name: String,
    pub code: Bytes,
    pub functions: Vec<FunctionEntry>,
}

/// Functions a loading library registered so far.
struct Pending(Vec<FunctionEntry>);

/// The interpreter for functions and the environment tables it switches between.
struct FunctionEngine {
    engine: Engine,
    /// The environment of library code: empty, its `__index` pointing at `load_api` while a
    /// library loads and at the script globals otherwise.
    env_meta: Table,
    env: Table,
    load_api: Table,
}

#[derive(Default)]
pub struct Functions {
    engine: Option<FunctionEngine>,
    /// In load order (FUNCTION LIST shows them so).
    libraries: Vec<Library>,
}

const NAME_RULES: &str = "Library names can only contain letters, numbers, or underscores(_) and \
must be at least one character long";

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// Reads a library's first line: `#!<engine> name=<name>`. Returns the name.
fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = code
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| "ERR Invalid library metadata".to_string())?;
    let line = String::from_utf8_lossy(&code[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("#!");
    let engine = &engine[2..];
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for part in parts {
        match part.strip_prefix("name=") {
            Some(n) if name.is_none() => name = Some(n.to_string()),
            Some(_) => {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                )
            }
            None => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    name.ok_or_else(|| "ERR Library name was not given".to_string())
}

impl FunctionEngine {
    fn new(state: Arc<ScriptState>) -> mlua::Result<FunctionEngine> {
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
    fn load(&mut self, code: &[u8]) -> Result<Vec<FunctionEntry>, String> {
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
            FunctionEntry {
                name: String::from_utf8_lossy(&name).into_owned(),
                func: func.clone(),
                flags: ScriptFlags::default(),
                description: None,
            }
        }
        _ => {
            return Err(raise(
                "ERR wrong number of arguments to redis.register_function",
            ))
        }
    };
    if !valid_name(entry.name.as_bytes()) {
        return Err(raise(format!("ERR {NAME_RULES}")));
    }
    let mut pending = lua.app_data_mut::<Pending>().ok_or_else(|| {
        raise("ERR redis.register_function can only be called on FUNCTION LOAD command")
    })?;
    if pending.0.iter().any(|f| f.name == entry.name) {
        return Err(raise("ERR Function already exists in the library"));
    }
    pending.0.push(entry);
    Ok(())
}

fn named_registration(t: &Table) -> mlua::Result<FunctionEntry> {
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
    Ok(FunctionEntry {
        name: String::from_utf8_lossy(&name).into_owned(),
        func,
        flags,
        description,
    })
}

/// How FUNCTION RESTORE treats libraries that already exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Append,
    Replace,
    Flush,
}

impl Functions {
    fn engine(&mut self, state: &Arc<ScriptState>) -> Result<&mut FunctionEngine, CmdError> {
        if self.engine.is_none() {
            let engine = FunctionEngine::new(state.clone())
                .map_err(|e| CmdError::from(format!("ERR cannot start Lua: {e}")))?;
            self.engine = Some(engine);
        }
        self.engine
            .as_mut()
            .ok_or_else(|| CmdError::from("ERR no Lua"))
    }

    pub fn libraries(&self) -> &[Library] {
        &self.libraries
    }

    /// Compiles a library without installing it.
    fn prepare(&mut self, state: &Arc<ScriptState>, code: &[u8]) -> Result<Library, CmdError> {
        let name = library_name(code).map_err(CmdError::from)?;
        if !valid_name(name.as_bytes()) {
            return Err(format!("ERR {NAME_RULES}").into());
        }
        let functions = self.engine(state)?.load(code).map_err(CmdError::from)?;
        Ok(Library {
            name,
            code: Bytes::copy_from_slice(code),
            functions,
        })
    }

    /// Installs libraries, checking names against those that stay. `replace`: a library
    /// with the same name is replaced instead of refused.
    fn install(&mut self, new: Vec<Library>, replace: bool) -> Result<(), CmdError> {
        for (i, lib) in new.iter().enumerate() {
            // FUNCTION LOAD checked this already, with quotes; RESTORE's text has none.
            if !replace && self.libraries.iter().any(|l| l.name == lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name).into());
            }
            let replaced: Vec<&str> = new.iter().map(|l| l.name.as_str()).collect();
            let others = self
                .libraries
                .iter()
                .filter(|l| !replaced.contains(&l.name.as_str()))
                .chain(new[..i].iter());
            for other in others {
                for f in &lib.functions {
                    if other.functions.iter().any(|g| g.name == f.name) {
                        return Err(format!("ERR Function {} already exists", f.name).into());
                    }
                }
            }
        }
        for lib in new {
            match self.libraries.iter_mut().find(|l| l.name == lib.name) {
                Some(slot) => *slot = lib,
                None => self.libraries.push(lib),
            }
        }
        Ok(())
    }

    /// FUNCTION LOAD: returns the library name.
    pub fn load(
        &mut self,
        state: &Arc<ScriptState>,
        code: &[u8],
        replace: bool,
    ) -> Result<String, CmdError> {
        let name = library_name(code).map_err(CmdError::from)?;
        if !replace && self.libraries.iter().any(|l| l.name == name) {
            return Err(format!("ERR Library '{name}' already exists").into());
        }
        let lib = self.prepare(state, code)?;
        let name = lib.name.clone();
        self.install(vec![lib], replace)?;
        Ok(name)
    }

    pub fn delete(&mut self, name: &[u8]) -> Result<(), CmdError> {
        let before = self.libraries.len();
        self.libraries.retain(|l| l.name.as_bytes() != name);
        if self.libraries.len() == before {
            return Err("ERR Library not found".into());
        }
        Ok(())
    }

    /// FUNCTION FLUSH: the interpreter goes with the libraries, as in Redis.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.engine = None;
    }

    pub fn function_count(&self) -> usize {
        self.libraries.iter().map(|l| l.functions.len()).sum()
    }

    /// FUNCTION DUMP: a function-library opcode and the code per library, then the RDB
    /// version and CRC-64, as Redis 7.0 writes it.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for lib in &self.libraries {
            out.push(FUNCTION_OPCODE);
            crate::persistence::rdb::save_string(&mut out, &lib.code);
        }
        out.extend_from_slice(&crate::persistence::rdb::RDB_VERSION.to_le_bytes());
        let crc = crate::persistence::crc64::crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn restore(
        &mut self,
        state: &Arc<ScriptState>,
        payload: &[u8],
        policy: RestorePolicy,
    ) -> Result<(), CmdError> {
        const BAD: &str = "ERR DUMP payload version or checksum are wrong";
        crate::persistence::payload::verify(payload).map_err(|_| CmdError::from(BAD))?;
        let body = &payload[..payload.len() - 10];
        let mut reader = crate::persistence::rdb::Reader::new(body);
        let mut codes = Vec::new();
        while reader.remaining() > 0 {
            let opcode = reader.read_u8().map_err(|_| CmdError::from(BAD))?;
            if opcode != FUNCTION_OPCODE {
                return Err("ERR given type is not a function".into());
            }
            let code = reader
                .read_string()
                .map_err(|_| CmdError::from("ERR Failed loading library"))?;
            codes.push(code);
        }
        let mut new = Vec::new();
        for code in &codes {
            new.push(self.prepare(state, code)?);
        }
        if policy == RestorePolicy::Flush {
            self.libraries.clear();
        }
        self.install(new, policy == RestorePolicy::Replace)
    }

    /// The function FCALL names, its flags, and the interpreter to run it in.
    pub fn find(&mut self, name: &[u8]) -> Option<(Function, ScriptFlags, &mut Engine)> {
        let (func, flags) = self
            .libraries
            .iter()
            .flat_map(|l| l.functions.iter())
            .find(|f| f.name.as_bytes() == name)
            .map(|f| (f.func.clone(), f.flags))?;
        let engine = &mut self.engine.as_mut()?.engine;
        Some((func, flags, engine))
    }
}

/// RDB opcode of a function library (`RDB_OPCODE_FUNCTION2`).
const FUNCTION_OPCODE: u8 = 245;
