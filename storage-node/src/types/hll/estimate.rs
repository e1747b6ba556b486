//! The cardinality estimate from the register histogram: Otmar Ertl's improved raw
//! estimator ("New cardinality estimation algorithms for HyperLogLog sketches",
//! arXiv:1702.01284), which Redis uses since 5.0. The arithmetic is done in the same order
//! as Redis's `hllCount`, so both return the same integer for the same registers.

use super::{Histogram, Q, REGISTERS};

/// 1 / (2 ln 2), the estimator's limit constant.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    // The series converges in floating point: stop when a term no longer changes the sum
    // (bounded: x < 1 squares towards 0 within ~64 steps).
    for _ in 0..1100 {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            break;
        }
    }
    z
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    // As in `sigma`: until the sum stops changing (sqrt drives x to 1 within ~60 steps).
    for _ in 0..1100 {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            break;
        }
    }
    z / 3.0
}

/// The estimated number of distinct elements behind `histogram` (how many registers hold
/// each value).
pub fn cardinality(histogram: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - histogram[q + 1] as f64) / m);
    for j in (1..=q).rev() {
        z += histogram[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histogram[0] as f64 / m);
    // Redis rounds half away from zero (llroundl); an empty HLL gives z = inf, so 0.
    (ALPHA_INF * m * m / z).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_registers_count_zero_and_full_ones_count_many() {
        let mut histogram = [0u64; 64];
        histogram[0] = REGISTERS as u64;
        assert_eq!(cardinality(&histogram), 0);
        histogram[0] = REGISTERS as u64 - 1;
        histogram[1] = 1;
        assert_eq!(cardinality(&histogram), 1);
        let mut full = [0u64; 64];
        full[20] = REGISTERS as u64;
        assert!(cardinality(&full) > 1_000_000_000);
    }
}
