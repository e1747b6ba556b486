//! Generic keyspace commands.
//!
//! - `DEL key [key ...]` / `UNLINK key [key ...]` → the number of keys removed. UNLINK frees
//!   synchronously too: dropping a value here never blocks other connections long enough to
//!   need a background thread.
//! - `EXISTS key [key ...]` → how many of the arguments exist (a key named twice counts twice).
//! - `TOUCH key [key ...]` → how many of the arguments exist; refreshes their access time.
//! - `TYPE key` → `+string`, ..., or `+none` for a missing key.
//! - `RENAME key newkey` → `+OK`; `ERR no such key`. The value keeps its TTL and replaces
//!   whatever `newkey` held.
//! - `RENAMENX key newkey` → 1, or 0 if `newkey` exists; `ERR no such key`.
//! - `COPY source destination [DB index] [REPLACE]` → 1 if copied, 0 if the source is missing
//!   or the destination exists (without REPLACE); `ERR source and destination objects are the
//!   same`; `ERR DB index is out of range`.
//! - `MOVE key db` → 1 if moved, 0 if missing here or present there; `ERR source and
//!   destination objects are the same`; `ERR DB index is out of range`.
//! - `SWAPDB index1 index2` → `+OK`; `ERR invalid first DB index` / `ERR invalid second DB
//!   index` for non-integers, `ERR DB index is out of range`.
//! - `KEYS pattern` → every live key matching the glob pattern (any order).
//!
//! In cluster mode only database 0 exists for these: `ERR MOVE is not allowed in cluster
//! mode`, `ERR SWAPDB is not allowed in cluster mode`, `ERR Copying to another database is
//! not allowed in cluster mode`.
//! - `RANDOMKEY` → a random live key, or null when the database is empty.

use bytes::Bytes;
use rand::Rng;
use slotproxy::cluster::SLOT_COUNT;
use slotproxy::glob::glob_match;

use super::args::{int32, is};
use super::errors::{CmdError, DB_OUT_OF_RANGE, NO_SUCH_KEY, SYNTAX};
use super::{CmdResult, Ctx, Handler};
use crate::keyspace::{Db, Entry};
use crate::types::CompactBytes;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("del", del),
    ("unlink", del),
    ("exists", exists),
    ("touch", touch),
    ("type", type_),
    ("rename", rename),
    ("renamenx", renamenx),
    ("copy", copy),
    ("move", move_),
    ("swapdb", swapdb),
    ("keys", keys),
    ("randomkey", randomkey),
];

const SAME_OBJECT: &str = "ERR source and destination objects are the same";

fn del(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut removed = 0;
    for key in &args[1..] {
        if ctx.db().remove(key).is_some() {
            ctx.notify(crate::pubsub::notify::GENERIC, "del", key);
            removed += 1;
        }
    }
    ctx.out.integer(removed);
    Ok(())
}

fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let db = ctx.db();
    let found = args[1..]
        .iter()
        .filter(|k| db.get_no_touch(k).is_some())
        .count();
    ctx.out.integer(found as i64);
    Ok(())
}

fn touch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let db = ctx.db();
    let found = args[1..].iter().filter(|k| db.get(k).is_some()).count();
    ctx.out.integer(found as i64);
    Ok(())
}

fn type_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = ctx
        .db()
        .get_no_touch(&args[1])
        .map_or("none", |e| e.value.type_name());
    ctx.out.simple(name);
    Ok(())
}

fn rename(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rename_generic(ctx, args, false)
}

fn renamenx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rename_generic(ctx, args, true)
}

fn rename_generic(ctx: &mut Ctx<'_>, args: &[Bytes], only_if_new: bool) -> CmdResult {
    let (source, target) = (&args[1], &args[2]);
    let db = ctx.db();
    if db.get_mut(source).is_none() {
        return Err(NO_SUCH_KEY.into());
    }
    // Renaming a key onto itself changes nothing, but the key must still exist.
    let done = if source == target {
        !only_if_new
    } else if only_if_new && db.get_mut(target).is_some() {
        false
    } else {
        let mut entry = db
            .remove(source)
            .ok_or_else(|| CmdError::from(NO_SUCH_KEY))?;
        entry.rename(target);
        db.remove(target); // Redis deletes then adds: a `new` key event, as there.
        db.insert_entry(entry);
        ctx.notify(crate::pubsub::notify::GENERIC, "rename_from", source);
        ctx.notify(crate::pubsub::notify::GENERIC, "rename_to", target);
        ctx.signal_key_ready(target);
        true
    };
    match (only_if_new, done) {
        (false, _) => ctx.out.ok(),
        (true, done) => ctx.out.integer(done as i64),
    }
    Ok(())
}

/// A database index argument as SELECT-like commands read it: an `int`, then in range.
fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, CmdError> {
    let index = int32(arg)?;
    if index < 0 || index as usize >= ctx.keyspace.db_count() {
        return Err(DB_OUT_OF_RANGE.into());
    }
    Ok(index as usize)
}

/// `source`'s value and TTL under a new name.
fn renamed_copy(entry: &Entry, key: &[u8]) -> Entry {
    Entry::with_expiry(key, entry.value.clone(), entry.expire_at_ms())
}

