//! Reading stored positions.
//!
//! - `GEOPOS key member [member ...]` → for each member `[longitude, latitude]`, or a null
//!   array if it is missing (all nulls for a missing key).
//! - `GEODIST key member1 member2 [M|KM|FT|MI]` → the distance as a bulk string with four
//!   decimals, or null if the key or either member is missing. More arguments: `ERR syntax
//!   error`; a bad unit: `ERR unsupported unit provided. please use M, KM, FT, MI` (both
//!   checked before the key).
//! - `GEOHASH key member [member ...]` → for each member its 11-character standard geohash
//!   (latitude over ±90, unlike the stored score), or null.

use bytes::Bytes;

use super::super::zset::{db_and_out, read_zset};
use super::{reply_distance, reply_position, unit};
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdResult, Ctx};
use crate::types::geo::{decode_score, search::distance, standard_geohash};

pub fn geopos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let zset = read_zset(db, &args[1])?;
    out.array(args.len() - 2);
    for member in &args[2..] {
        match zset.and_then(|z| z.score(member)).and_then(decode_score) {
            Some(position) => reply_position(out, position),
            None => out.null_array(),
        }
    }
    Ok(())
}

pub fn geodist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let to_meters = match args.len() {
        5 => unit(&args[4])?,
        4 => 1.0,
        _ => return Err(SYNTAX.into()),
    };
    let (db, out) = db_and_out(ctx);
    let Some(zset) = read_zset(db, &args[1])? else {
        out.null();
        return Ok(());
    };
    let position = |member: &[u8]| zset.score(member).and_then(decode_score);
    match (position(&args[2]), position(&args[3])) {
        (Some((lon1, lat1)), Some((lon2, lat2))) => {
            reply_distance(out, distance(lon1, lat1, lon2, lat2) / to_meters);
        }
        _ => out.null(),
    }
    Ok(())
}

pub fn geohash(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let zset = read_zset(db, &args[1])?;
    out.array(args.len() - 2);
    for member in &args[2..] {
        match zset.and_then(|z| z.score(member)).and_then(decode_score) {
            Some((longitude, latitude)) => out.bulk(&standard_geohash(longitude, latitude)),
            None => out.null(),
        }
    }
    Ok(())
}
