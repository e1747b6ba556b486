//! Random members.
//!
//! - `SPOP key` → a random member, removed; null if the key is missing.
//! - `SPOP key count` → up to `count` distinct random members, removed (a set in RESP3);
//!   all of them, in the set's order, when `count` ≥ the size. `ERR value is out of range,
//!   must be positive` for a negative or non-integer count.
//! - `SRANDMEMBER key` → a random member or null.
//! - `SRANDMEMBER key count` → an array: `count` > 0 gives distinct members (the whole set,
//!   in its order, when `count` ≥ the size), `count` < 0 gives |count| members that may
//!   repeat. The count must be within ±(2^63-1).
//!
//! More arguments are a syntax error. Members are chosen uniformly, not in Redis's
//! sequence, so replies with fewer members than the set are (legitimately) different.

use bytes::Bytes;
use rand::seq::index::sample;

use super::{db_and_out, delete_if_empty, notify_change, read_set, write_set};
use crate::cmd::args::{int, int_in_range};
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdResult, Ctx};

const MUST_BE_POSITIVE: &str = "ERR value is out of range, must be positive";

pub fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX.into());
    }
    let key = &args[1];
    let count = match args.get(2) {
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => Some(n as u64),
            _ => return Err(MUST_BE_POSITIVE.into()),
        },
        None => None,
    };
    let mut rng = rand::thread_rng();
    let mut srems = Vec::new();
    let (db, out) = db_and_out(ctx);
    let Some(set) = write_set(db, key)? else {
        match count {
            Some(_) => out.set(0),
            None => out.null(),
        }
        return Ok(());
    };
    let popped_any = match count {
        None => match set.pop_random(&mut rng) {
            Some(member) => {
                out.bulk(&member);
                db.dirty += 1;
                // Which member went is chance: a replay removes that one (Redis's SREM).
                srems.push(vec![
                    Bytes::from_static(b"SREM"),
                    key.clone(),
                    Bytes::from(member),
                ]);
                true
            }
            None => {
                out.null();
                false
            }
        },
        Some(count) if count as usize >= set.len() => {
            let members = set.members();
            out.set(members.len());
            for member in &members {
                out.bulk(member);
            }
            db.remove(key);
            db.dirty += members.len() as u64;
            ctx.propagate_as(vec![Bytes::from_static(b"DEL"), key.clone()]);
            notify_change(ctx, "spop", key, true);
            return Ok(());
        }
        Some(count) => {
            let picked: Vec<Vec<u8>> = sample(&mut rng, set.len(), count as usize)
                .into_iter()
                .map(|i| set.member_at(i))
                .collect();
            out.set(picked.len());
            for member in &picked {
                set.remove(member);
                out.bulk(member);
            }
            db.dirty += picked.len() as u64;
            // One SREM per member, as Redis 7.0 propagates them (in MULTI/EXEC).
            for member in &picked {
                srems.push(vec![
                    Bytes::from_static(b"SREM"),
                    key.clone(),
                    Bytes::copy_from_slice(member),
                ]);
            }
            !picked.is_empty()
        }
    };
    let deleted = delete_if_empty(db, key);
    for srem in srems {
        ctx.propagate_as(srem);
    }
    if popped_any {
        notify_change(ctx, "spop", key, deleted);
    }
    Ok(())
}

pub fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX.into());
    }
    let count = match args.get(2) {
        Some(arg) => Some(int_in_range(arg, -i64::MAX, i64::MAX)?),
        None => None,
    };
    let mut rng = rand::thread_rng();
    let (db, out) = db_and_out(ctx);
    let set = read_set(db, &args[1])?;
    let Some(count) = count else {
        match set.and_then(|s| s.random_member(&mut rng)) {
            Some(member) => out.bulk(&member),
            None => out.null(),
        }
        return Ok(());
    };
    let Some(set) = set.filter(|_| count != 0) else {
        out.array(0);
        return Ok(());
    };
    if count < 0 {
        let count = count.unsigned_abs() as usize;
        out.array(count);
        for _ in 0..count {
            let member = set.random_member(&mut rng).unwrap_or_default();
            out.bulk(&member);
        }
    } else if count as usize >= set.len() {
        out.array(set.len());
        set.for_each(|m| out.bulk(m));
    } else {
        let count = count as usize;
        out.array(count);
        for i in sample(&mut rng, set.len(), count) {
            out.bulk(&set.member_at(i));
        }
    }
    Ok(())
}
