//! The EVAL script cache and the interpreters that run EVAL scripts.
//!
//! Interpreters are not shared between threads: each thread that runs a script keeps its own
//! (`thread_local!`), so mlua runs without its `send` feature, which took a lock on every
//! call into Lua. Scripts run under the keyspace lock, so at most one runs at a time, on
//! whichever runtime thread serves the command; with the default single runtime worker that
//! is almost always the same thread (a script that runs long hands the worker's role to
//! another thread, see `busy.rs`, and later commands may then run there).
//!
//! What scripts exist is shared ([`ScriptCache`]): the bodies by SHA1, which SCRIPT EXISTS
//! reads and from which a thread compiles an EVALSHA of a script another thread loaded.
//! SCRIPT FLUSH empties it and gives it a new generation; a thread's interpreter from an
//! older generation is dropped when that thread next runs a script, so scripts never
//! outlive a flush, as in Redis (where the interpreter goes with them).
//!
//! EVAL scripts keep no state between runs (globals are readonly, KEYS and ARGV are new
//! tables), so which thread's interpreter runs a script makes no difference to it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hashbrown::HashMap;
use mlua::Function;

use super::busy::ScriptState;
use super::engine::Engine;
use super::shebang::{self, ScriptFlags};
use crate::cmd::CmdError;
use crate::server::clients::lock;

/// A generation number no other state of any server in this process had. Thread-local
/// interpreters remember the generation they were made for; fresh numbers keep two servers
/// in one process (tests) from taking each other's interpreters for their own.
pub fn new_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Relaxed)
}

/// The scripts of a server, shared by all threads.
pub struct ScriptCache {
    /// Bodies by lowercase SHA1 hex.
    bodies: Mutex<HashMap<String, Bytes>>,
    /// Changed by SCRIPT FLUSH. Read without the lock: it only changes under the keyspace
    /// lock, which every script run holds too.
    generation: AtomicU64,
}

impl Default for ScriptCache {
    fn default() -> Self {
        ScriptCache {
            bodies: Mutex::default(),
            generation: AtomicU64::new(new_generation()),
        }
    }
}

/// A thread's EVAL interpreter and the scripts compiled in it.
pub struct EvalScripts {
    generation: u64,
    pub engine: Engine,
    /// By lowercase SHA1 hex.
    pub scripts: HashMap<String, CachedScript>,
    /// The SHA1 of each compiled body, so a repeated EVAL finds its script without hashing
    /// the body again (SHA1 was a tenth of an EVAL). The bodies are copies: the request's
    /// bytes may share a large read buffer.
    sha_of_body: HashMap<Bytes, String>,
}

pub struct CachedScript {
    pub func: Function,
    pub flags: ScriptFlags,
}

thread_local! {
    static LOCAL: RefCell<Option<EvalScripts>> = const { RefCell::new(None) };
}

impl ScriptCache {
    /// Runs `f` with this thread's interpreter, made (again) if it is missing or older than
    /// the last SCRIPT FLUSH.
    pub fn with_local<R>(
        &self,
        state: &Arc<ScriptState>,
        f: impl FnOnce(&mut EvalScripts) -> Result<R, CmdError>,
    ) -> Result<R, CmdError> {
        let generation = self.generation.load(Relaxed);
        LOCAL.with(|cell| {
            // Only a script command borrows it, and scripts cannot run script commands.
            let mut slot = cell
                .try_borrow_mut()
                .map_err(|_| CmdError::from("ERR Lua interpreter busy"))?;
            if slot.as_ref().is_none_or(|s| s.generation != generation) {
                // The old interpreter goes first: its memory is not needed twice.
                *slot = None;
                let engine = Engine::new(state.clone())
                    .map_err(|e| CmdError::from(format!("ERR cannot start Lua: {e}")))?;
                *slot = Some(EvalScripts {
                    generation,
                    engine,
                    scripts: HashMap::new(),
                    sha_of_body: HashMap::new(),
                });
            }
            let scripts = slot.as_mut().ok_or_else(|| CmdError::from("ERR no Lua"))?;
            f(scripts)
        })
    }

    /// SCRIPT LOAD: compiles and caches a script; returns its SHA1.
    pub fn load(&self, state: &Arc<ScriptState>, body: &[u8]) -> Result<String, CmdError> {
        self.with_local(state, |local| {
            let sha = super::sha1_hex(body);
            local.compile(self, &sha, body)?;
            Ok(sha)
        })
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        lock(&self.bodies).contains_key(&sha)
    }

    /// How many scripts are cached (MEMORY DOCTOR warns past 1000).
    pub fn len(&self) -> usize {
        lock(&self.bodies).len()
    }

    /// SCRIPT FLUSH: forgets every script; every thread's interpreter goes with them.
    pub fn flush(&self) {
        lock(&self.bodies).clear();
        self.generation.store(new_generation(), Relaxed);
        LOCAL.with(|cell| {
            if let Ok(mut slot) = cell.try_borrow_mut() {
                *slot = None;
            }
        });
    }

    /// Bytes used by this thread's EVAL interpreter.
    pub fn local_memory(&self) -> usize {
        let generation = self.generation.load(Relaxed);
        LOCAL.with(|cell| {
            cell.try_borrow().ok().map_or(0, |slot| {
                slot.as_ref()
                    .filter(|s| s.generation == generation)
                    .map_or(0, |s| s.engine.lua.used_memory())
            })
        })
    }
}

impl EvalScripts {
    /// The SHA1 of an EVAL body, compiling the script (and recording its body in `cache`)
    /// if this interpreter does not have it yet.
    pub fn sha_of_body(&mut self, cache: &ScriptCache, body: &[u8]) -> Result<String, CmdError> {
        if let Some(sha) = self.sha_of_body.get(body) {
            return Ok(sha.clone());
        }
        let sha = super::sha1_hex(body);
        self.compile(cache, &sha, body)?;
        Ok(sha)
    }

    /// Makes sure an EVALSHA's script is compiled here, from the body another thread
    /// cached; false when no thread has it (NOSCRIPT).
    pub fn knows_sha(&mut self, cache: &ScriptCache, sha: &str) -> Result<bool, CmdError> {
        if self.scripts.contains_key(sha) {
            return Ok(true);
        }
        let Some(body) = lock(&cache.bodies).get(sha).cloned() else {
            return Ok(false);
        };
        self.compile(cache, sha, &body)?;
        Ok(true)
    }

    fn compile(&mut self, cache: &ScriptCache, sha: &str, body: &[u8]) -> Result<(), CmdError> {
        if self.scripts.contains_key(sha) {
            return Ok(());
        }
        let (flags, code) = shebang::parse_eval(body).map_err(CmdError::from)?;
        let func = self
            .engine
            .compile(&code, "@user_script")
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        let body = Bytes::copy_from_slice(body);
        self.scripts
            .insert(sha.to_string(), CachedScript { func, flags });
        self.sha_of_body.insert(body.clone(), sha.to_string());
        lock(&cache.bodies).entry(sha.to_string()).or_insert(body);
        Ok(())
    }
}
