//! Consumer groups as Redis 7.0 keeps them, so that streams carrying groups cross DUMP and
//! RDB intact. The commands that create and use groups (XGROUP, XREADGROUP, XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM, XINFO GROUPS / CONSUMERS) come next; today groups arrive only with a
//! restored or loaded stream, and XINFO STREAM shows them.

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
