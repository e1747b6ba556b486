//! `ROLE` → on a master `["master", <offset>, [[ip, port, ack-offset], ...]]` (online
//! replicas); on a replica `["slave", master-host, master-port, link-state, offset]`.
//! See `crate::replication::info::role`.

use bytes::Bytes;

use super::{CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[("role", role)];

fn role(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    crate::replication::info::role(ctx.shared, &mut ctx.out);
    Ok(())
}
