//! - `GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]` →
//!   the number of members added (with CH: added or moved). NX adds only new members, XX
//!   only moves existing ones. Errors: `ERR syntax error` (a count of arguments that is not
//!   a multiple of three, or NX with XX), `ERR value is not a valid float`, `ERR invalid
//!   longitude,latitude pair <lon>,<lat>` (longitude within ±180, latitude within
//!   ±85.05112878); nothing is added if any position is refused.
//!
//! As in Redis, GEOADD is ZADD with each position turned into its 52-bit score: it runs
//! the sorted set's ZADD, announces `zadd`, and is propagated as that ZADD.

use bytes::Bytes;

use super::super::zset::zadd_scored;
use super::{invalid_pair, long_lat};
use crate::cmd::args::is;
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdResult, Ctx};
use crate::types::geo::score_of;

pub fn geoadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while let Some(arg) = args.get(first) {
        if is(arg, "nx") {
            nx = true;
        } else if is(arg, "xx") {
            xx = true;
        } else if !is(arg, "ch") {
            break;
        }
        first += 1;
    }
    let triples = &args[first..];
    if !triples.len().is_multiple_of(3) || (nx && xx) {
        return Err(SYNTAX.into());
    }
    // The ZADD this GEOADD stands for: the same key and flags, then score/member pairs.
    let mut zadd_args: Vec<Bytes> = Vec::with_capacity(first + triples.len() / 3 * 2);
    zadd_args.push(Bytes::from_static(b"zadd"));
    zadd_args.extend_from_slice(&args[1..first]);
    let mut scores = Vec::with_capacity(triples.len() / 3);
    for triple in triples.chunks(3) {
        let (longitude, latitude) = long_lat(&triple[0], &triple[1])?;
        let score =
            score_of(longitude, latitude).ok_or_else(|| invalid_pair(longitude, latitude))?;
        // The integer's text, as the propagated ZADD carries it; ZADD is given the number
        // too, so it does not read the text back.
        zadd_args.push(Bytes::from(score.to_string()));
        zadd_args.push(triple[2].clone());
        scores.push(score as f64);
    }
    let dirty_before = ctx.keyspace.dirty();
    zadd_scored(ctx, &zadd_args, Some(&scores))?;
    if ctx.keyspace.dirty() != dirty_before {
        ctx.propagate_as(zadd_args);
    }
    Ok(())
}
