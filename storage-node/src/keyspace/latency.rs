//! Per-command latency histograms for INFO `latencystats`, laid out as Redis's
//! `hdr_histogram` with 2 significant digits: exact below 256 ns, then 128 buckets per
//! power of two. Percentiles answer the bucket's highest value (its lowest for p0), as
//! `hdr_value_at_percentile` does, so the node reports the same quantised numbers.

/// Redis records between 1 ns and 1 s (`LATENCY_HISTOGRAM_MIN/MAX_VALUE`).
const MIN_VALUE: u64 = 1;
const MAX_VALUE: u64 = 1_000_000_000;
const EXACT: u64 = 256;
const HALF: u64 = 128;

#[derive(Default, Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

fn index_of(value: u64) -> usize {
    let value = value.clamp(MIN_VALUE, MAX_VALUE);
    if value < EXACT {
        return value as usize;
    }
    let shift = u64::from(63 - value.leading_zeros()) - 7;
    let sub = value >> shift;
    (EXACT + (shift - 1) * HALF + (sub - HALF)) as usize
}

/// The lowest and highest values that fall in bucket `index`.
fn bucket_range(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < EXACT {
        return (index, index);
    }
    let k = index - EXACT;
    let shift = k / HALF + 1;
    let sub = k % HALF + HALF;
    (sub << shift, ((sub + 1) << shift) - 1)
}

impl Histogram {
    pub fn record(&mut self, nanos: u64) {
        let index = index_of(nanos);
        if self.counts.len() <= index {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += 1;
        self.total += 1;
    }

    /// The value at `percentile` (0 to 100), in nanoseconds.
    pub fn value_at(&self, percentile: f64) -> u64 {
        let wanted = ((percentile.min(100.0) / 100.0) * self.total as f64 + 0.5) as u64;
        let wanted = wanted.max(1);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= wanted {
                let (low, high) = bucket_range(index);
                return if percentile == 0.0 { low } else { high };
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quantised_as_redis_reports_them() {
        let mut h = Histogram::default();
        h.record(3000);
        // redis-server 7.0 shows p50=3.007,p0=2.992 (microseconds) for one 3 us call.
        assert_eq!(h.value_at(50.0), 3007);
        assert_eq!(h.value_at(0.0), 2992);
        h.record(100);
        assert_eq!(h.value_at(0.0), 100);
        assert_eq!(h.value_at(100.0), 3007);
    }
}
