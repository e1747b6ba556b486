//! Adding, removing and reading members.
//!
//! - `SADD key member [member ...]` → the number of members added.
//! - `SREM key member [member ...]` → the number removed; an emptied set is deleted.
//! - `SCARD key` → the number of members (0 if missing).
//! - `SISMEMBER key member` → 1 or 0. `SMISMEMBER key member [member ...]` → an array of
//!   1/0, one per member.
//! - `SMEMBERS key` → every member (a set in RESP3; empty if missing).
//! - `SMOVE source destination member` → 1 if moved (or, when source and destination are
//!   the same key, if it is a member), else 0. WRONGTYPE for either key, but a missing
//!   source answers 0 before the types are checked.
//! - `SSCAN key cursor [MATCH pattern] [COUNT count]` → `[cursor, [member ...]]`. An
//!   `intset` is returned whole at once (cursor 0), as Redis does; a `hashtable` is walked
//!   with this node's own cursors (see [`scan_table`]). Missing key: `["0", []]`.

use bytes::Bytes;

use super::{
    db_and_out, delete_if_empty, max_intset, notify_change, read_set, reply_set, write_set,
};
use crate::cmd::errors::WRONGTYPE;
use crate::cmd::scan::{parse_cursor, ScanOptions};
use crate::cmd::{CmdResult, Ctx};
use crate::types::set::MemberTable;
use crate::types::{SetValue, Value};

pub fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let max = max_intset(ctx);
    let key = &args[1];
    let (db, out) = db_and_out(ctx);
    let added = match write_set(db, key)? {
        Some(set) => args[2..].iter().filter(|m| set.insert(m, max)).count(),
        None => {
            let mut set = SetValue::default();
            let added = args[2..].iter().filter(|m| set.insert(m, max)).count();
            db.insert(key, Value::Set(Box::new(set)), 0);
            added
        }
    };
    db.dirty += added as u64;
    out.integer(added as i64);
    if added > 0 {
        notify_change(ctx, "sadd", key, false);
    }
    Ok(())
}

pub fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let (db, out) = db_and_out(ctx);
    let removed = match write_set(db, key)? {
        Some(set) => {
            let mut removed = 0;
            for member in &args[2..] {
                removed += set.remove(member) as i64;
                if set.is_empty() {
                    break;
                }
            }
            removed
        }
        None => 0,
    };
    db.dirty += removed as u64;
    let deleted = delete_if_empty(db, key);
    out.integer(removed);
    if removed > 0 {
        notify_change(ctx, "srem", key, deleted);
    }
    Ok(())
}

pub fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let len = read_set(db, &args[1])?.map_or(0, SetValue::len);
    out.integer(len as i64);
    Ok(())
}

pub fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let found = read_set(db, &args[1])?.is_some_and(|s| s.contains(&args[2]));
    out.integer(found as i64);
    Ok(())
}

pub fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    let set = read_set(db, &args[1])?;
    out.array(args.len() - 2);
    for member in &args[2..] {
        out.integer(set.is_some_and(|s| s.contains(member)) as i64);
    }
    Ok(())
}

pub fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, out) = db_and_out(ctx);
    match read_set(db, &args[1])? {
        Some(set) => reply_set(out, set),
        None => out.set(0),
    }
    Ok(())
}

pub fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let max = max_intset(ctx);
    let (source, destination, member) = (&args[1], &args[2], &args[3]);
    let (db, out) = db_and_out(ctx);
    if db.get_mut(source).is_none() {
        out.integer(0);
        return Ok(());
    }
    write_set(db, source)?;
    write_set(db, destination)?;
    if source == destination {
        let found = read_set(db, source)?.is_some_and(|s| s.contains(member));
        out.integer(found as i64);
        return Ok(());
    }
    let removed = write_set(db, source)?.is_some_and(|s| s.remove(member));
    if !removed {
        out.integer(0);
        return Ok(());
    }
    let source_deleted = delete_if_empty(db, source);
    // Redis announces the removal before it creates the destination (its `new` event).
    notify_change(ctx, "srem", source, source_deleted);
    let db = ctx.db();
    let added = match write_set(db, destination)? {
        Some(set) => set.insert(member, max),
        None => {
            let mut set = SetValue::default();
            set.insert(member, max);
            db.insert(destination, Value::Set(Box::new(set)), 0);
            true
        }
    };
    db.dirty += 1;
    ctx.out.integer(1);
    // Nothing is announced on a destination that already held the member.
    if added {
        notify_change(ctx, "sadd", destination, false);
    }
    Ok(())
}

pub fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = parse_cursor(&args[2])?;
    let (db, out) = db_and_out(ctx);
    let set = match db.get(&args[1]).map(|e| &e.value) {
        None => {
            out.array(2);
            out.bulk(b"0");
            out.array(0);
            return Ok(());
        }
        Some(Value::Set(s)) => s,
        Some(_) => return Err(WRONGTYPE.into()),
    };
    let options = ScanOptions::parse(&args[3..], false)?;
    let (next, members): (u64, Vec<Vec<u8>>) = match set.as_ref() {
        SetValue::Ints(_) => (0, set.members()),
        SetValue::Table(table) => {
            let (next, members) = scan_table(table, cursor, options.count);
            (next, members.into_iter().map(<[u8]>::to_vec).collect())
        }
    };
    let members: Vec<Vec<u8>> = members.into_iter().filter(|m| options.matches(m)).collect();
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(members.len());
    for member in &members {
        out.bulk(member);
    }
    Ok(())
}

/// One SSCAN step over a `hashtable` set.
///
/// The cursor is a threshold on the members' hashes (fixed while the set exists): every
/// member hashing below it was returned already. Each call returns the next members in hash
/// order, at least `count` of them and at least 1/64 of the set (so a whole iteration costs
/// at most 64 passes), keeping members with equal hashes together. A member present for the
/// whole iteration is returned at least once, whatever is added or removed meanwhile.
pub fn scan_table(table: &MemberTable, cursor: u64, count: usize) -> (u64, Vec<&[u8]>) {
    let mut pending: Vec<(u64, &[u8])> = table
        .iter()
        .map(|m| (table.hash_of(m), m))
        .filter(|(h, _)| *h >= cursor)
        .collect();
    let piece = count.max(table.len() / 64).max(1);
    if pending.len() <= piece {
        return (0, pending.into_iter().map(|(_, m)| m).collect());
    }
    pending.select_nth_unstable_by_key(piece - 1, |(h, _)| *h);
    let cutoff = pending[piece - 1].0;
    let members: Vec<&[u8]> = pending
        .iter()
        .filter(|(h, _)| *h <= cutoff)
        .map(|(_, m)| *m)
        .collect();
    if members.len() == pending.len() {
        return (0, members);
    }
    (cutoff.checked_add(1).unwrap_or(0), members)
}
