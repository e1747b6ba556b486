//! Building Prometheus metric families by hand at scrape time, for figures that live in the
//! proxy's own atomics (so the request path never touches a `prometheus` handle).

use prometheus::proto::{
    Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType,
};

use crate::metrics::histogram::{bound_seconds, HistogramSnapshot, BUCKETS};

/// One family under construction.
pub struct Family(MetricFamily);

fn labels(pairs: &[(&str, &str)]) -> Vec<LabelPair> {
    pairs
        .iter()
        .map(|(name, value)| {
            let mut pair = LabelPair::default();
            pair.set_name(name.to_string());
            pair.set_value(value.to_string());
            pair
        })
        .collect()
}

impl Family {
    fn new(name: &str, help: &str, kind: MetricType) -> Family {
        let mut family = MetricFamily::default();
        family.set_name(name.to_string());
        family.set_help(help.to_string());
        family.set_field_type(kind);
        Family(family)
    }

    pub fn counter(name: &str, help: &str) -> Family {
        Family::new(name, help, MetricType::COUNTER)
    }

    pub fn gauge(name: &str, help: &str) -> Family {
        Family::new(name, help, MetricType::GAUGE)
    }

    pub fn histogram(name: &str, help: &str) -> Family {
        Family::new(name, help, MetricType::HISTOGRAM)
    }

    /// Adds a sample to a counter or gauge family.
    pub fn add(&mut self, pairs: &[(&str, &str)], value: f64) -> &mut Family {
        let mut metric = Metric::from_label(labels(pairs));
        match self.0.get_field_type() {
            MetricType::COUNTER => {
                let mut counter = Counter::default();
                counter.set_value(value);
                metric.set_counter(counter);
            }
            _ => {
                let mut gauge = Gauge::default();
                gauge.set_value(value);
                metric.set_gauge(gauge);
            }
        }
        self.0.mut_metric().push(metric);
        self
    }

    /// Adds a latency histogram (seconds) to a histogram family.
    pub fn add_latency(&mut self, pairs: &[(&str, &str)], snapshot: &HistogramSnapshot) {
        let mut cumulative = 0;
        let buckets: Vec<Bucket> = (0..BUCKETS)
            .map(|k| {
                cumulative += snapshot.buckets[k];
                let mut bucket = Bucket::default();
                bucket.set_upper_bound(bound_seconds(k));
                bucket.set_cumulative_count(cumulative);
                bucket
            })
            .collect();
        self.add_histogram(
            pairs,
            buckets,
            snapshot.count(),
            snapshot.sum_nanos as f64 / 1e9,
        );
    }

    /// Adds a histogram with explicit (cumulative) buckets.
    pub fn add_histogram(
        &mut self,
        pairs: &[(&str, &str)],
        buckets: Vec<Bucket>,
        count: u64,
        sum: f64,
    ) {
        let mut histogram = Histogram::default();
        histogram.set_bucket(buckets);
        histogram.set_sample_count(count);
        histogram.set_sample_sum(sum);
        let mut metric = Metric::from_label(labels(pairs));
        metric.set_histogram(histogram);
        self.0.mut_metric().push(metric);
    }

    pub fn finish(self) -> MetricFamily {
        self.0
    }
}

/// A cumulative bucket.
pub fn bucket(upper_bound: f64, cumulative: u64) -> Bucket {
    let mut bucket = Bucket::default();
    bucket.set_upper_bound(upper_bound);
    bucket.set_cumulative_count(cumulative);
    bucket
}
