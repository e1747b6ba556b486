//! Intersection, union and difference.
//!
//! - `SINTER key [key ...]` → the members in every set (a set in RESP3); a missing key
//!   makes the result empty. Every key is type-checked.
//! - `SINTERCARD numkeys key [key ...] [LIMIT limit]` → the size of the intersection,
//!   counting stops at `limit` (0: no limit). Errors: `ERR numkeys should be greater than
//!   0`, `ERR Number of keys can't be greater than number of args`, `ERR LIMIT can't be
//!   negative`, `ERR syntax error`.
//! - `SUNION key [key ...]`, `SDIFF key [key ...]` → the union, or the members of the first
//!   set in none of the others. Missing keys count as empty sets.
//! - `SINTERSTORE / SUNIONSTORE / SDIFFSTORE destination key [key ...]` → the size of the
//!   result, which replaces `destination` (its TTL too); an empty result deletes it.
//!
//! Results are built by adding members one by one to a new set, as Redis does, so their
//! encoding (and an intset's ascending order) is Redis's.

use bytes::Bytes;

use super::{db_and_out, max_intset};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX, WRONGTYPE};
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::Db;
use crate::types::{SetValue, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    /// The keyspace event of the STORE form.
    fn store_event(self) -> &'static str {
        match self {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        }
    }
}

/// The sets named by some keys, moved out of the database while a result is computed (so
/// several can be read at once without copying) and put back afterwards.
struct Taken {
    /// For each key given, the index of its set in `sets` (None: missing).
    by_key: Vec<Option<usize>>,
    sets: Vec<(Bytes, SetValue)>,
}

impl Taken {
    fn get(&self, key_index: usize) -> Option<&SetValue> {
        self.by_key[key_index].map(|i| &self.sets[i].1)
    }

    fn put_back(self, db: &mut Db) {
        for (key, set) in self.sets {
            if let Some(Value::Set(slot)) = db.get_mut(&key).map(|e| &mut e.value) {
                **slot = set;
            }
        }
    }
}

/// Looks every key up (reads count as hits/misses unless `write`), checking types; false
/// when an intersection has a missing (so empty) input.
fn check_keys(db: &mut Db, keys: &[Bytes], op: Op, write: bool) -> Result<bool, CmdError> {
    let mut all_present = true;
    for key in keys {
        let value = if write {
            db.get_mut(key).map(|e| &e.value)
        } else {
            db.get(key).map(|e| &e.value)
        };
        match value {
            None => all_present &= op != Op::Inter,
            Some(Value::Set(_)) => {}
            Some(_) => return Err(WRONGTYPE.into()),
        }
    }
    Ok(all_present)
}

fn take(db: &mut Db, keys: &[Bytes]) -> Taken {
    let mut taken = Taken {
        by_key: Vec::with_capacity(keys.len()),
        sets: Vec::new(),
    };
    for key in keys {
        if let Some(i) = taken.sets.iter().position(|(k, _)| k == key) {
            taken.by_key.push(Some(i));
            continue;
        }
        match set_mut(db, key) {
            Some(set) => {
                taken.sets.push((key.clone(), std::mem::take(set)));
                taken.by_key.push(Some(taken.sets.len() - 1));
            }
            None => taken.by_key.push(None),
        }
    }
    taken
}

/// The set stored at `key`, if any (the keys were looked up and checked already).
fn set_mut<'d>(db: &'d mut Db, key: &[u8]) -> Option<&'d mut SetValue> {
    match db.get_mut(key).map(|e| &mut e.value) {
        Some(Value::Set(s)) => Some(s),
        _ => None,
    }
}

/// The members of the intersection, in the order of the smallest set, up to `limit`.
fn intersect(taken: &Taken, key_count: usize, limit: usize) -> Vec<Vec<u8>> {
    let mut sets: Vec<&SetValue> = (0..key_count).filter_map(|i| taken.get(i)).collect();
    sets.sort_by_key(|s| s.len());
    let Some((first, rest)) = sets.split_first() else {
        return Vec::new();
    };
    let mut result = Vec::new();
    first.for_each(|member| {
        if result.len() < limit && rest.iter().all(|s| s.contains(member)) {
            result.push(member.to_vec());
        }
    });
    result
}

