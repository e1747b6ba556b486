//! The latency monitor (LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR): for each event
//! class that took at least `latency-monitor-threshold` milliseconds (0 turns the monitor
//! off), the worst latency of each second, in a ring of 160 samples, and the all-time
//! maximum, as Redis 7.0's `latency.c` keeps them.
//!
//! Events recorded here, where Redis records them: `command` and `fast-command` (a command
//! that ran, by its `fast` flag) and `expire-cycle` (a step of the active expiry).

use std::collections::BTreeMap;

/// Redis's `LATENCY_TS_LEN`.
pub const SAMPLES: usize = 160;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Unix seconds; 0 for a slot never written.
    pub time: u64,
    /// Milliseconds.
    pub latency: u64,
}

/// One event class's samples.
#[derive(Debug, Clone)]
pub struct Series {
    /// The slot the next new second goes to.
    next: usize,
    pub max: u64,
    samples: [Sample; SAMPLES],
}

impl Series {
    fn new() -> Series {
        Series {
            next: 0,
            max: 0,
            samples: [Sample::default(); SAMPLES],
        }
    }

    /// The newest sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.next + SAMPLES - 1) % SAMPLES]
    }

    /// The samples written so far, oldest first.
    pub fn history(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..SAMPLES)
            .map(move |j| self.samples[(self.next + j) % SAMPLES])
            .filter(|s| s.time != 0)
    }
}

#[derive(Debug, Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in milliseconds; 0 is off.
    pub threshold_ms: u64,
    /// By name, so LATEST and DOCTOR list events in a stable order.
    events: BTreeMap<&'static str, Series>,
}

impl LatencyMonitor {
    /// Records that `event` took `latency_ms`, if the monitor is on and that reaches the
    /// threshold (Redis's `latencyAddSampleIfNeeded`).
    pub fn add_if_needed(&mut self, event: &'static str, latency_ms: u64) {
        if self.threshold_ms == 0 || latency_ms < self.threshold_ms {
            return;
        }
        let now = crate::keyspace::unix_time_ms() / 1000;
        self.add(event, latency_ms, now);
    }

    fn add(&mut self, event: &'static str, latency: u64, now: u64) {
        let series = self.events.entry(event).or_insert_with(Series::new);
        series.max = series.max.max(latency);
        // Within one second only the worst latency is kept.
        let previous = (series.next + SAMPLES - 1) % SAMPLES;
        if series.samples[previous].time == now {
            let sample = &mut series.samples[previous];
            sample.latency = sample.latency.max(latency);
            return;
        }
        series.samples[series.next] = Sample { time: now, latency };
        series.next = (series.next + 1) % SAMPLES;
    }

    pub fn events(&self) -> impl Iterator<Item = (&'static str, &Series)> + '_ {
        self.events.iter().map(|(name, series)| (*name, series))
    }

    pub fn event(&self, name: &[u8]) -> Option<&Series> {
        self.events
            .iter()
            .find(|(event, _)| event.as_bytes() == name)
            .map(|(_, series)| series)
    }

    /// Forgets one event class; whether it had samples.
    pub fn reset_event(&mut self, name: &[u8]) -> bool {
        let found = self
            .events
            .keys()
            .find(|event| event.as_bytes() == name)
            .copied();
        found.is_some_and(|event| self.events.remove(event).is_some())
    }

    /// Forgets every event class; how many there were.
    pub fn reset(&mut self) -> usize {
        let count = self.events.len();
        self.events.clear();
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_keeps_the_worst() {
        let mut monitor = LatencyMonitor::default();
        monitor.add("command", 5, 100);
        monitor.add("command", 9, 100);
        monitor.add("command", 3, 100);
        monitor.add("command", 4, 101);
        let series = monitor.event(b"command").unwrap();
        let history: Vec<_> = series.history().map(|s| (s.time, s.latency)).collect();
        assert_eq!(history, vec![(100, 9), (101, 4)]);
        assert_eq!(series.max, 9);
        assert_eq!(series.latest().latency, 4);
    }

    #[test]
    fn the_ring_keeps_the_last_160_seconds() {
        let mut monitor = LatencyMonitor::default();
        for second in 1..=200 {
            monitor.add("command", second, second);
        }
        let series = monitor.event(b"command").unwrap();
        assert_eq!(series.history().count(), SAMPLES);
        assert_eq!(series.history().next().map(|s| s.time), Some(41));
        assert!(monitor.reset_event(b"command"));
        assert_eq!(monitor.reset(), 0);
    }
}
