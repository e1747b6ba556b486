//! Distances and search areas, as Redis 7.0's `geohash_helper.c` computes them.
//!
//! A search (a circle or an axis-aligned box around a centre) looks at nine cells: the
//! centre's cell at a step chosen from the search's size, and its eight neighbours, minus
//! those the search cannot reach. Each cell is a contiguous range of scores, so the sorted
//! set answers it as a score range; every member found is then checked against the exact
//! shape with the haversine distance on Redis's sphere.

use super::{decode, encode, neighbors, Area, Hash, Neighbors, LAT_RANGE, LONG_RANGE, STEP_MAX};

/// Redis's earth radius: the quadratic mean radius of WGS-84, in meters.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
/// Half the equator in the Mercator projection, in meters.
const MERCATOR_MAX: f64 = 20037726.37;

const DEG_TO_RAD: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(angle: f64) -> f64 {
    angle * DEG_TO_RAD
}

fn rad_deg(angle: f64) -> f64 {
    angle / DEG_TO_RAD
}

/// The great-circle distance in meters between two positions (degrees), by the haversine
/// formula on Redis's sphere.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lat1r = deg_rad(lat1);
    let lon1r = deg_rad(lon1);
    let lat2r = deg_rad(lat2);
    let lon2r = deg_rad(lon2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_IN_METERS * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// What a search covers. Sizes are in the unit the request named; `to_meters` converts.
#[derive(Clone, Copy, Debug)]
pub enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search: centre, extent and unit.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub longitude: f64,
    pub latitude: f64,
    pub extent: Extent,
    /// Meters per unit (1 for m, 1000 for km, 0.3048 for ft, 1609.34 for mi).
    pub to_meters: f64,
}

impl Shape {
    /// The distance in meters of a position from the centre if it lies inside the shape.
    pub fn distance_if_within(&self, longitude: f64, latitude: f64) -> Option<f64> {
        match self.extent {
            Extent::Radius(radius) => {
                let d = distance(self.longitude, self.latitude, longitude, latitude);
                (d <= radius * self.to_meters).then_some(d)
            }
            Extent::Box { width, height } => {
                let (width, height) = (width * self.to_meters, height * self.to_meters);
                // Measured along the point's parallel and along its meridian.
                let long_distance = distance(longitude, latitude, self.longitude, latitude);
                let lat_distance = distance(longitude, latitude, longitude, self.latitude);
                if long_distance > width / 2.0 || lat_distance > height / 2.0 {
                    return None;
                }
                Some(distance(self.longitude, self.latitude, longitude, latitude))
            }
        }
    }

    /// Longitude and latitude bounds of the shape: `[min_lon, min_lat, max_lon, max_lat]`.
    /// The box's east and west edges are measured on the parallel farther from the
    /// equator, where a degree is shortest.
    fn bounding_box(&self) -> [f64; 4] {
        let (half_height, half_width) = match self.extent {
            Extent::Radius(r) => (r, r),
            Extent::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.to_meters * half_height;
        let width = self.to_meters * half_width;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude - lat_delta).cos());
        let long_delta = if self.latitude < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.longitude - long_delta,
            self.latitude - lat_delta,
            self.longitude + long_delta,
            self.latitude + lat_delta,
        ]
    }

    /// The distance from the centre to the farthest point of the shape, in meters.
    fn reach_in_meters(&self) -> f64 {
        let reach = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        reach * self.to_meters
    }
}

/// The step whose cells are about the size of a search of `range_meters` at a latitude.
fn steps_for_radius(mut range_meters: f64, latitude: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    // Make sure the range is covered in most cases.
    step -= 2;
    // Meridians converge towards the poles: cells get narrower.
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX.into()) as u8
}

/// The cells to scan for a search, in Redis's order: the centre's cell, then north, south,
/// east, west, north-east, north-west, south-east, south-west. Zero hashes stand for
/// neighbours the search cannot reach.
pub fn cells(shape: &Shape) -> [Hash; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = shape.bounding_box();
    let mut steps = steps_for_radius(shape.reach_in_meters(), shape.latitude);
    // The centre's cell at a step, its neighbours and its area. A centre outside Redis's
    // limits has no cell (callers check positions first): then nothing is scanned.
    let around = |steps: u8| -> Option<(Hash, Neighbors, Area)> {
        let hash = encode(
            LONG_RANGE,
            LAT_RANGE,
            shape.longitude,
            shape.latitude,
            steps,
        )?;
        Some((hash, neighbors(hash), decode(LONG_RANGE, LAT_RANGE, hash)?))
    };
    let Some((mut hash, mut n, mut area)) = around(steps) else {
        return [Hash::default(); 9];
    };
    // Near a cell's edge the estimated step can be too fine for the neighbours to cover
    // the search: then use cells twice as large.
    let side = |h: Hash| decode(LONG_RANGE, LAT_RANGE, h);
    let too_small = side(n.north).is_some_and(|a| a.latitude.max < max_lat)
        || side(n.south).is_some_and(|a| a.latitude.min > min_lat)
        || side(n.east).is_some_and(|a| a.longitude.max < max_lon)
        || side(n.west).is_some_and(|a| a.longitude.min > min_lon);
    if steps > 1 && too_small {
        steps -= 1;
        let Some(coarser) = around(steps) else {
            return [Hash::default(); 9];
        };
        (hash, n, area) = coarser;
    }
    // Drop the neighbours on the sides the search does not reach.
    if steps >= 2 {
        if area.latitude.min < min_lat {
            n.south = Hash::default();
            n.south_west = Hash::default();
            n.south_east = Hash::default();
        }
        if area.latitude.max > max_lat {
            n.north = Hash::default();
            n.north_east = Hash::default();
            n.north_west = Hash::default();
        }
        if area.longitude.min < min_lon {
            n.west = Hash::default();
            n.south_west = Hash::default();
            n.north_west = Hash::default();
        }
        if area.longitude.max > max_lon {
            n.east = Hash::default();
            n.south_east = Hash::default();
            n.north_east = Hash::default();
        }
    }
    [
        hash,
        n.north,
        n.south,
        n.east,
        n.west,
        n.north_east,
        n.north_west,
        n.south_east,
        n.south_west,
    ]
}

/// The scores `[min, max)` of the positions inside a cell.
pub fn score_range(cell: Hash) -> (f64, f64) {
    let min = cell.align52();
    let next = Hash {
        bits: cell.bits + 1,
        step: cell.step,
    };
    (min as f64, next.align52() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_of_redis_example() {
        // Palermo to Catania as stored: redis-server 7.0.15 answers GEODIST with this.
        let stored = |lon, lat| {
            let score = crate::types::geo::score_of(lon, lat).unwrap();
            crate::types::geo::decode_score(score as f64).unwrap()
        };
        let (lon1, lat1) = stored(13.361389, 38.115556);
        let (lon2, lat2) = stored(15.087269, 37.502669);
        let d = distance(lon1, lat1, lon2, lat2);
        assert_eq!(format!("{d:.4}"), "166274.1516");
    }

    #[test]
    fn a_centre_without_a_cell_scans_nothing() {
        let shape = Shape {
            longitude: 0.0,
            latitude: 89.0,
            extent: Extent::Radius(1.0),
            to_meters: 1.0,
        };
        assert!(cells(&shape).iter().all(Hash::is_zero));
    }

    #[test]
    fn zero_radius_uses_the_finest_cells() {
        assert_eq!(steps_for_radius(0.0, 0.0), 26);
        assert_eq!(steps_for_radius(1e9, 0.0), 1);
    }
}
