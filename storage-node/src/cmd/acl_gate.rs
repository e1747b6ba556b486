//! The permission check every command passes before it runs or is queued (Redis's
//! `ACLCheckAllPerm` in `processCommand`), again when EXEC runs the queue (rules may have
//! changed since), and for each command a script calls. A refusal is answered with Redis's
//! words for where it happened and recorded in the ACL log.

use bytes::Bytes;
use slotproxy::cluster::CommandSpec;

use super::{CmdError, Ctx};
use crate::acl::{Context, Denial, Entry, Reason};
use crate::server::clients::{Client, ClientHandle};
use crate::server::Shared;

/// Where a client's refused command is logged from.
pub fn log_context(client: &Client) -> Context {
    if client.scripted {
        Context::Lua
    } else if client.nested || client.multi.is_some() {
        Context::Multi
    } else {
        Context::TopLevel
    }
}

/// Checks the client's user may run `args` as `spec`. The AOF loader and a replica's link
/// to its master run as no user, as in Redis: they may run anything.
pub fn check(
    shared: &Shared,
    client: &mut Client,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Result<(), CmdError> {
    if client.loading || client.master {
        return Ok(());
    }
    // The usual case, a user allowed everything whose rules have not changed since the
    // last command: two atomic loads.
    let version = shared.acl.version();
    if client.acl_unrestricted_at == version {
        return Ok(());
    }
    let user = client.handle.user();
    if shared.acl.is_unrestricted(&user) {
        client.acl_unrestricted_at = version;
        return Ok(());
    }
    let Err(denial) = shared.acl.check(&user, spec, args) else {
        return Ok(());
    };
    let context = log_context(client);
    let object: &[u8] = match denial.reason {
        Reason::Command => spec.name.as_bytes(),
        _ => args.get(denial.position).map_or(&[][..], |arg| &arg[..]),
    };
    record(
        shared,
        &client.handle,
        denial.reason,
        context,
        object,
        &user,
    );
    Err(refusal_text(denial, client, spec).into())
}

/// Redis's reply to a refused command: at top level or while queuing, `-NOPERM ...`; when
/// EXEC finds the rules changed since queuing, its own `-NOPERM`; inside a script, the
/// script's error.
fn refusal_text(denial: Denial, client: &Client, spec: &CommandSpec) -> String {
    if client.scripted {
        let what = match denial.reason {
            Reason::Command => "run this command or subcommand",
            Reason::Key => "access at least one of the keys mentioned in the command arguments",
            _ => "publish to the channel mentioned in the command",
        };
        return format!("ERR The user executing the script can't {what}");
    }
    if client.nested {
        let why = match denial.reason {
            Reason::Command => "no permission to execute the command or subcommand",
            Reason::Key => "no permission to touch the specified keys",
            _ => "no permission to access one of the channels used as arguments",
        };
        return format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and \
             the EXEC call. This command is no longer allowed for the following reason: {why}"
        );
    }
    match denial.reason {
        Reason::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            spec.name
        ),
        Reason::Key => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        _ => "NOPERM this user has no permissions to access one of the channels used as \
              arguments"
            .into(),
    }
}

/// Adds a refusal to the ACL log, with the client's CLIENT LIST line.
fn record(
    shared: &Shared,
    handle: &ClientHandle,
    reason: Reason,
    context: Context,
    object: &[u8],
    username: &[u8],
) {
    let entry = Entry {
        count: 1,
        reason,
        context,
        object: object.to_vec(),
        username: username.to_vec(),
        updated_ms: crate::keyspace::unix_time_ms(),
        client_info: super::client::info_line(handle),
    };
    let max_len = shared.config().acl.log_max_len;
    shared
        .acl
        .log_refusal(entry, usize::try_from(max_len).unwrap_or(usize::MAX));
}

/// Logs a refusal found outside the command check (a failed AUTH or HELLO AUTH).
pub fn log_refusal(ctx: &Ctx<'_>, reason: Reason, context: Context, object: &[u8], user: &[u8]) {
    record(
        ctx.shared,
        &ctx.client.handle,
        reason,
        context,
        object,
        user,
    );
}
