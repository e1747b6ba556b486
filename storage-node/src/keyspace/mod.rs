//! The node's data: its databases, lazy and active expiry, and the clock commands see.

pub mod blocking;
mod db;
mod entry;
pub mod scan;

pub use db::{lru_clock, Db};
pub use entry::Entry;

use std::time::{SystemTime, UNIX_EPOCH};

/// The current Unix time in milliseconds.
pub fn unix_time_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// All databases of the node.
pub struct Keyspace {
    dbs: Vec<Db>,
    /// Clients blocked on keys of any database.
    pub blocking: blocking::BlockingRegistry,
    now_ms: u64,
    /// Where the active expiry cycle continues, per database.
    expire_cursor: Vec<usize>,
}

impl Keyspace {
    pub fn new(databases: usize) -> Keyspace {
        Keyspace {
            dbs: (0..databases.max(1)).map(|_| Db::default()).collect(),
            blocking: blocking::BlockingRegistry::default(),
            now_ms: unix_time_ms(),
            expire_cursor: vec![0; databases.max(1)],
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
        let db = &mut self.dbs[index];
        db.now_ms = now;
        db
    }

    /// Two distinct databases at once (MOVE, COPY ... DB).
    pub fn two_dbs(&mut self, a: usize, b: usize) -> (&mut Db, &mut Db) {
        assert_ne!(a, b, "two_dbs needs distinct databases");
        let now = self.now_ms;
        let (low, high) = (a.min(b), a.max(b));
        let (left, right) = self.dbs.split_at_mut(high);
        let (first, second) = (&mut left[low], &mut right[0]);
        first.now_ms = now;
        second.now_ms = now;
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
        self.dbs.iter_mut().for_each(Db::clear);
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
        for index in 0..self.dbs.len() {
            let from = self.expire_cursor[index];
            self.expire_cursor[index] = self.db(index).expire_slots(from, budget);
        }
    }
}
