//! Reading the arguments of the GEO search commands, in Redis's order (its
//! `georadiusGeneric`): each error is answered as soon as Redis would find it, and a missing
//! source skips reading the member and the radius, as Redis does.

use bytes::Bytes;

use super::{long_lat, number, unit, BAD_MEMBER};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX};
use crate::types::geo::decode_score;
use crate::types::geo::search::{Extent, Shape};
use crate::types::ZSetValue;

/// Which command of the family runs (Redis's `georadiusGeneric` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// GEORADIUS / GEORADIUSBYMEMBER (`store` false for the `_RO` forms).
    Radius { by_member: bool, store: bool },
    /// GEOSEARCH / GEOSEARCHSTORE.
    Search { store: bool },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed request. `center` and `extent` are None only when the source is missing and
/// Redis skipped reading them.
pub struct Request {
    pub center: Option<(f64, f64)>,
    pub extent: Option<(Extent, f64)>,
    pub with_dist: bool,
    pub with_hash: bool,
    pub with_coord: bool,
    pub sort: Sort,
    /// 0: no COUNT.
    pub count: usize,
    pub any: bool,
    pub store: Option<Bytes>,
    pub store_dist: bool,
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
    pub fn parse(
        args: &[Bytes],
        form: Form,
        zset: Option<&ZSetValue>,
    ) -> Result<Request, CmdError> {
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

    pub fn shape(&self) -> Option<Shape> {
        let ((longitude, latitude), (extent, to_meters)) = self.center.zip(self.extent)?;
        Some(Shape {
            longitude,
            latitude,
            extent,
            to_meters,
        })
    }
}