/// The union or difference, built as a new set.
fn combine(taken: &Taken, key_count: usize, op: Op, max_intset: usize) -> SetValue {
    let mut result = SetValue::default();
    match op {
        Op::Union => {
            for i in 0..key_count {
                if taken.by_key[..i].contains(&taken.by_key[i]) {
                    continue;
                }
                if let Some(set) = taken.get(i) {
                    set.for_each(|m| {
                        result.insert(m, max_intset);
                    });
                }
            }
        }
        Op::Diff => {
            if let Some(first) = taken.get(0) {
                let others: Vec<&SetValue> = (1..key_count).filter_map(|i| taken.get(i)).collect();
                first.for_each(|m| {
                    if !others.iter().any(|s| s.contains(m)) {
                        result.insert(m, max_intset);
                    }
                });
            }
        }
        Op::Inter => {
            for member in intersect(taken, key_count, usize::MAX) {
                result.insert(&member, max_intset);
            }
        }
    }
    result
}

/// Runs an operation over `keys` and replies with the members, or stores them.
fn run(ctx: &mut Ctx<'_>, keys: &[Bytes], op: Op, destination: Option<&Bytes>) -> CmdResult {
    let max = max_intset(ctx);
    let (db, out) = db_and_out(ctx);
    let all_present = check_keys(db, keys, op, destination.is_some())?;
    let result = if all_present {
        let taken = take(db, keys);
        let result = combine(&taken, keys.len(), op, max);
        taken.put_back(db);
        result
    } else {
        SetValue::default()
    };
    match destination {
        None => {
            out.set(result.len());
            result.for_each(|m| out.bulk(m));
        }
        Some(destination) => {
            let len = result.len();
            out.integer(len as i64);
            if len == 0 {
                if db.remove(destination).is_some() {
                    ctx.notify(crate::pubsub::notify::GENERIC, "del", destination);
                }
            } else {
                db.insert(destination, Value::Set(Box::new(result)), 0);
                ctx.notify(crate::pubsub::notify::SET, op.store_event(), destination);
            }
        }
    }
    Ok(())
}

/// SINTER replies in the smallest set's order, without building a set.
pub fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let keys = &args[1..];
    let (db, out) = db_and_out(ctx);
    if !check_keys(db, keys, Op::Inter, false)? {
        out.set(0);
        return Ok(());
    }
    let taken = take(db, keys);
    let members = intersect(&taken, keys.len(), usize::MAX);
    taken.put_back(db);
    out.set(members.len());
    for member in &members {
        out.bulk(member);
    }
    Ok(())
}

pub fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[2..], Op::Inter, Some(&args[1]))
}

pub fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[1..], Op::Union, None)
}

pub fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[2..], Op::Union, Some(&args[1]))
}

pub fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[1..], Op::Diff, None)
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[2..], Op::Diff, Some(&args[1]))
}

/// Reads `numkeys` as SINTERCARD, ZINTERCARD and the other numkeys commands do.
pub fn numkeys(args: &[Bytes], at: usize) -> Result<usize, CmdError> {
    const POSITIVE: &str = "ERR numkeys should be greater than 0";
    let n = int(&args[at]).map_err(|_| CmdError::from(POSITIVE))?;
    if n < 1 {
        return Err(POSITIVE.into());
    }
    if n > (args.len() - at - 1) as i64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    Ok(n as usize)
}

/// Reads the `[LIMIT limit]` tail of SINTERCARD / ZINTERCARD (0 or absent: no limit).
pub fn card_limit(options: &[Bytes]) -> Result<usize, CmdError> {
    const NEGATIVE: &str = "ERR LIMIT can't be negative";
    let mut limit = 0;
    let mut i = 0;
    while i < options.len() {
        if is(&options[i], "limit") && i + 1 < options.len() {
            let n = int(&options[i + 1]).map_err(|_| CmdError::from(NEGATIVE))?;
            if n < 0 {
                return Err(NEGATIVE.into());
            }
            limit = n as usize;
            i += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok(limit)
}

pub fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = numkeys(args, 1)?;
    let keys = &args[2..2 + count];
    let limit = card_limit(&args[2 + count..])?;
    let limit = if limit == 0 { usize::MAX } else { limit };
    let (db, out) = db_and_out(ctx);
    if !check_keys(db, keys, Op::Inter, false)? {
        out.integer(0);
        return Ok(());
    }
    let taken = take(db, keys);
    let len = intersect(&taken, keys.len(), limit).len();
    taken.put_back(db);
    out.integer(len as i64);
    Ok(())
}
