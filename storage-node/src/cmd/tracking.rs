//! The CLIENT subcommands of client-side caching (state and messages: `keyspace::tracking`).
//!
//! - `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX prefix ...] [OPTIN] [OPTOUT]
//!   [NOLOOP]` → `+OK`. Errors, in Redis 7.0's order of checks: a bad option is a syntax
//!   error; `ERR A client can only redirect to a single other client`; a non-integer id;
//!   `ERR The client ID you want redirect to does not exist`; then for ON: `ERR PREFIX option
//!   requires BCAST mode to be enabled`, `ERR You can't switch BCAST mode on/off before
//!   disabling tracking for this client, and then re-enabling it with a different mode.`,
//!   `ERR OPTIN and OPTOUT are not compatible with BCAST`, `ERR You can't specify both OPTIN
//!   mode and OPTOUT mode`, `ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this
//!   client, and then re-enabling it with a different mode.`, and the prefix overlap errors.
//! - `CLIENT CACHING YES|NO` → `+OK`; the next command's keys are remembered (OPTIN) or not
//!   (OPTOUT). `ERR CLIENT CACHING can be called only when the client is in tracking mode
//!   with OPTIN or OPTOUT mode enabled`, `ERR CLIENT CACHING YES is only valid when tracking
//!   is enabled in OPTIN mode.` (and the NO / OPTOUT twin), syntax error.
//! - `CLIENT GETREDIR` → the REDIRECT id, 0 without one, -1 when not tracking.
//! - `CLIENT TRACKINGINFO` → a map: `flags` (a set: `on`/`off`, `bcast`, `optin`,
//!   `caching-yes`, `optout`, `caching-no`, `noloop`, `broken_redirect`), `redirect` (as
//!   GETREDIR), `prefixes` (the BCAST prefixes, sorted).

use bytes::Bytes;

use super::args::{int, is};
use super::errors::SYNTAX;
use super::{CmdResult, Ctx};
use crate::keyspace::tracking::Mode;

/// CLIENT TRACKING.
pub fn tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut redirect: i64 = 0;
    let mut redirect_to = None;
    let mut mode = Mode::default();
    let mut prefixes = Vec::new();
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        let has_more = !options.as_slice().is_empty();
        if is(option, "redirect") && has_more {
            let id = options.next().map_or(Ok(0), |id| int(id));
            if redirect != 0 {
                return Err("ERR A client can only redirect to a single other client".into());
            }
            redirect = id?;
            redirect_to = u64::try_from(redirect)
                .ok()
                .and_then(|id| ctx.shared.clients.get(id));
            if redirect_to.is_none() {
                return Err("ERR The client ID you want redirect to does not exist".into());
            }
        } else if is(option, "bcast") {
            mode.bcast = true;
        } else if is(option, "optin") {
            mode.optin = true;
        } else if is(option, "optout") {
            mode.optout = true;
        } else if is(option, "noloop") {
            mode.noloop = true;
        } else if is(option, "prefix") && has_more {
            prefixes.extend(options.next().cloned());
        } else {
            return Err(SYNTAX.into());
        }
    }
    let id = ctx.client.id();
    let tracking = &mut ctx.keyspace.tracking;
    if is(&args[2], "on") {
        check_mode(tracking.mode(id), mode, !prefixes.is_empty())?;
        if mode.bcast {
            if let Some(error) = tracking.prefix_collision(id, &prefixes) {
                return Err(error.into());
            }
        }
        tracking.enable(
            &ctx.client.handle,
            redirect as u64,
            redirect_to,
            mode,
            &prefixes,
        );
    } else if is(&args[2], "off") {
        tracking.disable(id);
    } else {
        return Err(SYNTAX.into());
    }
    ctx.out.ok();
    Ok(())
}

/// The checks of `CLIENT TRACKING on` against the options given and the mode in force.
fn check_mode(current: Option<Mode>, new: Mode, has_prefixes: bool) -> CmdResult {
    if !new.bcast && has_prefixes {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    if current.is_some_and(|current| current.bcast != new.bcast) {
        return Err(
            "ERR You can't switch BCAST mode on/off before disabling tracking for \
                    this client, and then re-enabling it with a different mode."
                .into(),
        );
    }
    if new.bcast && (new.optin || new.optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if new.optin && new.optout {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    let switches = current.is_some_and(|c| (new.optin && c.optout) || (new.optout && c.optin));
    if switches {
        return Err(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for \
                    this client, and then re-enabling it with a different mode."
                .into(),
        );
    }
    Ok(())
}

/// CLIENT CACHING.
pub fn caching(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = ctx.client.id();
    let tracking = &mut ctx.keyspace.tracking;
    let Some(mode) = tracking.mode(id) else {
        return Err(
            "ERR CLIENT CACHING can be called only when the client is in tracking \
                    mode with OPTIN or OPTOUT mode enabled"
                .into(),
        );
    };
    if is(&args[2], "yes") {
        if !mode.optin {
            return Err(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
                    .into(),
            );
        }
    } else if is(&args[2], "no") {
        if !mode.optout {
            return Err(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
                    .into(),
            );
        }
    } else {
        return Err(SYNTAX.into());
    }
    tracking.set_caching(id);
    ctx.out.ok();
    Ok(())
}

/// CLIENT GETREDIR.
pub fn getredir(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let redirect = ctx.keyspace.tracking.redirect(ctx.client.id());
    ctx.out.integer(redirect);
    Ok(())
}

/// CLIENT TRACKINGINFO.
pub fn trackinginfo(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let id = ctx.client.id();
    let tracking = &ctx.keyspace.tracking;
    let flags = tracking.flags(id);
    let prefixes = tracking.prefixes_of(id);
    let redirect = tracking.redirect(id);
    let out = &mut ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    flags.iter().for_each(|flag| out.bulk(flag.as_bytes()));
    out.bulk(b"redirect");
    out.integer(redirect);
    out.bulk(b"prefixes");
    out.array(prefixes.len());
    prefixes.iter().for_each(|prefix| out.bulk(prefix));
    Ok(())
}
