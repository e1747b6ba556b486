//! `MONITOR` → `+OK`, then a line for every command the node runs (see
//! `keyspace::monitors` for its format), until RESET or the connection closes. A second
//! MONITOR answers nothing; inside MULTI (or a script) it is refused, as in Redis 7.0.
//!
//! Shown, as Redis's `call()` shows them: each command after it ran (so with its secrets
//! redacted, see `keyspace::redact`), those inside EXEC one by one before EXEC itself,
//! those a script runs as `lua`; a script call (`skip_monitor`) before it runs, as Redis's
//! `evalCommand` shows it. Not shown: commands flagged `admin` (CONFIG, DEBUG, SLOWLOG,
//! CLIENT LIST ...), commands refused before running, a blocked command
//! when it is served (it was shown when it arrived), and the AOF being replayed.

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec};

use super::{CmdResult, Ctx, Handler};
use crate::keyspace::monitors::Origin;

pub const COMMANDS: &[(&str, Handler)] = &[("monitor", monitor)];

fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if !ctx.client.may_block {
        return Err("ERR MONITOR isn't allowed for DENY BLOCKING client".into());
    }
    if ctx.keyspace.monitors.add(&ctx.client.handle) {
        ctx.out.ok();
    }
    Ok(())
}

/// Shows a script call (EVAL, EVALSHA, FCALL and their `_RO` forms, the `skip_monitor`
/// commands) before it runs, so that it comes before the commands it runs, as Redis's
/// `evalCommand` and `fcallCommand` feed the monitors themselves.
pub(super) fn feed_script_call(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    if spec.flags.contains(CommandFlags::SKIP_MONITOR) && !ctx.client.loading {
        show(ctx, spec, args);
    }
}

/// Shows a command that just ran to the monitors.
pub(super) fn feed(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    let hidden =
        spec.flags.contains(CommandFlags::SKIP_MONITOR) || spec.flags.contains(CommandFlags::ADMIN);
    if !hidden && !ctx.client.loading && !ctx.client.retrying {
        show(ctx, spec, args);
    }
}

fn show(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    if ctx.keyspace.monitors.is_empty() {
        return;
    }
    let origin = if ctx.client.scripted {
        Origin::Script
    } else {
        Origin::Client(&ctx.client.handle)
    };
    let args = crate::keyspace::redact::redacted(spec.name.as_str(), args);
    ctx.keyspace.monitors.feed(ctx.client.db, origin, &args);
}
