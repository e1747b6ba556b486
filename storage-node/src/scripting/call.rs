//! `redis.call` and `redis.pcall`: a script's command runs through the node's normal
//! dispatch on the script's own client (its database and protocol, never blocking), after the
//! checks Redis's `scriptCall` makes, and its reply comes back converted to Lua.
//!
//! `redis.call` is registered once per interpreter. What a run's commands act on (the
//! keyspace, the script's client) is lent to the interpreter as app data for the run
//! ([`Lent`]) and taken back after it, so no Rust closure is created per run and no
//! reference outlives its borrow.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use mlua::{Lua, Value};
use slotproxy::cluster::CommandFlags;
use slotproxy::resp::{format_double, parse_frame, Frame, Proto};

use super::convert::frame_to_lua;
use super::redis_lib::{error_text, ScriptResp};
use crate::cmd;
use crate::keyspace::Keyspace;
use crate::server::clients::Client;
use crate::server::Shared;

/// The largest reply buffer kept for the next call.
const MAX_KEPT_REPLY_BYTES: usize = 16 * 1024;

/// What a running script's commands run against (besides the keyspace), for one run.
pub struct CallEnv {
    pub shared: Arc<Shared>,
    /// The script's own client: the caller's database and identity, never blocking.
    pub client: Client,
    /// EVAL_RO, FCALL_RO, or a script flagged `no-writes`.
    pub read_only: bool,
    /// A script flagged `allow-oom`: its `denyoom` calls run even out of memory.
    pub allow_oom: bool,
    /// Cluster mode: the caller sent ASKING, so an importing slot may be used.
    pub asking: bool,
}

/// An interpreter's app data for `redis.call`: the environment of the run in progress, and
/// the keyspace, which is the node's during a run (exchanged with the command's lock guard,
/// see [`Lent`]) and an empty stand-in otherwise. It stays in place between runs, so lending
/// costs two swaps and no allocation.
#[derive(Default)]
pub struct CallSlot {
    env: Option<CallEnv>,
    keyspace: Keyspace,
    /// Where a call's command writes its reply before it is converted; kept between calls
    /// so that a call allocates nothing for it.
    reply: BytesMut,
}

impl CallSlot {
    /// Runs one `redis.call` (`raise`) or `redis.pcall` of the script in progress (`None`
    /// outside a run). Returns the reply, or an error table and `true` when the Lua side
    /// must raise it.
    pub fn call(
        &mut self,
        lua: &Lua,
        raise: bool,
        args: &[Value],
    ) -> Option<mlua::Result<(Value, bool)>> {
        let env = self.env.as_mut()?;
        self.reply.clear();
        let result = env.call(lua, &mut self.keyspace, &mut self.reply, raise, args);
        // One big reply (an LRANGE of a long list) must not pin its buffer for good.
        if self.reply.capacity() > MAX_KEPT_REPLY_BYTES {
            self.reply = BytesMut::new();
        }
        Some(result)
    }
}

impl CallEnv {
    fn call(
        &mut self,
        lua: &Lua,
        keyspace: &mut Keyspace,
        output: &mut BytesMut,
        raise: bool,
        args: &[Value],
    ) -> mlua::Result<(Value, bool)> {
        match self.checked_args(keyspace, args) {
            Ok(argv) => self.run(lua, keyspace, output, raise, &argv),
            Err(text) => Ok((error_table(lua, text)?, raise)),
        }
    }

