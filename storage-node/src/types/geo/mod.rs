//! Geohashes as Redis 7.0 computes them (its `geohash.c`): a longitude and a latitude become
//! two integers of `step` bits each (their offsets in the coordinate ranges), interleaved
//! into one number, latitude bits in the even positions. At Redis's 26 steps that is the
//! 52-bit integer a GEO sorted set holds as its score; smaller steps name the larger cells a
//! search walks (see [`search`]).
//!
//! Every computation is the same sequence of `f64` operations Redis performs, so the scores,
//! the decoded positions and the cells agree with redis-server to the bit.

pub mod search;
pub mod sort;

/// The longitudes and latitudes a position may have (EPSG:900913: no poles).
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;

/// The precision of a stored position: 26 bits per coordinate, 52 in all.
pub const STEP_MAX: u8 = 26;

/// A coordinate range a hash subdivides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// Redis's ranges for stored positions.
pub const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A cell: `step` bits per coordinate, interleaved. `step == 0 && bits == 0` is Redis's
/// "zero" hash, a neighbour a search skips.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hash {
    pub bits: u64,
    pub step: u8,
}

impl Hash {
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The hash left-aligned to 52 bits: the lowest score of the cell's positions.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// The rectangle a cell covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

/// Spreads the low 32 bits of `x` over the even bit positions.
fn spread(x: u32) -> u64 {
    let mut x = u64::from(x);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bit positions of `x` into 32 bits.
fn gather(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// The cell of `step` bits per coordinate holding a position, within the given ranges;
/// None outside Redis's limits (or the ranges), as `geohashEncode` refuses.
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<Hash> {
    if step == 0 || step > 32 {
        return None;
    }
    let outside = |v: f64, min: f64, max: f64| v > max || v < min;
    if outside(longitude, LONG_MIN, LONG_MAX)
        || outside(latitude, LAT_MIN, LAT_MAX)
        || outside(latitude, lat_range.min, lat_range.max)
        || outside(longitude, long_range.min, long_range.max)
    {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * cells;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * cells;
    // C converts the offsets to `uint32_t` (truncation); at the top edge (longitude 180)
    // the offset is 2^step, one bit above the others, and Redis keeps it.
    Some(Hash {
        bits: spread(lat_offset as u32) | (spread(long_offset as u32) << 1),
        step,
    })
}

/// [`encode`] with Redis's ranges.
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<Hash> {
    encode(LONG_RANGE, LAT_RANGE, longitude, latitude, step)
}

/// The rectangle of a cell; None for the zero hash.
pub fn decode(long_range: Range, lat_range: Range, hash: Hash) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let cells = (1u64 << hash.step) as f64;
    let lat_cell = gather(hash.bits);
    let long_cell = gather(hash.bits >> 1);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    // `+ 1` in C's unsigned 32-bit arithmetic: it wraps.
    let edge = |cell: u32, range: Range, scale: f64| Range {
        min: range.min + (f64::from(cell) / cells) * scale,
        max: range.min + (f64::from(cell.wrapping_add(1)) / cells) * scale,
    };
    Some(Area {
        latitude: edge(lat_cell, lat_range, lat_scale),
        longitude: edge(long_cell, long_range, long_scale),
    })
}

/// The centre of a stored position's cell, clamped to Redis's limits.
pub fn decode_to_long_lat(hash: Hash) -> Option<(f64, f64)> {
    let area = decode(LONG_RANGE, LAT_RANGE, hash)?;
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    Some((longitude, latitude))
}

/// The position a sorted set score stands for (Redis's `decodeGeohash`). Any score
/// decodes: C's `(uint64_t)` cast is done as x86-64 does it, so scores GEOADD never writes
/// (negative, huge, infinite) land where redis-server puts them.
pub fn decode_score(score: f64) -> Option<(f64, f64)> {
    decode_to_long_lat(Hash {
        bits: score_bits(score),
        step: STEP_MAX,
    })
}

/// The score GEOADD stores for a position (within Redis's limits).
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(|hash| hash.align52())
}

const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
/// What x86-64's truncating conversion gives for a value out of the signed range.
const INDEFINITE: i64 = i64::MIN;

/// C's `(long long)d` on x86-64 (`cvttsd2si`).
pub fn score_as_i64(d: f64) -> i64 {
    if d > -TWO_POW_63 - 1.0 && d < TWO_POW_63 {
        d as i64
    } else {
        INDEFINITE
    }
}

/// C's `(uint64_t)d` as GCC compiles it for x86-64: below 2^63 a signed conversion
/// (negative values wrap), above it a signed conversion of `d - 2^63` with the top bit
/// flipped back.
fn score_bits(d: f64) -> u64 {
    if d < TWO_POW_63 {
        score_as_i64(d) as u64
    } else {
        (score_as_i64(d - TWO_POW_63) as u64) ^ (1 << 63)
    }
}

/// Moves a cell one step east (`d > 0`) or west in longitude, wrapping around.
fn move_x(hash: &mut Hash, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let mut x = hash.bits & 0xAAAA_AAAA_AAAA_AAAA;
    let y = hash.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x = (x | zz).wrapping_sub(zz + 1);
    }
    x &= 0xAAAA_AAAA_AAAA_AAAAu64 >> shift;
    hash.bits = x | y;
}

/// Moves a cell one step north (`d > 0`) or south in latitude, wrapping around.
fn move_y(hash: &mut Hash, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let x = hash.bits & 0xAAAA_AAAA_AAAA_AAAA;
    let mut y = hash.bits & 0x5555_5555_5555_5555;
    let zz = 0xAAAA_AAAA_AAAA_AAAAu64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y = (y | zz).wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    hash.bits = x | y;
}

/// The eight cells around a cell.
#[derive(Clone, Copy, Debug, Default)]
pub struct Neighbors {
    pub north: Hash,
    pub east: Hash,
    pub west: Hash,
    pub south: Hash,
    pub north_east: Hash,
    pub south_east: Hash,
    pub north_west: Hash,
    pub south_west: Hash,
}

pub fn neighbors(hash: Hash) -> Neighbors {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: moved(1, 0),
        west: moved(-1, 0),
        south: moved(0, -1),
        north: moved(0, 1),
        north_west: moved(-1, 1),
        north_east: moved(1, 1),
        south_east: moved(1, -1),
        south_west: moved(-1, -1),
    }
}

