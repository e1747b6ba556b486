//! `PFCOUNT key [key ...]` → integer: the estimated number of distinct elements added.
//!
//! One key: a missing key counts 0. A valid cached cardinality is answered as it is;
//! otherwise the count is computed and written back into the header, which changes the
//! string: like Redis, that counts as a change (WATCH sees it) and the command is
//! propagated to the AOF and replicas although PFCOUNT is not flagged as a write.
//!
//! Several keys: the count of their union (register-wise maximum), computed afresh and
//! cached nowhere; missing keys count as empty HLLs.

use bytes::Bytes;

use super::super::{CmdResult, Ctx};
use super::{buffer, checked};
use crate::types::{hll, StringValue, Value};

pub(super) fn pfcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 2 {
        return count_union(ctx, &args[1..]);
    }
    let key = &args[1];
    let db = ctx.db();
    let cached = match db.get(key) {
        None => {
            ctx.out.integer(0);
            return Ok(());
        }
        Some(entry) => {
            let (bytes, _) = checked(&entry.value)?;
            // Already `raw` with a valid cache: nothing to change, so no write lookup.
            let raw = matches!(&entry.value, Value::Str(StringValue::Raw(_)));
            hll::cached_cardinality(bytes).filter(|_| raw)
        }
    };
    if let Some(count) = cached {
        ctx.out.integer(count as i64);
        return Ok(());
    }
    let bytes = buffer(db, key)?;
    let count = match hll::cached_cardinality(bytes) {
        Some(cached) => cached,
        None => {
            let count = hll::count(bytes)?;
            hll::store_cardinality(bytes, count);
            db.dirty += 1;
            // Not a write command, so dispatch would not propagate it on its own.
            ctx.propagate_as(args.to_vec());
            count
        }
    };
    // A valid cache has its top bit clear, so it fits; a computed count is far smaller.
    ctx.out.integer(count as i64);
    Ok(())
}

fn count_union(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> CmdResult {
    let mut max = vec![0u8; hll::REGISTERS];
    let db = ctx.db();
    for key in keys {
        if let Some(entry) = db.get(key) {
            let (bytes, _) = checked(&entry.value)?;
            hll::merge_into(&mut max, bytes)?;
        }
    }
    ctx.out.integer(hll::count_registers(&max) as i64);
    Ok(())
}
