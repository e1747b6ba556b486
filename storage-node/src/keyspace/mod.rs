//! The node's data: its databases, lazy and active expiry, and the clock commands see.

pub mod access;
pub mod blocking;
pub mod command_stats;
mod db;
mod entry;
pub mod error_stats;
pub mod evict;
pub mod latency;
pub mod latency_monitor;
pub mod lfu;
pub mod memory;
pub mod monitors;
pub mod read_ahead;
pub mod redact;
pub mod scan;
mod slot_table;
pub mod slowlog;
pub mod snapshot_cow;
pub mod tracking;
mod watch;

pub use db::{Db, DbEvent, Expiry};
pub use entry::Entry;
pub use slot_table::Stored;

use std::time::{SystemTime, UNIX_EPOCH};

/// The current Unix time in milliseconds.
pub fn unix_time_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// How old the system clock reading behind [`WallClock`] may get before it is read again.
const WALL_CLOCK_RESYNC: std::time::Duration = std::time::Duration::from_millis(100);

/// The Unix time in milliseconds at a monotonic [`std::time::Instant`]: one reading of the
/// system clock kept as a base, so a command reads one clock (the monotonic one, which also
/// times it) instead of two. The base is read again once it is [`WALL_CLOCK_RESYNC`] old,
/// so a step of the system clock (as `settimeofday` or an NTP step) shows within that time;
/// a slewed clock runs at the same rate as the monotonic one.
#[derive(Debug)]
pub struct WallClock {
    base: std::time::Instant,
    base_ms: u64,
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock {
            base: std::time::Instant::now(),
            base_ms: unix_time_ms(),
        }
    }
}

impl WallClock {
    pub fn unix_ms_at(&mut self, at: std::time::Instant) -> u64 {
        let since = at.saturating_duration_since(self.base);
        if since >= WALL_CLOCK_RESYNC || at < self.base {
            self.base = at;
            self.base_ms = unix_time_ms();
            return self.base_ms;
        }
        self.base_ms + since.as_millis() as u64
    }
}

/// All databases of the node.
///
/// `Default` is an empty stand-in with no databases: a running script takes the keyspace
/// out of its lock guard for the run (see `scripting::call::Lent`), leaving this behind.
#[derive(Default)]
pub struct Keyspace {
    dbs: Vec<Db>,
    /// Clients blocked on keys of any database.
    pub blocking: blocking::BlockingRegistry,
    now_ms: u64,
    /// Where the active expiry cycle continues, per database.
    expire_cursor: Vec<usize>,
    /// Channel, pattern and shard channel subscribers.
    pub pubsub: crate::pubsub::Registry,
    /// `notify-keyspace-events`, copied from the settings.
    pub notify_flags: u32,
    /// WATCHed keys over all databases, so commands skip the watch bookkeeping when none.
    watch_count: usize,
    /// Error replies by code (INFO `errorstats`).
    pub error_stats: error_stats::ErrorStats,
    /// Calls, time and failures by command (INFO `commandstats`).
    pub command_stats: command_stats::CommandStats,
    /// The stream of writes for the AOF (and replicas).
    pub propagation: crate::propagation::Propagation,
    /// How the running command's lookups treat expired keys (a replica's differ; set by
    /// `cmd::dispatch`).
    pub expiry: Expiry,
    /// SLOWLOG's entries.
    pub slowlog: slowlog::SlowLog,
    /// LATENCY's event samples.
    pub latency_monitor: latency_monitor::LatencyMonitor,
    /// The clients in MONITOR mode.
    pub monitors: monitors::Monitors,
    /// The clock commands read their `now` from (see `cmd::dispatch`).
    pub wall_clock: WallClock,
    /// CLIENT TRACKING's invalidation table and prefixes.
    pub tracking: tracking::Tracking,
    /// Some database may record changed keys for tracking (its `modified.on` was set):
    /// while false, none does, and the end of a command skips looking (see
    /// `tracking::invalidate_changed`).
    modified_recording: bool,
    /// `maxmemory`'s eviction state.
    pub eviction: evict::Eviction,
}

impl Keyspace {
    pub fn new(databases: usize) -> Keyspace {
        Keyspace {
            dbs: (0..databases.max(1)).map(|_| Db::default()).collect(),
            blocking: blocking::BlockingRegistry::default(),
            now_ms: unix_time_ms(),
            expire_cursor: vec![0; databases.max(1)],
            pubsub: crate::pubsub::Registry::default(),
            notify_flags: 0,
            watch_count: 0,
            error_stats: error_stats::ErrorStats::default(),
            command_stats: command_stats::CommandStats::default(),
            propagation: crate::propagation::Propagation::default(),
            expiry: Expiry::Remove,
            slowlog: slowlog::SlowLog::default(),
            latency_monitor: latency_monitor::LatencyMonitor::default(),
            monitors: monitors::Monitors::default(),
            wall_clock: WallClock::default(),
            tracking: tracking::Tracking::default(),
            modified_recording: false,
            eviction: evict::Eviction::default(),
        }
    }

