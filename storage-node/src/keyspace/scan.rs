//! SCAN's cursor over a [`Db`].
//!
//! # Guarantee
//! As in Redis: a full iteration (cursor 0 back to cursor 0) returns every key that was
//! present for the whole iteration at least once, even while keys are added and removed
//! between calls. Keys added or removed meanwhile may or may not be returned.
//!
//! # Cursor format
//! A cursor is a `u64`:
//! - bits 0..14: the hash slot to continue in (keys never change slot);
//! - bits 14..64: a *rank threshold* inside that slot. A key's rank is the top 50 bits of
//!   its table hash ([`Db::key_hash`]), which is fixed while the key exists, so the keys of
//!   a slot have a total order that no insert, removal or table resize disturbs. Every key
//!   of the slot whose rank is below the threshold has already been returned.
//!
//! Cursor 0 (slot 0, threshold 0) starts an iteration, and 0 is returned once slot 16383 is
//! done. Every `u64` decodes to a valid position, so any cursor a client sends is accepted.
//!
//! # Cost
//! A slot that is not much bigger than COUNT is returned whole (its keys are contiguous in
//! rank order from threshold 0). A bigger slot is cut into pieces of at least COUNT keys and
//! at least 1/[`MAX_PIECES_PER_SLOT`] of the slot, each piece being the keys below the next
//! threshold; finding a piece is one pass over the slot (the tables have no order), so a
//! slot of n keys costs at most O(n × MAX_PIECES_PER_SLOT) over a whole iteration whatever
//! COUNT is. Empty slots cost one length check each.

use slotproxy::cluster::SLOT_COUNT;

use super::{Db, Entry};
use crate::types::CompactBytes;

/// Bits of the cursor holding the slot.
const SLOT_BITS: u32 = 14;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Ranks are the top `64 - SLOT_BITS` bits of a key's hash; thresholds run up to `RANK_END`.
const RANK_END: u64 = 1 << (64 - SLOT_BITS);

/// A big slot is returned in at most about this many calls, whatever COUNT says.
pub const MAX_PIECES_PER_SLOT: usize = 64;

/// A key returned by one SCAN call, with its type for the TYPE filter.
#[derive(Debug, Clone)]
pub struct ScannedKey {
    pub key: CompactBytes,
    pub type_name: &'static str,
}

/// One call's result: the cursor to continue from (0 when done) and the live keys visited.
#[derive(Debug, Default)]
pub struct ScanPage {
    pub cursor: u64,
    pub keys: Vec<ScannedKey>,
}

/// Where a cursor points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    slot: usize,
    threshold: u64,
}

impl Position {
    fn decode(cursor: u64) -> Position {
        Position {
            slot: (cursor & SLOT_MASK) as usize,
            threshold: cursor >> SLOT_BITS,
        }
    }

    /// The cursor for this position; past the last slot it is 0, the end of the iteration.
    fn encode(self) -> u64 {
        if self.slot >= SLOT_COUNT {
            0
        } else {
            (self.threshold << SLOT_BITS) | self.slot as u64
        }
    }

    fn next_slot(&mut self) {
        self.slot += 1;
        self.threshold = 0;
    }
}

fn rank(db: &Db, entry: &Entry) -> u64 {
    db.key_hash(entry.key()) >> SLOT_BITS
}

