//! INFO clients' `client_recent_max_input_buffer` and `client_recent_max_output_buffer`:
//! the largest query buffer and output backlog any client had over the last seconds.
//!
//! As Redis's `clientsCronTrackExpansiveClients`, a cron visits every client about once a
//! second and keeps the largest figures seen in one slot per second of the last
//! [`SLOTS`] seconds; INFO answers the largest over the slots. A client that held a big
//! reply and then drained it still shows for a few seconds, so a monitoring poll catches the
//! peak. The cron reads each client's figures with plain loads: the connections pay nothing.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::clients::{lock, ClientHandle};
use super::Shared;

/// Seconds a peak is remembered (Redis's `CLIENTS_PEAK_MEM_USAGE_SLOTS`).
const SLOTS: usize = 8;
/// How often the cron visits every client.
const VISIT_PERIOD: Duration = Duration::from_secs(1);

/// The largest figures seen during one second.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Seconds since the node started that this slot describes.
    second: u64,
    input: usize,
    output: usize,
}

#[derive(Debug, Default)]
pub struct RecentPeaks {
    slots: Mutex<[Slot; SLOTS]>,
}

impl RecentPeaks {
    /// Records figures seen at `second` (seconds since the node started).
    fn record(&self, second: u64, input: usize, output: usize) {
        let mut slots = lock(&self.slots);
        let slot = &mut slots[(second % SLOTS as u64) as usize];
        if slot.second != second {
            // The slot last described a second that has now dropped out of the window.
            *slot = Slot {
                second,
                input: 0,
                output: 0,
            };
        }
        slot.input = slot.input.max(input);
        slot.output = slot.output.max(output);
    }

    /// (largest query buffer, largest output backlog) over the last [`SLOTS`] seconds.
    pub fn recent_max(&self, now_second: u64) -> (usize, usize) {
        lock(&self.slots)
            .iter()
            .filter(|slot| now_second.saturating_sub(slot.second) < SLOTS as u64)
            .fold((0, 0), |(input, output), slot| {
                (input.max(slot.input), output.max(slot.output))
            })
    }
}

/// Bytes produced for a client and not yet handed to its socket, as Redis's
/// `getClientOutputBufferMemoryUsage` counts them: the part of a reply the socket has not
/// taken yet, and the pushes other connections queued (pub/sub messages, notifications).
pub fn output_waiting(client: &ClientHandle) -> usize {
    client.reply_unwritten.load(Relaxed) + client.mailbox_bytes.load(Relaxed)
}

/// Seconds since the node started: the clock both the cron and INFO use for the slots.
pub fn current_second(shared: &Shared) -> u64 {
    shared.started.elapsed().as_secs()
}

/// Visits every client once per [`VISIT_PERIOD`] for as long as the node runs.
pub async fn sample_forever(shared: Arc<Shared>) {
    let mut ticker = tokio::time::interval(VISIT_PERIOD);
    loop {
        ticker.tick().await;
        let (input, output) =
            shared
                .clients
                .snapshot()
                .iter()
                .fold((0, 0), |(input, output), client| {
                    (
                        input.max(client.query_buffer.load(Relaxed)),
                        output.max(output_waiting(client)),
                    )
                });
        shared
            .client_peaks
            .record(current_second(&shared), input, output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_is_remembered_for_the_window_then_forgotten() {
        let peaks = RecentPeaks::default();
        peaks.record(10, 5, 4_000_000);
        peaks.record(11, 7, 0);
        assert_eq!(peaks.recent_max(11), (7, 4_000_000));
        assert_eq!(peaks.recent_max(17), (7, 4_000_000));
        assert_eq!(peaks.recent_max(18), (7, 0));
        // Second 18 reuses second 10's slot: the old peak does not leak into it.
        peaks.record(18, 1, 2);
        assert_eq!(peaks.recent_max(18), (7, 2));
    }
}
