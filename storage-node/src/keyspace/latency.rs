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

    /// How many values were recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// LATENCY HISTOGRAM's cumulative distribution, as Redis walks its histogram with
    /// `hdr_iter_log_init(.., 1024, 2)`: for each power of two from 1024 ns, the bucket
    /// holding it gives a point (that bucket's highest value in whole microseconds, the
    /// count up to and including it), kept only where the count grew.
    pub fn cumulative_by_powers_of_two(&self) -> Vec<(u64, u64)> {
        /// The last level inside Redis's trackable range (1 s, rounded up to a bucket).
        const LAST_LEVEL: u64 = 1 << 29;
        let mut points = Vec::new();
        let (mut cumulative, mut next_index, mut level) = (0u64, 0usize, 1024u64);
        while cumulative < self.total && level <= LAST_LEVEL {
            let bucket = index_of(level);
            while next_index <= bucket {
                cumulative += self.counts.get(next_index).copied().unwrap_or(0);
                next_index += 1;
            }
            let grew = points.last().is_none_or(|&(_, before)| cumulative > before);
            if cumulative > 0 && grew {
                points.push((bucket_range(bucket).1 / 1000, cumulative));
            }
            level *= 2;
        }
        points
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

    #[test]
    fn the_distribution_steps_by_powers_of_two() {
        let mut h = Histogram::default();
        for micros in [0, 1, 3, 40] {
            h.record(micros * 1000);
        }
        // Redis's points: 1 us (values up to 1031 ns), 4, 33 (for 32768..33023 ns), 66.
        assert_eq!(
            h.cumulative_by_powers_of_two(),
            vec![(1, 2), (4, 3), (66, 4)]
        );
    }
}