fn copy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (source, target) = (&args[1], &args[2]);
    let source_db = ctx.client.db;
    let mut target_db = source_db;
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "replace") {
            replace = true;
        } else if is(&args[i], "db") && i + 1 < args.len() {
            target_db = db_index(ctx, &args[i + 1])?;
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if ctx.shared.cluster.is_some() && (source_db != 0 || target_db != 0) {
        return Err("ERR Copying to another database is not allowed in cluster mode".into());
    }
    if source_db == target_db && source == target {
        return Err(SAME_OBJECT.into());
    }
    let Some(copied) = ctx.db().get(source).map(|e| renamed_copy(e, target)) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let destination = if source_db == target_db {
        ctx.db()
    } else {
        ctx.keyspace.two_dbs(source_db, target_db).1
    };
    if destination.get_mut(target).is_some() && !replace {
        ctx.out.integer(0);
        return Ok(());
    }
    destination.remove(target); // Redis deletes then adds: a `new` key event, as there.
    destination.insert_entry(copied);
    ctx.notify_in(target_db, crate::pubsub::notify::GENERIC, "copy_to", target);
    // Like Redis's `dbAdd`, a new key of any type is signalled; whoever waits on it is
    // served only if the type suits it.
    ctx.keyspace.blocking.signal_ready(target_db, target);
    ctx.out.integer(1);
    Ok(())
}

fn move_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err("ERR MOVE is not allowed in cluster mode".into());
    }
    let key = &args[1];
    let source_db = ctx.client.db;
    let target_db = db_index(ctx, &args[2])?;
    if source_db == target_db {
        return Err(SAME_OBJECT.into());
    }
    let (source, target) = ctx.keyspace.two_dbs(source_db, target_db);
    let moved = source.get_mut(key).is_some() && target.get_mut(key).is_none();
    if moved {
        if let Some(entry) = source.remove(key) {
            target.insert_entry(entry);
            ctx.keyspace.blocking.signal_ready(target_db, key);
        }
        ctx.notify(crate::pubsub::notify::GENERIC, "move_from", key);
        ctx.notify_in(target_db, crate::pubsub::notify::GENERIC, "move_to", key);
    }
    ctx.out.integer(moved as i64);
    Ok(())
}

fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err("ERR SWAPDB is not allowed in cluster mode".into());
    }
    let first = int32(&args[1]).map_err(|_| CmdError::from("ERR invalid first DB index"))?;
    let second = int32(&args[2]).map_err(|_| CmdError::from("ERR invalid second DB index"))?;
    let count = ctx.keyspace.db_count() as i64;
    if !(0..count).contains(&first) || !(0..count).contains(&second) {
        return Err(DB_OUT_OF_RANGE.into());
    }
    ctx.keyspace.swap_dbs(first as usize, second as usize);
    // A write, as Redis counts it (`server.dirty++`): the AOF must log it.
    ctx.keyspace.db(first as usize).dirty += 1;
    crate::cmd::wakeup::signal_swapped_dbs(ctx.keyspace, first as usize, second as usize);
    ctx.out.ok();
    Ok(())
}

fn keys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let pattern = &args[1][..];
    // A lone `*` is every key, even the empty one that glob matching itself refuses.
    let all = pattern == b"*";
    let db = ctx.keyspace.db(ctx.client.db);
    let now = db.now_ms();
    let matching: Vec<&[u8]> = db
        .entries()
        .filter(|e| !e.is_expired(now))
        .map(|e| e.key().as_slice())
        .filter(|key| all || glob_match(pattern, key, false))
        .collect();
    ctx.out.array(matching.len());
    for key in matching {
        ctx.out.bulk(key);
    }
    Ok(())
}

fn randomkey(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    match random_live_key(ctx.db()) {
        Some(key) => ctx.out.bulk(&key),
        None => ctx.out.null(),
    }
    Ok(())
}

/// A random key that has not expired. Expired keys drawn are removed, so the loop ends:
/// each round either answers or shrinks the database.
fn random_live_key(db: &mut Db) -> Option<CompactBytes> {
    let mut rng = rand::thread_rng();
    // A replica hides expired keys without removing them: after this many draws of
    // expired keys it answers one anyway, as Redis's RANDOMKEY does on a replica.
    let mut draws_left = 100;
    while !db.is_empty() {
        // A random slot, then the first non-empty one from there (wrapping), then a random
        // key in it. Not perfectly uniform, like Redis's own bucket sampling.
        let start = rng.gen_range(0..SLOT_COUNT);
        let slot = (0..SLOT_COUNT)
            .map(|i| ((start + i) % SLOT_COUNT) as u16)
            .find(|&s| db.count_in_slot(s) > 0)?;
        let pick = rng.gen_range(0..db.count_in_slot(slot));
        let now = db.now_ms();
        let (key, expired) = db
            .slot_entries(slot)
            .nth(pick)
            .map(|e| (e.key().clone(), e.is_expired(now)))?;
        if !expired {
            return Some(key);
        }
        // The lookup removes the expired key (not on a replica).
        let before = db.len();
        db.peek(&key);
        if db.len() == before {
            draws_left -= 1;
            if draws_left == 0 {
                return Some(key);
            }
        }
    }
    None
}