/// Visits keys from `cursor` until about `count` keys were collected or the keyspace ends.
/// Expired keys met on the way are removed (as Redis's SCAN does) and not returned.
pub fn scan(db: &mut Db, cursor: u64, count: usize) -> ScanPage {
    if db.is_empty() {
        return ScanPage::default();
    }
    let count = count.max(1);
    let now = db.now_ms();
    let mut at = Position::decode(cursor);
    let mut visited: Vec<(CompactBytes, &'static str, bool)> = Vec::new();
    let mut ranked: Vec<(u64, &Entry)> = Vec::new();
    while at.slot < SLOT_COUNT && visited.len() < count {
        let len = db.count_in_slot(at.slot as u16);
        if len == 0 {
            at.next_slot();
            continue;
        }
        let piece = (count - visited.len()).max(len.div_ceil(MAX_PIECES_PER_SLOT));
        ranked.clear();
        ranked.extend(
            db.slot_entries(at.slot as u16)
                .map(|e| (rank(db, e), e))
                .filter(|&(r, _)| r >= at.threshold),
        );
        // Take the rest of the slot when it is not much more than wanted, so small slots are
        // never split into a piece and a crumb.
        let end = if ranked.len() <= piece.saturating_add(piece / 2) {
            RANK_END
        } else {
            let (_, &mut (boundary, _), _) = ranked.select_nth_unstable_by_key(piece, |&(r, _)| r);
            // Equal ranks go together; if the first piece+1 keys all share the threshold's
            // rank, take them all so the cursor still moves forward.
            boundary.max(at.threshold + 1)
        };
        visited.extend(
            ranked
                .iter()
                .filter(|&&(r, _)| r < end)
                .map(|&(_, e)| (e.key().clone(), e.value.type_name(), e.is_expired(now))),
        );
        if end >= RANK_END {
            at.next_slot();
        } else {
            at.threshold = end;
        }
    }
    drop(ranked);
    // Skip empty slots ahead, so an iteration whose last keys were just returned ends now
    // instead of costing the client one more empty call (small databases end in one call).
    while at.slot < SLOT_COUNT && at.threshold == 0 && db.count_in_slot(at.slot as u16) == 0 {
        at.slot += 1;
    }
    let mut keys = Vec::with_capacity(visited.len());
    for (key, type_name, expired) in visited {
        if expired {
            // A lookup removes it and counts it as expired.
            db.peek(&key);
        } else {
            keys.push(ScannedKey { key, type_name });
        }
    }
    ScanPage {
        cursor: at.encode(),
        keys,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::types::{StringValue, Value};

    fn db_with(keys: impl IntoIterator<Item = String>) -> Db {
        let mut db = Db::default();
        db.now_ms = 1_000_000;
        for key in keys {
            db.insert(key.as_bytes(), Value::Str(StringValue::new(b"v")), 0);
        }
        db
    }

    /// Runs a whole iteration, calling `between` after every page. Returns the keys seen
    /// and the page sizes.
    fn iterate(
        db: &mut Db,
        count: usize,
        mut between: impl FnMut(&mut Db),
    ) -> (Vec<Vec<u8>>, Vec<usize>) {
        let mut seen = Vec::new();
        let mut sizes = Vec::new();
        let mut cursor = 0;
        for _ in 0..1_000_000 {
            let page = scan(db, cursor, count);
            sizes.push(page.keys.len());
            seen.extend(page.keys.into_iter().map(|k| k.key.to_vec()));
            cursor = page.cursor;
            if cursor == 0 {
                return (seen, sizes);
            }
            between(db);
        }
        panic!("iteration did not end");
    }

    #[test]
    fn empty_database_ends_at_once() {
        let mut db = Db::default();
        let page = scan(&mut db, 0, 10);
        assert_eq!(page.cursor, 0);
        assert!(page.keys.is_empty());
    }

    #[test]
    fn every_key_exactly_once_without_changes() {
        for (n, count) in [(1, 10), (50, 1), (5000, 10), (5000, 1000), (30_000, 7)] {
            let mut db = db_with((0..n).map(|i| format!("key:{i}")));
            let (seen, _) = iterate(&mut db, count, |_| {});
            assert_eq!(seen.len(), n, "n={n} count={count}");
            let unique: HashSet<_> = seen.into_iter().collect();
            assert_eq!(unique.len(), n);
        }
    }

    #[test]
    fn huge_slot_is_split_and_fully_returned() {
        let n = 20_000;
        let mut db = db_with((0..n).map(|i| format!("{{tag}}:{i}")));
        let (seen, sizes) = iterate(&mut db, 10, |_| {});
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!(unique.len(), n);
        assert_eq!(seen.len(), n);
        // Cut into pieces, but into no more than about MAX_PIECES_PER_SLOT of them.
        let pieces = sizes.iter().filter(|&&s| s > 0).count();
        assert!(
            pieces > 10 && pieces <= MAX_PIECES_PER_SLOT + 1,
            "{pieces} pieces"
        );
    }

    #[test]
    fn count_is_roughly_respected_for_spread_keys() {
        let mut db = db_with((0..100_000).map(|i| format!("k{i}")));
        let (_, sizes) = iterate(&mut db, 100, |_| {});
        let max = sizes.iter().copied().max().unwrap_or(0);
        assert!(max < 130, "largest page {max}");
        assert!(sizes.len() > 500);
    }

    #[test]
    fn keys_present_throughout_survive_concurrent_changes() {
        let mut rng = StdRng::seed_from_u64(7);
        for tagged in [false, true] {
            let name = |i: u32| {
                if tagged {
                    format!("{{t}}{i}")
                } else {
                    format!("k{i}")
                }
            };
            let stable: Vec<String> = (0..3000).map(name).collect();
            let mut db = db_with(stable.iter().cloned());
            let mut next = 1_000_000u32;
            let (seen, _) = iterate(&mut db, 25, |db| {
                // Churn: add many keys (forcing table growth), remove some of the added ones.
                for _ in 0..80 {
                    next += 1;
                    let key = name(next);
                    db.insert(key.as_bytes(), Value::Str(StringValue::new(b"x")), 0);
                }
                for _ in 0..60 {
                    let victim = name(rng.gen_range(1_000_000..=next));
                    db.remove(victim.as_bytes());
                }
            });
            let seen: HashSet<Vec<u8>> = seen.into_iter().collect();
            for key in &stable {
                assert!(
                    seen.contains(key.as_bytes()),
                    "{key} missed (tagged {tagged})"
                );
            }
        }
    }

    #[test]
    fn expired_keys_are_removed_not_returned() {
        let mut db = db_with((0..100).map(|i| format!("live{i}")));
        for i in 0..100 {
            let key = format!("dead{i}");
            db.insert(key.as_bytes(), Value::Str(StringValue::new(b"v")), 999_000);
        }
        assert_eq!(db.len(), 200);
        let (seen, _) = iterate(&mut db, 1000, |_| {});
        assert_eq!(seen.len(), 100);
        assert!(seen.iter().all(|k| k.starts_with(b"live")));
        assert_eq!(db.len(), 100);
    }

    #[test]
    fn any_cursor_is_a_valid_position() {
        let mut db = db_with((0..100).map(|i| format!("k{i}")));
        for cursor in [u64::MAX, SLOT_MASK, 1 << 63, 12345] {
            let page = scan(&mut db, cursor, 10);
            assert!(Position::decode(page.cursor).slot < SLOT_COUNT);
        }
    }

    #[test]
    fn cursor_round_trips() {
        let at = Position {
            slot: 16383,
            threshold: RANK_END - 1,
        };
        assert_eq!(Position::decode(at.encode()), at);
        let end = Position {
            slot: SLOT_COUNT,
            threshold: 0,
        };
        assert_eq!(end.encode(), 0);
    }
}
