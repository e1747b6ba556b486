//! Consumer groups as Redis 7.0 keeps them: a group has a last-delivered id, an
//! `entries_read` counter, a PEL (pending entries list: id → delivery time, count and owner)
//! and consumers, each with its seen time and the ids of the PEL it owns. Consumers and PEL
//! entries refer to each other by name and id, so every change goes through the methods
//! here, which keep the group PEL and the consumers' PELs in step.

use std::collections::{BTreeMap, BTreeSet};

use super::id::StreamId;

/// `entries_read` when the group's position in the stream is unknown
/// (`SCG_INVALID_ENTRIES_READ`).
pub const ENTRIES_READ_UNKNOWN: i64 = -1;

/// A delivered entry not yet acknowledged (a NACK in Redis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Unix milliseconds of the last delivery.
    pub delivery_time: u64,
    pub delivery_count: u64,
    /// The consumer that owns it.
    pub consumer: Vec<u8>,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Unix milliseconds of the consumer's last interaction.
    pub seen_time: u64,
    /// The ids this consumer owns in the group's PEL.
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group: where it is in the stream, what it delivered and to whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub last_id: StreamId,
    /// Entries the group has read, or [`ENTRIES_READ_UNKNOWN`].
    pub entries_read: i64,
    /// The group's pending entries list, by id.
    pub pel: BTreeMap<StreamId, Pending>,
    /// Consumers by name (Redis's radix tree orders names as byte strings).
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

impl ConsumerGroup {
    pub fn new(last_id: StreamId, entries_read: i64) -> ConsumerGroup {
        ConsumerGroup {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Creates consumer `name` seen at `now`; false if it exists (`streamCreateConsumer`).
    pub fn create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        let consumer = Consumer {
            seen_time: now,
            pel: BTreeSet::new(),
        };
        self.consumers.insert(name.to_vec(), consumer);
        true
    }

    /// Marks consumer `name` seen at `now`, creating it if there is none (what reads and
    /// claims do); true if it was created.
    pub fn see_consumer(&mut self, name: &[u8], now: u64) -> bool {
        match self.consumers.get_mut(name) {
            Some(consumer) => {
                consumer.seen_time = now;
                false
            }
            None => self.create_consumer(name, now),
        }
    }

    /// Deletes consumer `name` and its pending entries; how many it had, None if there
    /// was no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pel {
            self.pel.remove(id);
        }
        Some(consumer.pel.len())
    }

    /// Acknowledges `id`: removed from the PEL and its owner's; false if not pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(owner) = self.consumers.get_mut(&pending.consumer) {
            owner.pel.remove(&id);
        }
        true
    }

    /// Records the delivery of `id` to `consumer` (which must exist) at `now`, as a new
    /// read does: a fresh pending entry with one delivery, taken from its previous owner
    /// if it had one (XGROUP SETID can make a group deliver an entry again).
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now: u64) -> &Pending {
        let pending = self.assign(id, consumer, now);
        pending.delivery_time = now;
        pending.delivery_count = 1;
        pending
    }

    /// Makes `consumer` (which must exist) the owner of pending entry `id`, creating the
    /// entry (delivered once, at `now`) if there is none, as XCLAIM's FORCE does. Returns
    /// the entry, whose delivery time and count are the caller's to update.
    pub fn assign(&mut self, id: StreamId, consumer: &[u8], now: u64) -> &mut Pending {
        if let Some(owner) = self.consumers.get_mut(consumer) {
            owner.pel.insert(id);
        }
        let pending = self.pel.entry(id).or_insert_with(|| Pending {
            delivery_time: now,
            delivery_count: 1,
            consumer: Vec::new(),
        });
        if pending.consumer != consumer {
            if let Some(previous) = self.consumers.get_mut(&pending.consumer) {
                previous.pel.remove(&id);
            }
            pending.consumer = consumer.to_vec();
        }
        pending
    }
}

impl super::StreamValue {
    /// Whether `id` is a live entry (`streamEntryExists`).
    pub fn entry_exists(&self, id: StreamId) -> bool {
        self.range(id, id).next().is_some()
    }

    /// A group's `entries_read` once it has read `id` past its last id: one more when the
    /// count was known and no tombstone lies ahead, otherwise estimated from the stream's
    /// counters (the bookkeeping of `streamReplyWithRange`).
    pub fn entries_read_after(&self, entries_read: i64, id: StreamId) -> i64 {
        if entries_read != ENTRIES_READ_UNKNOWN && !self.has_tombstones_from(id) {
            entries_read + 1
        } else if self.entries_added > 0 {
            self.entries_added_up_to(id)
                .map_or(ENTRIES_READ_UNKNOWN, |n| n as i64)
        } else {
            entries_read
        }
    }
}