    /// Copies the settings the keyspace consults on every command (at start and after
    /// CONFIG SET).
    pub fn apply_settings(&mut self, config: &crate::config::Config) {
        self.notify_flags = config.notify_keyspace_events;
        self.pubsub.limit = config.client_output_buffer_limit.pubsub;
        self.command_stats.latency_tracking = config.latency_tracking;
        self.propagation.unlink_expired = config.lazyfree_lazy_expire;
        self.slowlog.slower_than = config.slowlog_log_slower_than;
        self.slowlog.max_len = config.slowlog_max_len;
        self.latency_monitor.threshold_ms = config.latency_monitor_threshold;
        self.tracking.max_keys = config.tracking_table_max_keys;
        self.eviction.settings = Some(config.memory.clone());
        let lfu = config.lfu();
        self.dbs.iter_mut().for_each(|db| db.lfu = lfu);
        // Events recorded under the old flags must not be published under the new ones.
        self.dbs.iter_mut().for_each(|db| db.events.clear());
    }

    /// Publishes a keyspace notification for `key` in database `db` if its class is
    /// enabled (see `pubsub::notify`). The client `me` gets its own copy in `my_out`.
    pub fn notify(
        &mut self,
        class: u32,
        event: &str,
        key: &[u8],
        db: usize,
        me: u64,
        my_out: &mut bytes::BytesMut,
    ) {
        self.publish_db_events(me, my_out);
        self.emit(class, event, key, db, me, my_out);
    }

    fn emit(
        &mut self,
        class: u32,
        event: &str,
        key: &[u8],
        db: usize,
        me: u64,
        my_out: &mut bytes::BytesMut,
    ) {
        if self.notify_flags & class == 0 {
            return;
        }
        for (channel, message) in crate::pubsub::notify::channels(self.notify_flags, db, event, key)
            .into_iter()
            .flatten()
        {
            self.pubsub.publish(&channel, &message, false, me, my_out);
        }
    }

    /// Publishes the expiries and key creations the databases recorded.
    pub fn publish_db_events(&mut self, me: u64, my_out: &mut bytes::BytesMut) {
        use crate::pubsub::notify;
        if self.notify_flags & (notify::EXPIRED | notify::NEW) == 0 {
            return;
        }
        for index in 0..self.dbs.len() {
            if self.dbs[index].events.is_empty() {
                continue;
            }
            let events = std::mem::take(&mut self.dbs[index].events);
            for (event, key) in events {
                let (class, name) = match event {
                    DbEvent::Expired => (notify::EXPIRED, "expired"),
                    DbEvent::New => (notify::NEW, "new"),
                };
                self.emit(class, name, key.as_slice(), index, me, my_out);
            }
        }
    }

    /// Bookkeeping after every command (nested ones inside EXEC or a script too): watched
    /// keys changed in place are touched and the databases' own events are published.
    pub fn after_command(&mut self, me: u64, my_out: &mut bytes::BytesMut) {
        self.settle_write_lookups();
        self.publish_db_events(me, my_out);
        self.signal_vanished_streams();
        self.invalidate_changed(me, my_out);
    }

    /// Group readers wait on streams that a DEL, an overwrite, a RENAME or an expiry may
    /// have removed: such keys are signalled, so the readers answer Redis's `UNBLOCKED the
    /// stream key no longer exists` once the command is over.
    fn signal_vanished_streams(&mut self) {
        for (db, key) in self.blocking.group_reader_keys() {
            let is_stream = self
                .dbs
                .get_mut(db)
                .and_then(|d| d.peek(&key))
                .is_some_and(|entry| matches!(entry.value, crate::types::Value::Stream(_)));
            if !is_stream {
                self.blocking.signal_ready(db, &key);
            }
        }
    }

    pub fn db_count(&self) -> usize {
        self.dbs.len()
    }

    /// Freezes the clock that expiry checks use for the next command (Redis caches the time
    /// once per command too, so a command sees one consistent instant).
    pub fn set_now(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
    }

    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// A database, with its clock set to the keyspace's.
    pub fn db(&mut self, index: usize) -> &mut Db {
        let now = self.now_ms;
        let log_events = self.logged_events();
        let log_expired = self.propagation.enabled();
        let expiry = self.expiry;
        let tracked = self.tracking.active();
        self.modified_recording |= tracked;
        let db = &mut self.dbs[index];
        db.modified.on = tracked;
        db.expiry = expiry;
        db.now_ms = now;
        db.log_events = log_events;
        db.log_expired = log_expired;
        db
    }

