//! Searching positions by distance.
//!
//! - `GEORADIUS key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
//!   [COUNT count [ANY]] [ASC|DESC] [STORE key | STOREDIST key]`
//! - `GEORADIUSBYMEMBER key member radius unit [options as GEORADIUS]`
//! - `GEORADIUS_RO` / `GEORADIUSBYMEMBER_RO`: the same without STORE and STOREDIST.
//! - `GEOSEARCH key FROMMEMBER member | FROMLONLAT longitude latitude
//!   BYRADIUS radius unit | BYBOX width height unit [ASC|DESC] [COUNT count [ANY]]
//!   [WITHCOORD] [WITHDIST] [WITHHASH]`
//! - `GEOSEARCHSTORE destination source FROMMEMBER ... | FROMLONLAT ... BYRADIUS ... |
//!   BYBOX ... [ASC|DESC] [COUNT count [ANY]] [STOREDIST]`
//!
//! Replies: the matching members; with WITH* options each one is an array of the member,
//! then its distance (`"%.4f"` in the request's unit), its score as an integer, its
//! `[longitude, latitude]`, in that order. Unsorted by default (the order Redis scans its
//! cells in); COUNT alone sorts ascending; COUNT with ANY stops at the first `count`
//! matches. The STORE forms store the matches as a sorted set (scores: the geohashes, or
//! the distances with STOREDIST), replacing the destination (deleting it when nothing
//! matched), and reply with how many were stored; they announce `georadiusstore` or
//! `geosearchstore`.
//!
//! Errors, in Redis's order: WRONGTYPE for the source; bad positions and distances (`ERR
//! need numeric radius`, `ERR radius cannot be negative`, `ERR need numeric width`,
//! `ERR need numeric height`, `ERR height or width cannot be negative`, units); `ERR could
//! not decode requested zset member`; `ERR COUNT must be > 0`; `ERR syntax error`; then
//! `ERR ... is not compatible with WITHDIST, WITHHASH and WITHCOORD options`, `ERR exactly
//! one of FROMMEMBER or FROMLONLAT can be specified for <command>`, `ERR exactly one of
//! BYRADIUS and BYBOX can be specified for <command>`, `ERR the ANY argument requires
//! COUNT argument`. A missing source gives an empty reply without checking the member
//! (and a STORE form deletes its destination).

use std::cmp::Ordering;

use bytes::Bytes;
use slotproxy::resp::ReplyBuf;

use super::super::zset::bounds::ScoreRange;
use super::super::zset::{db_and_out, limits, read_zset, store_result};
use super::request::{Form, Request, Sort};
use super::{reply_distance, reply_position};
use crate::cmd::{CmdResult, Ctx};
use crate::types::geo::search::{cells, score_range, Shape};
use crate::types::geo::sort::{merge_sort, partial_quicksort};
use crate::types::geo::{decode_score, score_as_i64};
use crate::types::zset::ScoreTree;
use crate::types::ZSetValue;

const GEORADIUS: Form = Form::Radius {
    by_member: false,
    store: true,
};
const GEORADIUS_RO: Form = Form::Radius {
    by_member: false,
    store: false,
};
const GEORADIUSBYMEMBER: Form = Form::Radius {
    by_member: true,
    store: true,
};
const GEORADIUSBYMEMBER_RO: Form = Form::Radius {
    by_member: true,
    store: false,
};

pub fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, GEORADIUS)
}

pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, GEORADIUS_RO)
}

pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, GEORADIUSBYMEMBER)
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, GEORADIUSBYMEMBER_RO)
}

pub fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Form::Search { store: false })
}

pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Form::Search { store: true })
}

/// A member inside the search (borrowed from the source set).
struct Found<'z> {
    member: &'z [u8],
    score: f64,
    /// Meters from the centre.
    distance: f64,
    position: (f64, f64),
}

/// The members inside `shape`, scanning its cells as Redis does; with `limit` (COUNT ...
/// ANY) it stops once that many are found.
fn search<'z>(zset: &'z ZSetValue, shape: &Shape, limit: usize) -> Vec<Found<'z>> {
    let cells = cells(shape);
    let mut found = Vec::new();
    // The lowest and highest scores held, found once: a cell outside them is skipped
    // without walking the tree for its ranks (Redis's `zslIsInRange` check). Searches away
    // from the members, the common miss, then cost two descents instead of eighteen.
    let (Some((_, lowest)), Some((_, highest))) = (
        zset.tree.select(0),
        zset.tree.select(zset.len().saturating_sub(1)),
    ) else {
        return found;
    };
    let mut last_scanned = 0;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // Huge radii make neighbours repeat; Redis skips a cell equal to the last one
        // scanned after the centre.
        if last_scanned != 0 && *cell == cells[last_scanned] {
            continue;
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
        let (min, max) = score_range(*cell);
        if max > lowest && min <= highest {
            scan_cell(zset, (min, max), shape, limit, &mut found);
        }
        last_scanned = i;
    }
    found
}

