//! Server-wide counters shown by INFO and reset by CONFIG RESETSTAT.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// Counters updated from every connection without taking the keyspace lock.
        #[derive(Default, Debug)]
        pub struct Stats {
            $(pub $name: AtomicU64,)*
        }

        impl Stats {
            /// Zeroes every counter (CONFIG RESETSTAT).
            pub fn reset(&self) {
                $(self.$name.store(0, Relaxed);)*
            }
        }
    };
}

counters! {
    total_connections_received,
    total_commands_processed,
    rejected_connections,
    total_net_input_bytes,
    total_net_output_bytes,
    keyspace_hits,
    keyspace_misses,
    total_error_replies,
    expired_keys_reset_base,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }
}