    fn checked_args(
        &mut self,
        keyspace: &mut Keyspace,
        args: &[Value],
    ) -> Result<Vec<Bytes>, String> {
        if args.is_empty() {
            return Err("ERR Please specify at least one argument for this redis lib call".into());
        }
        let mut argv = Vec::with_capacity(args.len());
        for arg in args {
            let bytes = match arg {
                Value::String(s) => Bytes::copy_from_slice(&s.as_bytes()),
                // Numbers keep their precision (`%.17g`), unlike Lua's own conversion.
                Value::Number(n) => Bytes::from(format_double(*n)),
                Value::Integer(n) => Bytes::from(n.to_string()),
                _ => {
                    return Err(
                        "ERR Lua redis lib command arguments must be strings or integers".into(),
                    )
                }
            };
            argv.push(bytes);
        }
        let Ok((_, spec)) = cmd::find_command(&self.shared, &argv) else {
            return Err("ERR Unknown Redis command called from script".into());
        };
        if !spec.arity_ok(argv.len()) {
            return Err("ERR Wrong number of args calling Redis command from script".into());
        }
        if spec.flags.contains(CommandFlags::NOSCRIPT) {
            return Err("ERR This Redis command is not allowed from script".into());
        }
        cmd::acl_gate::check(&self.shared, &mut self.client, spec, &argv)
            .map_err(|e| e.message().to_string())?;
        let writes = spec.flags.contains(CommandFlags::WRITE);
        if self.read_only && (writes || spec.flags.contains(CommandFlags::MAY_REPLICATE)) {
            return Err("ERR Write commands are not allowed from read-only scripts.".into());
        }
        super::cluster_keys_check(&self.shared, keyspace, self.asking, spec, &argv)?;
        if writes {
            // `min-replicas-to-write` (Redis's scriptVerifyWriteCommandAllow).
            crate::replication::master::check_good_replicas(&self.shared)?;
        }
        // Out of memory when the script started, a `denyoom` call fails until the script
        // has written something (Redis's scriptVerifyOOM).
        let state = &self.shared.scripting.state;
        if keyspace.eviction.pre_command_oom
            && !self.allow_oom
            && !self.client.master
            && !state.wrote()
            && spec.flags.contains(CommandFlags::DENYOOM)
        {
            return Err(crate::keyspace::evict::OOM.into());
        }
        if writes {
            state.note_write();
        }
        Ok(argv)
    }

    fn run(
        &mut self,
        lua: &Lua,
        keyspace: &mut Keyspace,
        output: &mut BytesMut,
        raise: bool,
        argv: &[Bytes],
    ) -> mlua::Result<(Value, bool)> {
        let resp3 = lua.app_data_ref::<ScriptResp>().is_some_and(|r| r.0 == 3);
        self.client.proto = if resp3 { Proto::Resp3 } else { Proto::Resp2 };
        cmd::execute(&self.shared, keyspace, &mut self.client, output, argv);
        let frame = match parse_frame(output) {
            Ok(Some((frame, _))) => frame,
            // A command that wrote no reply (it cannot block here) reads as nil.
            _ => Frame::Null,
        };
        if let Frame::Error(text) | Frame::BlobError(text) = &frame {
            let table = error_table(lua, error_text(&[b"-", &text[..]].concat()))?;
            return Ok((table, raise));
        }
        Ok((frame_to_lua(lua, &frame, resp3)?, false))
    }
}

fn error_table(lua: &Lua, text: String) -> mlua::Result<Value> {
    Ok(Value::Table(lua.create_table_from([("err", text)])?))
}

/// The node's keyspace and a [`CallEnv`] lent to an interpreter for one run. The keyspace
/// goes back to the command's lock guard when this is dropped, also when the run unwinds
/// from a panic.
pub struct Lent<'a> {
    lua: Lua,
    keyspace: &'a mut Keyspace,
    lent: bool,
}

impl<'a> Lent<'a> {
    pub fn new(lua: &Lua, keyspace: &'a mut Keyspace, env: CallEnv) -> Lent<'a> {
        let lent = match lua.app_data_mut::<CallSlot>() {
            Some(mut slot) => {
                std::mem::swap(&mut slot.keyspace, keyspace);
                slot.env = Some(env);
                true
            }
            // Not an engine's interpreter: redis.call then answers that it cannot run.
            None => false,
        };
        Lent {
            lua: lua.clone(),
            keyspace,
            lent,
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if !self.lent {
            return;
        }
        if let Some(mut slot) = self.lua.app_data_mut::<CallSlot>() {
            std::mem::swap(&mut slot.keyspace, self.keyspace);
            slot.env = None;
        }
    }
}
