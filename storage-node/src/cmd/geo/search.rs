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
use super::{long_lat, number, reply_distance, reply_position, unit, BAD_MEMBER};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::cmd::{CmdResult, Ctx};
use crate::types::geo::search::{cells, score_range, Extent, Shape};
use crate::types::geo::sort::{merge_sort, partial_quicksort};
use crate::types::geo::{decode_score, score_as_i64, Hash};
use crate::types::zset::ScoreTree;
use crate::types::ZSetValue;

/// Which command of the family runs (Redis's `georadiusGeneric` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS / GEORADIUSBYMEMBER (`store` false for the `_RO` forms).
    Radius { by_member: bool, store: bool },
    /// GEOSEARCH / GEOSEARCHSTORE.
    Search { store: bool },
}

pub fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(
        ctx,
        args,
        Form::Radius {
            by_member: false,
            store: true,
        },
    )
}

pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(
        ctx,
        args,
        Form::Radius {
            by_member: false,
            store: false,
        },
    )
}

pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(
        ctx,
        args,
        Form::Radius {
            by_member: true,
            store: true,
        },
    )
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(
        ctx,
        args,
        Form::Radius {
            by_member: true,
            store: false,
        },
    )
}

pub fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Form::Search { store: false })
}

pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Form::Search { store: true })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed request. `center` and `extent` are None only when the source is missing and
/// Redis skipped reading them.
struct Request {
    center: Option<(f64, f64)>,
    extent: Option<(Extent, f64)>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    sort: Sort,
    /// 0: no COUNT.
    count: usize,
    any: bool,
    store: Option<Bytes>,
    store_dist: bool,
}

/// A `radius unit` pair: the radius and meters per unit.
fn radius(value: &[u8], unit_arg: &[u8]) -> Result<(Extent, f64), CmdError> {
    let radius = number(value, "ERR need numeric radius")?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((Extent::Radius(radius), unit(unit_arg)?))
}

/// A `width height unit` triple.
fn boxed(width: &[u8], height: &[u8], unit_arg: &[u8]) -> Result<(Extent, f64), CmdError> {
    let width = number(width, "ERR need numeric width")?;
    let height = number(height, "ERR need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((Extent::Box { width, height }, unit(unit_arg)?))
}

/// The position of a member of the source.
fn member_position(zset: &ZSetValue, member: &[u8]) -> Result<(f64, f64), CmdError> {
    zset.score(member)
        .and_then(decode_score)
        .ok_or_else(|| BAD_MEMBER.into())
}

impl Request {
    /// Parses the arguments in Redis's order, each error as soon as Redis finds it.
    fn parse(args: &[Bytes], form: Form, zset: Option<&ZSetValue>) -> Result<Request, CmdError> {
        let mut request = Request {
            center: None,
            extent: None,
            with_dist: false,
            with_hash: false,
            with_coord: false,
            sort: Sort::None,
            count: 0,
            any: false,
            store: None,
            store_dist: false,
        };
        let base = match form {
            Form::Radius {
                by_member: false, ..
            } => {
                request.center = Some(long_lat(&args[2], &args[3])?);
                request.extent = Some(radius(&args[4], &args[5])?);
                6
            }
            Form::Radius {
                by_member: true, ..
            } => {
                if let Some(zset) = zset {
                    request.center = Some(member_position(zset, &args[2])?);
                    request.extent = Some(radius(&args[3], &args[4])?);
                }
                5
            }
            Form::Search { store: false } => 2,
            Form::Search { store: true } => {
                request.store = Some(args[1].clone());
                3
            }
        };
        let search = matches!(form, Form::Search { .. });
        let store_option = matches!(form, Form::Radius { store: true, .. });
        let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) =
            (false, false, false, false);
        let options = &args[base..];
        let mut i = 0;
        while i < options.len() {
            let arg = &options[i];
            let left = options.len() - i - 1;
            if is(arg, "withdist") {
                request.with_dist = true;
            } else if is(arg, "withhash") {
                request.with_hash = true;
            } else if is(arg, "withcoord") {
                request.with_coord = true;
            } else if is(arg, "any") {
                request.any = true;
            } else if is(arg, "asc") {
                request.sort = Sort::Asc;
            } else if is(arg, "desc") {
                request.sort = Sort::Desc;
            } else if is(arg, "count") && left >= 1 {
                let count = int(&options[i + 1])?;
                if count <= 0 {
                    return Err("ERR COUNT must be > 0".into());
                }
                request.count = usize::try_from(count).unwrap_or(usize::MAX);
                i += 1;
            } else if (is(arg, "store") || is(arg, "storedist")) && left >= 1 && store_option {
                request.store = Some(options[i + 1].clone());
                request.store_dist = is(arg, "storedist");
                i += 1;
            } else if is(arg, "storedist") && form == (Form::Search { store: true }) {
                request.store_dist = true;
            } else if is(arg, "frommember") && left >= 1 && search && !from_lonlat {
                if let Some(zset) = zset {
                    request.center = Some(member_position(zset, &options[i + 1])?);
                }
                from_member = true;
                i += 1;
            } else if is(arg, "fromlonlat") && left >= 2 && search && !from_member {
                request.center = Some(long_lat(&options[i + 1], &options[i + 2])?);
                from_lonlat = true;
                i += 2;
            } else if is(arg, "byradius") && left >= 2 && search && !by_box {
                request.extent = Some(radius(&options[i + 1], &options[i + 2])?);
                by_radius = true;
                i += 2;
            } else if is(arg, "bybox") && left >= 3 && search && !by_radius {
                request.extent = Some(boxed(&options[i + 1], &options[i + 2], &options[i + 3])?);
                by_box = true;
                i += 3;
            } else {
                return Err(SYNTAX.into());
            }
            i += 1;
        }
        if request.store.is_some() && (request.with_dist || request.with_hash || request.with_coord)
        {
            let what = if search {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            };
            return Err(format!(
                "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
            )
            .into());
        }
        let name = String::from_utf8_lossy(&args[0]);
        if search && !(from_member || from_lonlat) {
            return Err(format!(
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
            )
            .into());
        }
        if search && !(by_radius || by_box) {
            return Err(format!(
                "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
            )
            .into());
        }
        if request.any && request.count == 0 {
            return Err("ERR the ANY argument requires COUNT argument".into());
        }
        // The nearest `count` only make sense sorted (not so with ANY).
        if request.count != 0 && request.sort == Sort::None && !request.any {
            request.sort = Sort::Asc;
        }
        Ok(request)
    }

    fn shape(&self) -> Option<Shape> {
        let ((longitude, latitude), (extent, to_meters)) = self.center.zip(self.extent)?;
        Some(Shape {
            longitude,
            latitude,
            extent,
            to_meters,
        })
    }
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
        scan_cell(zset, *cell, shape, limit, &mut found);
        last_scanned = i;
    }
    found
}

fn scan_cell<'z>(
    zset: &'z ZSetValue,
    cell: Hash,
    shape: &Shape,
    limit: usize,
    found: &mut Vec<Found<'z>>,
) {
    let (min, max) = score_range(cell);
    let range = ScoreRange {
        min,
        max,
        min_exclusive: false,
        max_exclusive: true,
    };
    let (start, end) = range.ranks(zset);
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