/// Adds the members with scores in `[min, max)` (one cell) that lie inside `shape`.
fn scan_cell<'z>(
    zset: &'z ZSetValue,
    (min, max): (f64, f64),
    shape: &Shape,
    limit: usize,
    found: &mut Vec<Found<'z>>,
) {
    let range = ScoreRange {
        min,
        max,
        min_exclusive: false,
        max_exclusive: true,
    };
    let (start, end) = range.ranks(zset);
    if start == end {
        // An iterator would still walk down to `start` and allocate its stack.
        return;
    }
    for (member, score) in zset.tree.iter_from(start).take(end - start) {
        let inside = decode_score(score).and_then(|position| {
            let distance = shape.distance_if_within(position.0, position.1)?;
            Some((position, distance))
        });
        if let Some((position, distance)) = inside {
            found.push(Found {
                member,
                score,
                distance,
                position,
            });
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
    }
}

fn run(ctx: &mut Ctx<'_>, args: &[Bytes], form: Form) -> CmdResult {
    let source = if form == (Form::Search { store: true }) {
        &args[2]
    } else {
        &args[1]
    };
    let limits = limits(ctx);
    let (db, out) = db_and_out(ctx);
    let zset = read_zset(db, source)?;
    let request = Request::parse(args, form, zset)?;
    let shape = request.shape();
    let found = match (zset, shape) {
        (Some(zset), Some(shape)) => {
            let limit = if request.any { request.count } else { 0 };
            sorted(search(zset, &shape, limit), request.sort, request.count)
        }
        _ => Vec::new(),
    };
    let to_meters = shape.map_or(1.0, |shape| shape.to_meters);
    let Some(destination) = &request.store else {
        reply_matches(out, &request, &found, to_meters);
        return Ok(());
    };
    let mut tree = ScoreTree::new();
    for m in &found {
        let score = if request.store_dist {
            m.distance / to_meters
        } else {
            m.score
        };
        tree.set_score(m.member, score);
    }
    let event = match form {
        Form::Search { .. } => "geosearchstore",
        Form::Radius { .. } => "georadiusstore",
    };
    store_result(ctx, destination, ZSetValue::from_tree(tree, limits), event);
    Ok(())
}

/// The matches in reply order, cut to `count` (0: all): sorted as Redis sorts them, with
/// C's `qsort` when all are returned and its partial quicksort otherwise (the two order
/// equal distances differently).
fn sorted(found: Vec<Found<'_>>, sort: Sort, count: usize) -> Vec<Found<'_>> {
    let returned = if count == 0 {
        found.len()
    } else {
        found.len().min(count)
    };
    let ascending = |a: &usize, b: &usize| {
        let (a, b) = (found[*a].distance, found[*b].distance);
        if a > b {
            Ordering::Greater
        } else if a == b {
            Ordering::Equal
        } else {
            Ordering::Less
        }
    };
    let mut order: Vec<usize> = (0..found.len()).collect();
    match sort {
        Sort::None => {}
        Sort::Asc if returned == found.len() => merge_sort(&mut order, &ascending),
        Sort::Desc if returned == found.len() => {
            merge_sort(&mut order, &|a, b| ascending(a, b).reverse());
        }
        Sort::Asc => partial_quicksort(&mut order, 0, returned - 1, &ascending),
        Sort::Desc => {
            partial_quicksort(&mut order, 0, returned - 1, &|a, b| {
                ascending(a, b).reverse()
            });
        }
    }
    order.truncate(returned);
    let mut slots: Vec<Option<Found>> = found.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}

fn reply_matches(out: &mut ReplyBuf<'_>, request: &Request, found: &[Found], to_meters: f64) {
    let extras = [request.with_dist, request.with_hash, request.with_coord]
        .iter()
        .filter(|&&on| on)
        .count();
    out.array(found.len());
    for m in found {
        if extras > 0 {
            out.array(extras + 1);
        }
        out.bulk(m.member);
        if request.with_dist {
            reply_distance(out, m.distance / to_meters);
        }
        if request.with_hash {
            out.integer(score_as_i64(m.score));
        }
        if request.with_coord {
            reply_position(out, m.position);
        }
    }
}