/// The 11-character base32 geohash GEOHASH answers: the position re-encoded over the
/// standard ranges (latitude ±90, which Redis's own cells do not use); the eleventh
/// character stands for bits Redis does not have and is always `0`.
pub fn standard_geohash(longitude: f64, latitude: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let long_range = Range {
        min: -180.0,
        max: 180.0,
    };
    let lat_range = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits =
        encode(long_range, lat_range, longitude, latitude, STEP_MAX).map_or(0, |hash| hash.bits);
    let mut text = [b'0'; 11];
    for (i, c) in text.iter_mut().take(10).enumerate() {
        let index = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[index as usize];
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for x in [0u32, 1, 0x3ff_ffff, 0xdead_beef, u32::MAX] {
            assert_eq!(gather(spread(x)), x);
            assert_eq!(gather(spread(x) << 1 >> 1), x);
        }
    }

    #[test]
    fn scores_match_redis() {
        // Values redis-server 7.0 stores for these positions.
        assert_eq!(score_of(180.0, LAT_MAX), Some(13510798882111488));
        assert_eq!(score_of(-180.0, LAT_MIN), Some(0));
        assert_eq!(score_of(181.0, 0.0), None);
    }

    #[test]
    fn out_of_range_scores_decode_as_redis_does() {
        // -1 wraps to all ones: clamped to the north-east corner.
        assert_eq!(decode_score(-1.0), Some((LONG_MAX, LAT_MAX)));
        assert_eq!(decode_score(f64::INFINITY), decode_score(0.0));
        assert_eq!(decode_score(f64::NEG_INFINITY).map(|p| p.0), Some(LONG_MAX));
    }
}
