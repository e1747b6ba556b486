//! Function libraries, as Redis 7.0 keeps them: each library is Lua code whose first line
//! is `#!lua name=<library>`; running it calls `redis.register_function` for each function.
//!
//! The libraries (code, function names, flags, descriptions) are shared by all threads.
//! The interpreter they run in is per thread, like the EVAL interpreters (see `scripts.rs`
//! for why): a thread loads the libraries into its own interpreter the first time it runs
//! a function, and again after another thread changed them (each change gives the library
//! set a new generation). The thread that makes a change applies it to its own interpreter
//! as Redis does to its only one: a new library runs there, a deleted one's functions are
//! dropped, FUNCTION FLUSH starts a new interpreter; the other libraries keep their state.
//! Library code only registers functions, so loading it again elsewhere changes nothing a
//! client sees, except for state a library keeps in upvalues, which is per thread.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use hashbrown::HashMap;
use mlua::Function;

use super::busy::ScriptState;
use super::engine::Engine;
use super::function_engine::{FunctionEngine, Registered};
use super::scripts::new_generation;
use super::shebang::ScriptFlags;
use crate::cmd::CmdError;

/// One registered function, as every thread knows it.
pub struct FunctionEntry {
    pub name: String,
    pub flags: ScriptFlags,
    pub description: Option<Vec<u8>>,
}

pub struct Library {
    pub name: String,
    pub code: Bytes,
    pub functions: Vec<FunctionEntry>,
}

/// The libraries of a server.
pub struct Functions {
    /// In load order (FUNCTION LIST shows them so).
    libraries: Vec<Library>,
    /// Changes with every change of `libraries` (see `scripts::new_generation`).
    generation: u64,
}

impl Default for Functions {
    fn default() -> Self {
        Functions {
            libraries: Vec::new(),
            generation: new_generation(),
        }
    }
}

/// A thread's function interpreter, and the handles of the functions loaded in it.
struct LocalFunctions {
    /// The generation of the libraries loaded here.
    generation: u64,
    engine: FunctionEngine,
    handles: HashMap<String, Function>,
}

thread_local! {
    static LOCAL: RefCell<Option<LocalFunctions>> = const { RefCell::new(None) };
}

/// A library compiled in this thread's interpreter, not yet installed.
struct Prepared {
    library: Library,
    handles: Vec<(String, Function)>,
}

pub(super) const NAME_RULES: &str = "Library names can only contain letters, numbers, or \
underscores(_) and must be at least one character long";

pub(super) fn valid_name(name: &[u8]) -> bool {
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

/// How FUNCTION RESTORE treats libraries that already exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Append,
    Replace,
    Flush,
}

impl Functions {
    /// Runs `f` with this thread's interpreter, holding the current libraries.
    fn with_local<R>(
        &self,
        state: &Arc<ScriptState>,
        f: impl FnOnce(&mut LocalFunctions) -> Result<R, CmdError>,
    ) -> Result<R, CmdError> {
        LOCAL.with(|cell| {
            // Only function commands borrow it, and functions cannot run those.
            let mut slot = cell
                .try_borrow_mut()
                .map_err(|_| CmdError::from("ERR Lua interpreter busy"))?;
            if slot
                .as_ref()
                .is_none_or(|l| l.generation != self.generation)
            {
                *slot = None;
                *slot = Some(self.load_all(state)?);
            }
            let local = slot.as_mut().ok_or_else(|| CmdError::from("ERR no Lua"))?;
            f(local)
        })
    }

    /// A new interpreter with every library loaded.
    fn load_all(&self, state: &Arc<ScriptState>) -> Result<LocalFunctions, CmdError> {
        let mut engine = FunctionEngine::new(state.clone())
            .map_err(|e| CmdError::from(format!("ERR cannot start Lua: {e}")))?;
        let mut handles = HashMap::new();
        for lib in &self.libraries {
            for registered in engine.load(&lib.code).map_err(CmdError::from)? {
                handles.insert(registered.entry.name, registered.func);
            }
        }
        Ok(LocalFunctions {
            generation: self.generation,
            engine,
            handles,
        })
    }

