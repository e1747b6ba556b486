//! Lua scripting and functions, as Redis 7.0 runs them.
//!
//! - `engine.rs`: an interpreter set up like Redis's (libraries, readonly globals, error
//!   handler), `glue.lua` its Lua side; `libs/` the preloaded C libraries in Rust.
//! - `redis_lib.rs`, `call.rs`: the `redis` table; `redis.call` runs commands through the
//!   node's dispatch. `convert.rs`: replies ↔ Lua values.
//! - `busy.rs`: the running script as other connections see it (BUSY, SCRIPT KILL).
//! - `scripts.rs`: the EVAL script cache, and the per-thread EVAL interpreters.
//! - `functions.rs`: function libraries (FUNCTION LOAD ... / FCALL), `function_engine.rs`
//!   the per-thread interpreter they run in.
//!
//! A script runs inside its command's handler, under the keyspace lock, so it is atomic.

pub mod busy;
mod call;
mod convert;
mod engine;
mod function_engine;
pub mod functions;
mod libs;
mod rand48;
mod redis_lib;
mod scripts;
pub mod shebang;

use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use mlua::{Function, Value};
use slotproxy::cluster::CommandSpec;

use crate::cmd::{CmdError, CmdResult, Ctx};
use crate::server::clients::Client;
use crate::server::Shared;
pub use busy::ScriptState;
use call::{CallEnv, Lent};
pub use engine::Engine;
use scripts::ScriptCache;

/// Scripting state shared by all connections.
pub struct Scripting {
    pub state: Arc<ScriptState>,
    scripts: ScriptCache,
    pub functions: Mutex<functions::Functions>,
    /// The server this belongs to, for the environment lent to a running script (its
    /// `redis.call`s run commands, which need the server; see `call.rs`).
    server: OnceLock<Weak<Shared>>,
}

impl Default for Scripting {
    fn default() -> Self {
        Scripting {
            state: Arc::default(),
            scripts: ScriptCache::default(),
            functions: Mutex::new(functions::Functions::default()),
            server: OnceLock::new(),
        }
    }
}

/// Lowercase hex SHA1, as Redis names scripts. Written by hand: `Digest`'s `Display` goes
/// through the formatter byte by byte, which cost more than the hashing itself per EVAL.
pub fn sha1_hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = sha1_smol::Sha1::from(data).digest().bytes();
    let mut text = String::with_capacity(40);
    for byte in digest {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 15)]));
    }
    text
}

/// In cluster mode, as Redis 7.0's `scriptVerifyClusterState`: every command a script runs
/// must be served by this node (its keys' slots owned here, or importing after ASKING).
/// Redis 7.0 does not yet hold a script to one slot for keys it did not declare (declared
/// keys are checked like any command's, CROSSSLOT included), and neither does this node.
pub fn cluster_keys_check(
    shared: &Shared,
    keyspace: &mut crate::keyspace::Keyspace,
    asking: bool,
    spec: &CommandSpec,
    argv: &[Bytes],
) -> Result<(), String> {
    let Some(cluster) = shared.cluster.as_deref() else {
        return Ok(());
    };
    if !crate::cluster::redirect::applies(spec) {
        return Ok(());
    }
    let access = crate::cluster::redirect::Access {
        asking,
        readonly: false,
        reads_when_down: shared.config().cluster_ha.allow_reads_when_down,
    };
    match crate::cluster::redirect::check(cluster, keyspace, access, &[(spec, argv)]) {
        Ok(()) => Ok(()),
        Err(e) if e.message() == crate::cluster::redirect::DOWN_STATE => {
            Err("ERR Script attempted to execute a command while the cluster is down".into())
        }
        Err(_) => Err("ERR Script attempted to access a non local key in a cluster node".into()),
    }
}

impl Scripting {
    /// Tells scripting which server it belongs to; done once the server is shared.
    pub fn attach(shared: &Arc<Shared>) {
        let _ = shared.scripting.server.set(Arc::downgrade(shared));
    }

    /// The running server (for work that outlives a command: scripts, BGSAVE).
    pub(crate) fn server(&self) -> Result<Arc<Shared>, CmdError> {
        self.server
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| CmdError::from("ERR scripting needs a running server"))
    }

    /// SCRIPT LOAD: compiles and caches a script; returns its SHA1.
    pub fn load(&self, body: &[u8]) -> Result<String, CmdError> {
        self.scripts.load(&self.state, body)
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        self.scripts.exists(sha)
    }

    /// SCRIPT FLUSH: drops every script with the interpreter, as Redis does.
    pub fn flush(&self) {
        self.scripts.flush();
    }

    /// How many EVAL scripts are cached.
    pub fn cached_scripts(&self) -> usize {
        self.scripts.len()
    }

    /// Bytes used by the EVAL interpreter of the calling thread.
    pub fn eval_memory(&self) -> usize {
        self.scripts.local_memory()
    }
}