    /// Moves the keys the databases removed as expired into the propagated stream, as DEL
    /// commands. Returns how many (each added one to `dirty`).
    pub fn propagate_expired(&mut self) -> u64 {
        let mut count = 0;
        for index in 0..self.dbs.len() {
            if self.dbs[index].expired_log.is_empty() {
                continue;
            }
            for key in std::mem::take(&mut self.dbs[index].expired_log) {
                self.propagation.expired(index, &key);
                count += 1;
            }
        }
        count
    }

    /// The notification classes databases record events for: none unless notifications
    /// are published on some channel.
    fn logged_events(&self) -> u32 {
        use crate::pubsub::notify::{KEYEVENT, KEYSPACE};
        if self.notify_flags & (KEYSPACE | KEYEVENT) == 0 {
            0
        } else {
            self.notify_flags
        }
    }

    /// Two distinct databases at once (MOVE, COPY ... DB).
    pub fn two_dbs(&mut self, a: usize, b: usize) -> (&mut Db, &mut Db) {
        assert_ne!(a, b, "two_dbs needs distinct databases");
        self.modified_recording |= self.tracking.active();
        let now = self.now_ms;
        let log_events = self.logged_events();
        let (low, high) = (a.min(b), a.max(b));
        let (left, right) = self.dbs.split_at_mut(high);
        let (first, second) = (&mut left[low], &mut right[0]);
        first.now_ms = now;
        second.now_ms = now;
        first.log_events = log_events;
        second.log_events = log_events;
        let log_expired = self.propagation.enabled();
        first.log_expired = log_expired;
        second.log_expired = log_expired;
        first.expiry = self.expiry;
        second.expiry = self.expiry;
        let tracked = self.tracking.active();
        first.modified.on = tracked;
        second.modified.on = tracked;
        if a < b {
            (first, second)
        } else {
            (second, first)
        }
    }

    pub fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a != b {
            let (x, y) = self.two_dbs(a, b);
            x.swap_contents(y);
        }
    }

    pub fn flush_all(&mut self) {
        let now = self.now_ms;
        self.dbs.iter_mut().for_each(|db| {
            db.now_ms = now;
            db.clear()
        });
    }

    /// Total keys removed by expiry, lazily or actively.
    pub fn expired_keys(&self) -> u64 {
        self.dbs.iter().map(|d| d.expired_keys).sum()
    }

    /// Read lookups that hit and missed, summed over databases.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        self.dbs
            .iter()
            .fold((0, 0), |(h, m), d| (h + d.hits, m + d.misses))
    }

    /// Writes since start, summed over databases.
    pub fn dirty(&self) -> u64 {
        self.dbs.iter().map(|d| d.dirty).sum()
    }

    /// One step of the active expiry cycle: visits `budget` slot tables of each database
    /// that has keys with a TTL.
    pub fn active_expire_step(&mut self, budget: usize) {
        let started = std::time::Instant::now();
        for index in 0..self.dbs.len() {
            let from = self.expire_cursor[index];
            self.expire_cursor[index] = self.db(index).expire_slots(from, budget);
            for key in std::mem::take(&mut self.dbs[index].expired_log) {
                self.propagation.expired(index, &key);
            }
        }
        let took_ms = started.elapsed().as_millis() as u64;
        self.latency_monitor.add_if_needed("expire-cycle", took_ms);
        // No client runs this: nobody's reply buffer receives messages.
        self.after_command(0, &mut bytes::BytesMut::new());
        self.flush_tracking(0, &mut bytes::BytesMut::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn the_wall_clock_follows_the_monotonic_clock_and_rebases_after_a_while() {
        let mut clock = WallClock::default();
        let (base, base_ms) = (clock.base, clock.base_ms);
        assert_eq!(
            clock.unix_ms_at(base + Duration::from_millis(40)),
            base_ms + 40
        );
        // Past the resync age the system clock is read again (and becomes the base).
        let later = base + Duration::from_secs(3600);
        let read_again = clock.unix_ms_at(later);
        assert!(
            read_again < base_ms + 3_600_000,
            "rebased on the system clock"
        );
        assert!(read_again.abs_diff(unix_time_ms()) < 1000);
        assert_eq!(clock.base, later);
        // An instant before the base (another clock reading taken earlier) rebases too.
        let before = clock.unix_ms_at(Instant::now() - Duration::from_millis(1));
        assert!(before.abs_diff(unix_time_ms()) < 1000);
    }
}