    /// After a change of the libraries: a new generation, and this thread's interpreter
    /// follows the change (drops the functions that went, takes `added`) if it held the
    /// libraries from before it.
    fn changed(&mut self, added: Vec<(String, Function)>) {
        let before = self.generation;
        self.generation = new_generation();
        LOCAL.with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return;
            };
            let Some(local) = slot.as_mut().filter(|l| l.generation == before) else {
                return;
            };
            let libraries = &self.libraries;
            local.handles.retain(|name, _| {
                libraries
                    .iter()
                    .any(|l| l.functions.iter().any(|f| &f.name == name))
            });
            local.handles.extend(added);
            local.generation = self.generation;
        });
    }

    pub fn libraries(&self) -> &[Library] {
        &self.libraries
    }

    /// Compiles a library in this thread's interpreter without installing it.
    fn prepare(&self, state: &Arc<ScriptState>, code: &[u8]) -> Result<Prepared, CmdError> {
        let name = library_name(code).map_err(CmdError::from)?;
        if !valid_name(name.as_bytes()) {
            return Err(format!("ERR {NAME_RULES}").into());
        }
        let registered = self.with_local(state, |local| {
            local.engine.load(code).map_err(CmdError::from)
        })?;
        let mut functions = Vec::with_capacity(registered.len());
        let mut handles = Vec::with_capacity(registered.len());
        for Registered { entry, func } in registered {
            handles.push((entry.name.clone(), func));
            functions.push(entry);
        }
        Ok(Prepared {
            library: Library {
                name,
                code: Bytes::copy_from_slice(code),
                functions,
            },
            handles,
        })
    }

    /// Installs libraries, checking names against those that stay. `replace`: a library
    /// with the same name is replaced instead of refused.
    fn install(&mut self, new: Vec<Prepared>, replace: bool) -> Result<(), CmdError> {
        for (i, lib) in new.iter().map(|p| &p.library).enumerate() {
            // FUNCTION LOAD checked this already, with quotes; RESTORE's text has none.
            if !replace && self.libraries.iter().any(|l| l.name == lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name).into());
            }
            let replaced: Vec<&str> = new.iter().map(|p| p.library.name.as_str()).collect();
            let others = self
                .libraries
                .iter()
                .filter(|l| !replaced.contains(&l.name.as_str()))
                .chain(new[..i].iter().map(|p| &p.library));
            for other in others {
                for f in &lib.functions {
                    if other.functions.iter().any(|g| g.name == f.name) {
                        return Err(format!("ERR Function {} already exists", f.name).into());
                    }
                }
            }
        }
        let mut added = Vec::new();
        for Prepared { library, handles } in new {
            added.extend(handles);
            match self.libraries.iter_mut().find(|l| l.name == library.name) {
                Some(slot) => *slot = library,
                None => self.libraries.push(library),
            }
        }
        self.changed(added);
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
        let prepared = self.prepare(state, code)?;
        let name = prepared.library.name.clone();
        self.install(vec![prepared], replace)?;
        Ok(name)
    }

    pub fn delete(&mut self, name: &[u8]) -> Result<(), CmdError> {
        let before = self.libraries.len();
        self.libraries.retain(|l| l.name.as_bytes() != name);
        if self.libraries.len() == before {
            return Err("ERR Library not found".into());
        }
        self.changed(Vec::new());
        Ok(())
    }

    /// FUNCTION FLUSH: the interpreter goes with the libraries, as in Redis (other
    /// threads' interpreters go when those threads next run a function).
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.generation = new_generation();
        LOCAL.with(|cell| {
            if let Ok(mut slot) = cell.try_borrow_mut() {
                *slot = None;
            }
        });
    }

    pub fn function_count(&self) -> usize {
        self.libraries.iter().map(|l| l.functions.len()).sum()
    }

    /// FUNCTION DUMP: a function-library opcode and the code per library, then the RDB
    /// version and CRC-64, as Redis 7.0 writes it; `compress` is `rdbcompression`.
    pub fn dump(&self, compress: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for lib in &self.libraries {
            out.push(FUNCTION_OPCODE);
            crate::persistence::rdb::save_string_with(&mut out, &lib.code, compress);
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
        self.restore_libraries(state, &codes, policy)
    }

    /// Installs libraries from their code (FUNCTION RESTORE, and loading an RDB file).
    pub fn restore_libraries(
        &mut self,
        state: &Arc<ScriptState>,
        codes: &[Vec<u8>],
        policy: RestorePolicy,
    ) -> Result<(), CmdError> {
        let mut new = Vec::new();
        for code in codes {
            new.push(self.prepare(state, code)?);
        }
        if policy == RestorePolicy::Flush {
            self.libraries.clear();
        }
        self.install(new, policy == RestorePolicy::Replace)
    }

    /// The flags of the function FCALL names, if it exists.
    pub fn flags_of(&self, name: &[u8]) -> Option<ScriptFlags> {
        self.libraries
            .iter()
            .flat_map(|l| l.functions.iter())
            .find(|f| f.name.as_bytes() == name)
            .map(|f| f.flags)
    }

    /// Runs `f` with this thread's interpreter and the handle of the function `name`
    /// (which [`flags_of`](Self::flags_of) found).
    pub fn with_function<R>(
        &self,
        state: &Arc<ScriptState>,
        name: &[u8],
        f: impl FnOnce(&mut Engine, &Function) -> Result<R, CmdError>,
    ) -> Result<R, CmdError> {
        self.with_local(state, |local| {
            let name = String::from_utf8_lossy(name);
            let func = local
                .handles
                .get(name.as_ref())
                .ok_or_else(|| CmdError::from("ERR Function not found"))?;
            f(&mut local.engine.engine, func)
        })
    }
}

/// RDB opcode of a function library (`RDB_OPCODE_FUNCTION2`).
const FUNCTION_OPCODE: u8 = crate::persistence::rdb_file::OPCODE_FUNCTION2;