/// EVALSHA's error for a script that is not cached.
const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// EVAL, EVALSHA and their `_RO` forms. `script` is the body, or the SHA1 for EVALSHA.
pub fn eval(ctx: &mut Ctx<'_>, args: &[Bytes], by_sha: bool, read_only_command: bool) -> CmdResult {
    // No script has a SHA1 of another length: Redis says so before it reads numkeys.
    if by_sha && args[1].len() != 40 {
        return Err(NOSCRIPT.into());
    }
    let (keys, argv) = split_keys(args)?;
    let scripting = &ctx.shared.scripting;
    scripting.scripts.with_local(&scripting.state, |local| {
        let sha = if by_sha {
            let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
            if !local.knows_sha(&scripting.scripts, &sha)? {
                return Err(NOSCRIPT.into());
            }
            sha
        } else {
            local.sha_of_body(&scripting.scripts, &args[1])?
        };
        let script = local
            .scripts
            .get(&sha)
            .ok_or_else(|| CmdError::from("ERR script vanished"))?;
        let flags = script.flags;
        if read_only_command && !flags.eval_compat && !flags.no_writes {
            return Err("ERR Can not execute a script with write flag using *_ro command.".into());
        }
        let mode = RunMode {
            read_only: read_only_command || flags.no_writes,
            allow_oom: flags.allow_oom,
        };
        let func = &script.func;
        run(
            ctx,
            &mut local.engine,
            func,
            (keys, argv),
            mode,
            &sha,
            false,
        )
    })
}

/// Splits `script numkeys key... arg...` (args[2] is numkeys).
pub fn split_keys(args: &[Bytes]) -> Result<(&[Bytes], &[Bytes]), CmdError> {
    let numkeys = slotproxy::numbers::parse_i64(&args[2])
        .ok_or_else(|| CmdError::from(crate::cmd::errors::NOT_INTEGER))?;
    if numkeys > (args.len() - 3) as i64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let rest = &args[3..];
    Ok(rest.split_at(numkeys as usize))
}

/// What a script's flags allow its calls.
#[derive(Clone, Copy, Debug)]
pub struct RunMode {
    /// EVAL_RO, FCALL_RO, or flagged `no-writes`.
    pub read_only: bool,
    /// Flagged `allow-oom`.
    pub allow_oom: bool,
}

/// Runs a compiled script or function for a command and writes its reply. `args` are KEYS
/// and ARGV: a function (FCALL, `is_function`) gets them as arguments, an EVAL body sees
/// them as globals.
pub fn run(
    ctx: &mut Ctx<'_>,
    engine: &mut Engine,
    func: &Function,
    args: (&[Bytes], &[Bytes]),
    mode: RunMode,
    name: &str,
    is_function: bool,
) -> CmdResult {
    let shared = ctx.shared;
    let server = shared.scripting.server()?;
    let asking = ctx.client.asking;
    let mut client = Client::new(ctx.client.handle.clone(), false);
    client.select(ctx.client.db);
    // Commands a script runs are nested calls: no blocking, no MULTI queue, no subscriber
    // mode check, and the script's frozen clock, as in Redis.
    client.may_block = false;
    client.nested = true;
    client.master = ctx.client.master;
    client.scripted = true;
    if let Some(mut resp) = engine.lua.app_data_mut::<redis_lib::ScriptResp>() {
        resp.0 = 2;
    }
    let env = CallEnv {
        shared: server,
        client,
        read_only: mode.read_only,
        allow_oom: mode.allow_oom,
        asking,
    };
    let lent = Lent::new(&engine.lua, ctx.keyspace, env);
    let slow_after_ms = shared.config().busy_reply_threshold_ms;
    shared
        .scripting
        .state
        .start(is_function, name, slow_after_ms);
    let (keys, argv) = args;
    let result = engine.run(func, keys, argv, is_function);
    shared.scripting.state.finish();
    drop(lent);
    let resp3 = engine
        .lua
        .app_data_ref::<redis_lib::ScriptResp>()
        .is_some_and(|r| r.0 == 3);
    match result {
        Ok(value) => {
            convert::write_result(&engine.lua, &mut ctx.out, &value, resp3).map_err(CmdError::from)
        }
        Err(engine::ScriptError {
            message,
            place: Some((source, line)),
        }) => Err(format!("{message} script: {name}, on {source}:{line}.").into()),
        Err(engine::ScriptError {
            message,
            place: None,
        }) => Err(format!("ERR Error running script {name}, {message}").into()),
    }
}

/// Converts a value for callers outside this module (FUNCTION LIST and the like).
pub fn lua_text(value: &Value) -> Option<Vec<u8>> {
    redis_lib::to_bytes(value)
}
