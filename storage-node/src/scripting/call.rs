//! `redis.call` and `redis.pcall`: a script's command runs through the node's normal
//! dispatch on the script's own client (its database and protocol, never blocking), after the
//! checks Redis's `scriptCall` makes, and its reply comes back converted to Lua.

use bytes::{Bytes, BytesMut};
use mlua::{Lua, Value};
use slotproxy::cluster::{CommandFlags, CommandTable, LookupError};
use slotproxy::resp::{format_double, parse_frame, Frame, Proto};

use super::convert::frame_to_lua;
use super::redis_lib::{error_text, ScriptResp};
use crate::cmd;
use crate::keyspace::Keyspace;
use crate::server::clients::Client;
use crate::server::Shared;

/// What a running script's commands run against.
pub struct CallEnv<'a> {
    pub shared: &'a Shared,
    pub keyspace: &'a mut Keyspace,
    /// The script's own client: the caller's database and identity, never blocking.
    pub client: Client,
    /// EVAL_RO, FCALL_RO, or a script flagged `no-writes`.
    pub read_only: bool,
    /// Cluster mode: the caller sent ASKING, so an importing slot may be used.
    pub asking: bool,
}

impl CallEnv<'_> {
    /// Runs one `redis.call` (`raise`) or `redis.pcall`. Returns the reply, or an error table
    /// and `true` when the Lua side must raise it.
    pub fn call(
        &mut self,
        lua: &Lua,
        raise: bool,
        args: Vec<Value>,
    ) -> mlua::Result<(Value, bool)> {
        match self.checked_args(args) {
            Ok(argv) => self.run(lua, raise, &argv),
            Err(text) => Ok((error_table(lua, text)?, raise)),
        }
    }

    fn checked_args(&mut self, args: Vec<Value>) -> Result<Vec<Bytes>, String> {
        if args.is_empty() {
            return Err("ERR Please specify at least one argument for this redis lib call".into());
        }
        let mut argv = Vec::with_capacity(args.len());
        for arg in &args {
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
        let spec = match CommandTable::get().lookup(&argv) {
            Ok(spec) if self.shared.dispatch.get(&argv[0]).is_some() => spec,
            Ok(_) | Err(LookupError::UnknownCommand | LookupError::UnknownSubcommand) => {
                return Err("ERR Unknown Redis command called from script".into())
            }
        };
        if !spec.arity_ok(argv.len()) {
            return Err("ERR Wrong number of args calling Redis command from script".into());
        }
        if spec.flags.contains(CommandFlags::NOSCRIPT) {
            return Err("ERR This Redis command is not allowed from script".into());
        }
        let writes = spec.flags.contains(CommandFlags::WRITE);
        if self.read_only && (writes || spec.flags.contains(CommandFlags::MAY_REPLICATE)) {
            return Err("ERR Write commands are not allowed from read-only scripts.".into());
        }
        super::cluster_keys_check(self.shared, self.keyspace, self.asking, spec, &argv)?;
        if writes {
            self.shared.scripting.state.note_write();
        }
        Ok(argv)
    }

    fn run(&mut self, lua: &Lua, raise: bool, argv: &[Bytes]) -> mlua::Result<(Value, bool)> {
        let resp3 = lua.app_data_ref::<ScriptResp>().is_some_and(|r| r.0 == 3);
        self.client.proto = if resp3 { Proto::Resp3 } else { Proto::Resp2 };
        let mut output = BytesMut::new();
        cmd::execute(
            self.shared,
            self.keyspace,
            &mut self.client,
            &mut output,
            argv,
        );
        let frame = match parse_frame(&output) {
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
