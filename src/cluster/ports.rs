//! Picking loopback ports for cluster nodes that are about to start.
//!
//! A port is only "free" until someone else binds it. Asking the kernel for port 0 returns a
//! port from the *ephemeral* range (Linux: 32768–60999), the same range the kernel hands to
//! every outgoing connection as its source port. Between choosing such a port and the new
//! server binding it, any client connection on the machine can take it, and the server dies
//! with "Address already in use" (CI saw exactly that under the test suite's load).
//!
//! So ports are chosen below the ephemeral range instead: a node port in
//! [`FIRST_PORT`, `LAST_PORT`] and its cluster-bus port (`port + 10000`) below 32768 too, where
//! the kernel never puts a source port. Each candidate is still checked by binding it, and a
//! [`PortPicker`] never hands out the same port twice, so callers starting several servers
//! at once (test threads, `slotproxy --local`) do not collide with each other either.

use std::collections::HashSet;
use std::net::TcpListener;

/// Redis Cluster's bus listens on the client port plus this.
pub const BUS_PORT_OFFSET: u16 = 10000;

/// The lowest node port handed out (above the well-known and registered services most
/// machines run: 6379, 8080, 9090 ...).
pub const FIRST_PORT: u16 = 12000;

/// The highest node port: its bus port (`+ 10000`) stays below Linux's ephemeral range.
pub const LAST_PORT: u16 = 32767 - BUS_PORT_OFFSET;

/// Hands out loopback ports whose bus port is free too, never the same one twice.
#[derive(Debug)]
pub struct PortPicker {
    next: u16,
    handed_out: HashSet<u16>,
}

impl PortPicker {
    /// A picker starting at a place derived from `seed` (a process id, a clock). The seed
    /// is mixed (SplitMix64's finaliser) so that processes started one after another, whose
    /// ids differ by one, start far apart rather than on neighbouring ports.
    pub fn new(seed: u64) -> Self {
        let span = u64::from(LAST_PORT - FIRST_PORT) + 1;
        let mut mixed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^= mixed >> 31;
        // `mixed % span` is below `span` <= u16::MAX, so the conversion cannot fail.
        let offset = u16::try_from(mixed % span).unwrap_or(0);
        PortPicker {
            next: FIRST_PORT + offset,
            handed_out: HashSet::new(),
        }
    }

    /// The next port that is bindable now on 127.0.0.1, together with its bus port, and
    /// was never returned by this picker; `None` when the whole range is taken.
    pub fn pick(&mut self) -> Option<u16> {
        for _ in FIRST_PORT..=LAST_PORT {
            let port = self.next;
            self.next = if port >= LAST_PORT {
                FIRST_PORT
            } else {
                port + 1
            };
            let bus = port + BUS_PORT_OFFSET;
            // A node port handed out earlier may be this one's bus port or the other way
            // round: its server may not be listening yet.
            if self.handed_out.contains(&port) || self.handed_out.contains(&bus) {
                continue;
            }
            let bindable = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
            if bindable(port) && bindable(bus) {
                self.handed_out.insert(port);
                self.handed_out.insert(bus);
                return Some(port);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_stay_below_the_ephemeral_range_and_are_never_repeated() {
        let mut picker = PortPicker::new(u64::from(LAST_PORT));
        let mut seen = HashSet::new();
        for _ in 0..50 {
            let port = picker.pick().expect("a free port");
            assert!((FIRST_PORT..=LAST_PORT).contains(&port), "{port}");
            assert!(port + BUS_PORT_OFFSET < 32768);
            assert!(seen.insert(port), "{port} handed out twice");
        }
    }

    #[test]
    fn a_port_in_use_is_skipped() {
        let mut probe = PortPicker::new(7);
        let taken = probe.pick().expect("a free port");
        let _holder = TcpListener::bind(("127.0.0.1", taken)).expect("bind");
        let mut picker = PortPicker::new(7);
        assert_ne!(picker.pick(), Some(taken));
    }

    #[test]
    fn no_port_is_another_ones_bus_port() {
        let mut picker = PortPicker::new(1);
        let ports: Vec<u16> = (0..200).filter_map(|_| picker.pick()).collect();
        for port in &ports {
            assert!(!ports.contains(&(port + BUS_PORT_OFFSET)), "{port}");
        }
    }

    #[test]
    fn neighbouring_seeds_start_far_apart() {
        let first = PortPicker::new(4242).next;
        let second = PortPicker::new(4243).next;
        assert!(first.abs_diff(second) > 100, "{first} {second}");
    }
}
