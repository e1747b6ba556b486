//! Copying a filter out and in, in pieces (the encoding: `types::bloom::dump`).
//!
//! - `BF.SCANDUMP key iterator` → `[next iterator, data]`. Iterator 0 gives the header and
//!   1; then each call gives a chunk of at most 16 MB and the iterator for the next; past
//!   the end `[0, ""]`. A missing key is `ERR not found`, another type WRONGTYPE (checked
//!   before the iterator); a non-integer iterator `Second argument must be numeric`.
//! - `BF.LOADCHUNK key iterator data` → `OK`: iterator 1 with the header creates the filter
//!   (the key must be missing), later iterators write their chunk. A non-integer iterator
//!   is `ERR Second argument must be numeric`; a chunk for a missing key `ERR not found`;
//!   bad data `ERR received bad data` (or RedisBloom's texts for a misplaced chunk).

use bytes::Bytes;
use slotproxy::numbers::parse_i64;

use super::{read_bloom, write_bloom, wrong_arity, NOT_FOUND};
use crate::cmd::{CmdResult, Ctx};
use crate::types::bloom::dump;
use crate::types::Value;

pub fn scandump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 3 {
        return Err(wrong_arity(args));
    }
    let bloom = read_bloom(ctx.keyspace.db(ctx.client.db), &args[1])?.ok_or(NOT_FOUND)?;
    let iter = parse_i64(&args[2]).ok_or("Second argument must be numeric")?;
    ctx.out.array(2);
    if iter == 0 {
        ctx.out.integer(1);
        ctx.out.bulk(&dump::encode_header(bloom));
    } else {
        let (next, data) = dump::chunk(bloom, iter);
        ctx.out.integer(next);
        ctx.out.bulk(data);
    }
    Ok(())
}

pub fn loadchunk(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 4 {
        return Err(wrong_arity(args));
    }
    let iter = parse_i64(&args[2]).ok_or("ERR Second argument must be numeric")?;
    let (key, data) = (&args[1], &args[3]);
    let db = ctx.db();
    match write_bloom(db, key)? {
        None if iter == 1 => {
            let bloom = dump::decode_header(data)?;
            db.insert(key, Value::Bloom(Box::new(bloom)), 0);
        }
        None => return Err(NOT_FOUND.into()),
        Some(bloom) => dump::load_chunk(bloom, iter, data)?,
    }
    db.dirty += 1;
    ctx.out.simple("OK");
    Ok(())
}
