//! Per-worker request counters: calls, errors and latency per command, operations per slot,
//! and fan-out sizes.
//!
//! Every worker thread has its own [`WorkerStats`], written only by that thread (see
//! [`super::histogram::bump`]), so recording a request is a handful of uncontended stores
//! into arrays indexed by the command table's dense `CommandSpec::id`: no label lookup, no
//! allocation, no shared cache line. Scrapes sum the workers.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use super::histogram::{bump, HistogramSnapshot, LatencyHistogram};
use crate::cluster::{CommandTable, SLOT_COUNT};

/// Upper bounds of the fan-out size buckets (children per fanned-out request).
pub const FANOUT_BOUNDS: [u64; 9] = [1, 2, 3, 4, 8, 16, 32, 64, 128];

/// Calls, errors and latency of one command on one worker.
#[derive(Debug, Default)]
pub struct CommandCell {
    calls: AtomicU64,
    errors: AtomicU64,
    latency: LatencyHistogram,
}

/// What one worker thread counts.
#[derive(Debug)]
pub struct WorkerStats {
    /// Indexed by `CommandSpec::id`; the last cell counts requests naming no known command.
    commands: Box<[CommandCell]>,
    slot_ops: Box<[AtomicU64]>,
    fanout: [AtomicU64; FANOUT_BOUNDS.len() + 1],
    fanout_sum: AtomicU64,
}

/// The command index of requests that name no known command.
pub fn unknown_command() -> usize {
    CommandTable::get().spec_count()
}

/// A request between dispatch and its reply: which command, and since when.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub command: usize,
    pub start: Instant,
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            commands: (0..=unknown_command())
                .map(|_| CommandCell::default())
                .collect(),
            slot_ops: (0..SLOT_COUNT).map(|_| AtomicU64::new(0)).collect(),
            fanout: Default::default(),
            fanout_sum: AtomicU64::new(0),
        }
    }
}

impl WorkerStats {
    /// Records a reply: one call, an error if the reply is one, and its latency.
    #[inline]
    pub fn record(&self, timing: Timing, reply: &[u8], now: Instant) {
        let Some(cell) = self.commands.get(timing.command) else {
            return;
        };
        bump(&cell.calls, 1);
        if matches!(reply.first(), Some(b'-' | b'!')) {
            bump(&cell.errors, 1);
        }
        cell.latency
            .record(now.saturating_duration_since(timing.start));
    }

    /// Counts one operation on `slot`.
    #[inline]
    pub fn slot_op(&self, slot: u16) {
        if let Some(counter) = self.slot_ops.get(slot as usize) {
            bump(counter, 1);
        }
    }

    /// Records how many children a fanned-out request was split into.
    #[inline]
    pub fn fanout(&self, children: usize) {
        let children = children as u64;
        let k = FANOUT_BOUNDS
            .iter()
            .position(|&b| children <= b)
            .unwrap_or(FANOUT_BOUNDS.len());
        bump(&self.fanout[k], 1);
        bump(&self.fanout_sum, children);
    }
}

/// The workers' counters summed for one command.
#[derive(Debug, Default, Clone)]
pub struct CommandTotals {
    pub calls: u64,
    pub errors: u64,
    pub latency: HistogramSnapshot,
}

/// Sums every worker's command cells; index as `CommandSpec::id` (+ the unknown cell).
pub fn command_totals(workers: &[WorkerStats]) -> Vec<CommandTotals> {
    let mut totals = vec![CommandTotals::default(); unknown_command() + 1];
    for worker in workers {
        for (total, cell) in totals.iter_mut().zip(worker.commands.iter()) {
            total.calls += cell.calls.load(Relaxed);
            total.errors += cell.errors.load(Relaxed);
            cell.latency.add_to(&mut total.latency);
        }
    }
    totals
}

/// Operations per slot, summed over the workers.
pub fn slot_ops(workers: &[WorkerStats]) -> Vec<u64> {
    let mut ops = vec![0u64; SLOT_COUNT];
    for worker in workers {
        for (total, counter) in ops.iter_mut().zip(worker.slot_ops.iter()) {
            *total += counter.load(Relaxed);
        }
    }
    ops
}

/// Fan-out bucket counts (non-cumulative, last = overflow) and the sum of children.
pub fn fanout(workers: &[WorkerStats]) -> ([u64; FANOUT_BOUNDS.len() + 1], u64) {
    let mut buckets = [0u64; FANOUT_BOUNDS.len() + 1];
    let mut sum = 0;
    for worker in workers {
        for (total, counter) in buckets.iter_mut().zip(&worker.fanout) {
            *total += counter.load(Relaxed);
        }
        sum += worker.fanout_sum.load(Relaxed);
    }
    (buckets, sum)
}

/// The `n` largest `(index, value)` pairs with a value above zero, largest first.
pub fn top_n(values: &[u64], n: usize) -> Vec<(usize, u64)> {
    let mut nonzero: Vec<(usize, u64)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, v)| v > 0)
        .collect();
    nonzero.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    nonzero.truncate(n);
    nonzero
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_by_command_id() {
        let workers = [WorkerStats::default(), WorkerStats::default()];
        let get = CommandTable::get().command(b"get").unwrap().id;
        let start = Instant::now();
        let timing = Timing {
            command: get,
            start,
        };
        workers[0].record(timing, b"$1\r\nx\r\n", start);
        workers[1].record(timing, b"-ERR no\r\n", start);
        workers[1].slot_op(7);
        workers[0].fanout(3);
        let totals = command_totals(&workers);
        assert_eq!(totals[get].calls, 2);
        assert_eq!(totals[get].errors, 1);
        assert_eq!(totals[get].latency.count(), 2);
        assert_eq!(slot_ops(&workers)[7], 1);
        assert_eq!(fanout(&workers), ([0, 0, 1, 0, 0, 0, 0, 0, 0, 0], 3));
        assert_eq!(top_n(&[0, 5, 9, 5], 2), vec![(2, 9), (1, 5)]);
    }
}
