//! GEO commands: positions kept in a sorted set whose scores are 52-bit geohashes
//! (`crate::types::geo`), so every sorted set command works on them too.
//!
//! - `add`: GEOADD.
//! - `read`: GEOPOS, GEODIST, GEOHASH.
//! - `search`: GEORADIUS, GEORADIUS_RO, GEORADIUSBYMEMBER, GEORADIUSBYMEMBER_RO, GEOSEARCH,
//!   GEOSEARCHSTORE.
//! - `request`: the arguments of those searches.
//!
//! Distances are replied with four decimals, coordinates with up to 17 (`"%.17Lf"` without
//! trailing zeros, as Redis writes them: a bulk string in RESP2, a double in RESP3).

mod add;
mod read;
mod request;
mod search;

use slotproxy::resp::ReplyBuf;

use super::errors::{CmdError, NOT_FLOAT};
use super::zset::bounds::score_arg;
use super::Handler;
use crate::types::geo::{LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN};
use crate::types::long_double::LongDouble;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("geoadd", add::geoadd),
    ("geopos", read::geopos),
    ("geodist", read::geodist),
    ("geohash", read::geohash),
    ("georadius", search::georadius),
    ("georadius_ro", search::georadius_ro),
    ("georadiusbymember", search::georadiusbymember),
    ("georadiusbymember_ro", search::georadiusbymember_ro),
    ("geosearch", search::geosearch),
    ("geosearchstore", search::geosearchstore),
];

pub const UNSUPPORTED_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
pub const BAD_MEMBER: &str = "ERR could not decode requested zset member";

/// A number argument read as Redis's `getDoubleFromObjectOrReply`, with its error text
/// (`ERR value is not a valid float` unless the command names its own).
fn number(arg: &[u8], error: &'static str) -> Result<f64, CmdError> {
    if let Some(value) = plain_decimal(arg) {
        return Ok(value);
    }
    score_arg(arg).map_err(|_| error.into())
}

/// Longest text [`plain_decimal`] reads: too short to overflow or to underflow to zero.
const PLAIN_DECIMAL_MAX: usize = 32;

/// Coordinates and radii as clients send them (`13.361389`, `-500`): an optional sign,
/// digits and a point, at most 32 characters. Such a text is a finite number that neither
/// overflows nor underflows, so Rust's correctly rounded parse gives what `strtod` gives
/// and none of `score_arg`'s checks (blanks, `inf`, hex, range errors, each costing an
/// allocation) can refuse it. Anything else returns None and goes the long way, errors
/// included.
fn plain_decimal(arg: &[u8]) -> Option<f64> {
    let digits = arg
        .strip_prefix(b"-")
        .or_else(|| arg.strip_prefix(b"+"))
        .unwrap_or(arg);
    if arg.len() > PLAIN_DECIMAL_MAX || !digits.iter().all(|&b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// A `longitude latitude` pair, checked against Redis's limits.
fn long_lat(longitude: &[u8], latitude: &[u8]) -> Result<(f64, f64), CmdError> {
    let longitude = number(longitude, NOT_FLOAT)?;
    let latitude = number(latitude, NOT_FLOAT)?;
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return Err(invalid_pair(longitude, latitude));
    }
    Ok((longitude, latitude))
}

/// Redis's error for a position outside its limits (`%f` for each coordinate).
fn invalid_pair(longitude: f64, latitude: f64) -> CmdError {
    format!("ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}").into()
}

/// Meters per unit: `m`, `km`, `ft` or `mi`, any case.
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    match arg.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(UNSUPPORTED_UNIT.into()),
    }
}

/// A distance as GEODIST and WITHDIST reply it: `"%.4f"` in a bulk string. Nearly
/// antipodal points can round the haversine's sine above 1, making the distance NaN, which
/// glibc prints with its sign.
fn reply_distance(out: &mut ReplyBuf<'_>, distance: f64) {
    if distance.is_nan() {
        out.bulk(if distance.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
    } else {
        out.bulk(format!("{distance:.4}").as_bytes());
    }
}

/// A coordinate as Redis's `addReplyHumanLongDouble` writes it.
fn reply_coordinate(out: &mut ReplyBuf<'_>, value: f64) {
    let text = match LongDouble::from_f64(value) {
        Some(exact) => exact.to_human_string(),
        None => slotproxy::resp::format_double(value),
    };
    if out.is_resp3() {
        out.raw(format!(",{text}\r\n").as_bytes());
    } else {
        out.bulk(text.as_bytes());
    }
}

/// A position as a two-element array.
fn reply_position(out: &mut ReplyBuf<'_>, (longitude, latitude): (f64, f64)) {
    out.array(2);
    reply_coordinate(out, longitude);
    reply_coordinate(out, latitude);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals_read_as_the_long_way_reads_them() {
        for text in [
            "13.361389",
            "-180",
            "+85.05112878",
            "0",
            "-0.0",
            ".5",
            "5.",
            "0.1000000000000000055511151231257827",
            "123456789012345678901234567890.5",
        ] {
            let long_way = score_arg(text.as_bytes()).ok();
            let fast = plain_decimal(text.as_bytes());
            assert!(fast.is_none() || fast == long_way, "{text}");
            assert_eq!(number(text.as_bytes(), NOT_FLOAT).ok(), long_way, "{text}");
        }
        for text in [
            "", ".", "-", "+-1", "1-2", "1..2", " 1", "1e5", "inf", "0x10",
        ] {
            assert_eq!(
                number(text.as_bytes(), NOT_FLOAT).ok(),
                score_arg(text.as_bytes()).ok(),
                "{text}"
            );
        }
        assert_eq!(plain_decimal(b"13.361389"), Some(13.361389));
        assert_eq!(plain_decimal(b"1e5"), None);
    }
}
