//! Busy polling: before the worker thread goes to sleep, it watches the client sockets for a
//! short while (`busy-poll-usecs`, 30 µs by default) and stays awake if a request arrives.
//!
//! Why: a sleeping server costs its *clients* CPU. A client whose request finds the server
//! asleep pays for waking it (`try_to_wake_up`, and in a virtual machine an inter-processor
//! interrupt that exits to the hypervisor). Measured with `redis-benchmark -c 50 -P 1` on a
//! 2-core VM: the node needed a third of redis-server's CPU per `LRANGE 0 599`, so it slept
//! three times as often (22,000 vs 6,600 sleeps per 50,000 requests), and the benchmark spent
//! 2 µs more per request waking it. Throughput ended 5–8% below redis-server although the node
//! did less work. Staying awake for a few microseconds when the next request is likely to be
//! close is what Linux's `busy_poll`, Go's spinning scheduler threads and Seastar do.
//!
//! The cost is bounded: at most one budget of CPU per sleep, none while the node is busy
//! (it never sleeps then), and spins that find nothing make the next ones rarer
//! ([`Backoff`]): a client that comes back later than the budget (an application thinking
//! between requests, a slow client library, an idle node's cron) would otherwise cost a
//! whole budget after every batch, for nothing. `busy-poll-usecs 0` turns it off.
//!
//! How: tokio does not let us look at its own epoll set, so the node keeps a second,
//! level-triggered epoll set with the listeners and client connections in it
//! ([`watch`]). [`before_park`] (tokio's `on_thread_park` hook) polls that set without
//! blocking until something is readable or the budget runs out; it consumes nothing, so
//! tokio's own `epoll_wait` then finds the event and does not sleep. A socket closes out of
//! the set by itself when its last descriptor closes. A connection that is readable but not
//! being read (a blocked client with pipelined commands) only ends the spin early.

use std::cell::Cell;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::event::epoll;

/// The default budget in microseconds; see the module documentation for the measurement.
pub const DEFAULT_BUDGET_USECS: u64 = 30;

/// The process's watch set: one per process, like tokio's runtime it serves.
static WATCH_SET: OnceLock<Option<OwnedFd>> = OnceLock::new();
static BUDGET_USECS: AtomicU64 = AtomicU64::new(DEFAULT_BUDGET_USECS);

fn watch_set() -> Option<&'static OwnedFd> {
    WATCH_SET
        .get_or_init(|| epoll::create(epoll::CreateFlags::CLOEXEC).ok())
        .as_ref()
}

/// Sets the budget (`busy-poll-usecs`); 0 turns busy polling off.
pub fn set_budget_usecs(usecs: u64) {
    BUDGET_USECS.store(usecs, Relaxed);
}

/// Adds a listener or client socket to the watch set. Failure only means the spin will not
/// end early for this socket, so it is ignored.
pub fn watch(socket: &impl AsFd) {
    if let Some(set) = watch_set() {
        let _ = epoll::add(
            set,
            socket,
            epoll::EventData::new_u64(0),
            epoll::EventFlags::IN,
        );
    }
}

/// After this many spins in a row found nothing, only one park in `2^MAX_FAILURES` spins.
const MAX_FAILURES: u32 = 6;

/// When to spin: always while spins find work; after `n` empty spins in a row, skip the
/// next `2^n - 1` parks (at most 63), so a thread whose clients come back later than the
/// budget spins on fewer than 2% of its parks, yet tries again soon enough to notice when
/// they speed up. One spin that finds work restores spinning on every park.
///
/// Measured with `tests/bench/eviction.sh` (one Python client, pipelines of 64, some 400 µs
/// between batches): see the README's eviction table for the CPU per operation it saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Backoff {
    failures: u32,
    skip: u32,
}

impl Backoff {
    /// Whether this park should spin; counts a skipped one.
    fn should_spin(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    /// Records whether the spin found a readable socket before its budget ran out.
    fn record(&mut self, found_work: bool) {
        if found_work {
            *self = Backoff::default();
        } else {
            self.failures = (self.failures + 1).min(MAX_FAILURES);
            self.skip = (1 << self.failures) - 1;
        }
    }
}

thread_local! {
    /// Each worker thread's own record: its parks are its own.
    static BACKOFF: Cell<Backoff> = const { Cell::new(Backoff { failures: 0, skip: 0 }) };
}

/// tokio's `on_thread_park` hook: returns as soon as a watched socket is readable, or when
/// the budget has passed; skips the spin while [`Backoff`] says so.
pub fn before_park() {
    let budget = BUDGET_USECS.load(Relaxed);
    if budget == 0 {
        return;
    }
    let Some(set) = watch_set() else {
        return;
    };
    let mut backoff = BACKOFF.get();
    if backoff.should_spin() {
        backoff.record(spin(set, budget));
    }
    BACKOFF.set(backoff);
}

/// Watches `set` for up to `budget` microseconds; true if a socket became readable (or the
/// set broke: either way tokio should poll now).
fn spin(set: &OwnedFd, budget: u64) -> bool {
    let deadline = Instant::now() + Duration::from_micros(budget);
    let no_wait = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut events = [std::mem::MaybeUninit::<epoll::Event>::uninit(); 1];
    loop {
        match epoll::wait(set, &mut events[..], Some(&no_wait)) {
            Ok(([], _)) => {}
            // Readable, or the set is broken: either way, let tokio poll now.
            _ => return true,
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_readable_socket_ends_the_spin_at_once() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        watch(&server);
        client.write_all(b"PING\r\n").unwrap();
        set_budget_usecs(20_000_000);
        let started = Instant::now();
        before_park();
        set_budget_usecs(DEFAULT_BUDGET_USECS);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// Which of `parks` parks spin, when every spin finds work or none does.
    fn spins(parks: usize, found_work: bool) -> Vec<usize> {
        let mut backoff = Backoff::default();
        (0..parks)
            .filter(|_| {
                let spin = backoff.should_spin();
                if spin {
                    backoff.record(found_work);
                }
                spin
            })
            .collect()
    }

    #[test]
    fn spins_that_find_work_go_on_every_park() {
        assert_eq!(spins(100, true), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn empty_spins_become_exponentially_rarer_down_to_one_in_64() {
        assert_eq!(spins(200, false), [0, 2, 6, 14, 30, 62, 126, 190]);
    }

    #[test]
    fn one_spin_that_finds_work_restores_spinning() {
        let mut backoff = Backoff::default();
        for _ in 0..MAX_FAILURES + 3 {
            backoff.record(false);
        }
        assert!(!backoff.should_spin());
        backoff.record(true);
        assert!(backoff.should_spin());
        assert!(backoff.should_spin());
    }
}
