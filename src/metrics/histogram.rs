//! Lock-free latency histograms with fixed exponential buckets, cheap enough for the request
//! path, and a plain snapshot that sums them at scrape time.
//!
//! Buckets are `10µs · 2^k` for `k = 0..=20` (10 µs .. ~10.5 s) plus an overflow bucket.
//! The bucket of a sample is found with one division and a `leading_zeros`, no search.
//!
//! Each histogram has exactly one writing thread (a worker's command cells, a backend
//! connection's reader task), so [`bump`] is a plain load + store: no locked read-modify-write
//! on the request path. Scrapes read with relaxed loads; a scrape may see a sample in a
//! bucket before it sees it in the sum, which Prometheus tolerates.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Finite buckets; index `BUCKETS` is the overflow (`+Inf` only).
pub const BUCKETS: usize = 21;
/// The smallest upper bound, in nanoseconds.
const FIRST_BOUND_NS: u64 = 10_000;

/// Adds `n` to a counter that only the calling thread writes.
#[inline]
pub fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// The upper bound of finite bucket `k`, in seconds.
pub fn bound_seconds(k: usize) -> f64 {
    (FIRST_BOUND_NS << k) as f64 / 1e9
}

/// The bucket index of a duration (upper bounds are inclusive, as in Prometheus).
#[inline]
pub fn bucket_of(nanos: u64) -> usize {
    let units = nanos.saturating_sub(1) / FIRST_BOUND_NS;
    ((64 - units.leading_zeros()) as usize).min(BUCKETS)
}

/// A histogram written by one thread.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; BUCKETS + 1],
    sum_nanos: AtomicU64,
}

impl LatencyHistogram {
    #[inline]
    pub fn record(&self, elapsed: Duration) {
        self.record_n(elapsed, 1);
    }

    /// Records `n` requests that each took `elapsed` (commands answered together).
    pub fn record_n(&self, elapsed: Duration, n: u64) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        bump(&self.buckets[bucket_of(nanos)], n);
        bump(&self.sum_nanos, nanos.saturating_mul(n));
    }

    /// Adds this histogram's current counts to `into`.
    pub fn add_to(&self, into: &mut HistogramSnapshot) {
        for (total, bucket) in into.buckets.iter_mut().zip(&self.buckets) {
            *total += bucket.load(Relaxed);
        }
        into.sum_nanos += self.sum_nanos.load(Relaxed);
    }
}

/// Summed, non-cumulative bucket counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub buckets: [u64; BUCKETS + 1],
    pub sum_nanos: u64,
}

impl HistogramSnapshot {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.sum_nanos += other.sum_nanos;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_have_inclusive_upper_bounds() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(10_000), 0);
        assert_eq!(bucket_of(10_001), 1);
        assert_eq!(bucket_of(20_000), 1);
        assert_eq!(bucket_of(20_001), 2);
        assert_eq!(bucket_of(40_000), 2);
        assert_eq!(bucket_of(10_000 << 20), 20);
        assert_eq!(bucket_of((10_000 << 20) + 1), BUCKETS);
        assert_eq!(bucket_of(u64::MAX), BUCKETS);
        for k in 0..BUCKETS {
            let bound = (bound_seconds(k) * 1e9).round() as u64;
            assert_eq!(bucket_of(bound), k);
            assert_eq!(bucket_of(bound + 1), k + 1);
        }
        assert!((bound_seconds(20) - 10.48576).abs() < 1e-9);
    }

    #[test]
    fn records_and_snapshots() {
        let h = LatencyHistogram::default();
        h.record(Duration::from_micros(15));
        h.record(Duration::from_secs(60));
        let mut snap = HistogramSnapshot::default();
        h.add_to(&mut snap);
        assert_eq!(snap.count(), 2);
        assert_eq!(snap.buckets[1], 1);
        assert_eq!(snap.buckets[BUCKETS], 1);
        assert_eq!(snap.sum_nanos, 15_000 + 60_000_000_000);
    }
}
