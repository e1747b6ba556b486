//! `PFADD key [element ...]` → integer: 1 if the key was created or a register changed,
//! else 0.
//!
//! A missing key is created as an empty sparse HLL (even with no elements). Each element
//! raises at most one register; a sparse HLL turns dense when a register needs a value
//! above 32 or the string would grow past `hll-sparse-max-bytes`. A change marks the cached
//! cardinality stale, counts one change per changed register (Redis's `dirty`), and sends
//! the `pfadd` keyspace event. A corrupt sparse HLL answers INVALIDOBJ, keeping the
//! registers changed before the corruption was found, as Redis does.

use bytes::Bytes;

use super::super::{CmdResult, Ctx};
use super::{buffer, checked, sparse_max_bytes};
use crate::pubsub::notify;
use crate::types::{hll, StringValue, Value};

pub(super) fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let max_bytes = sparse_max_bytes(ctx);
    let db = ctx.db();
    let created = match db.get_mut(key) {
        Some(entry) => {
            checked(&entry.value)?;
            false
        }
        None => {
            let empty = StringValue::Raw(hll::new_sparse());
            // Counts the creation as one change.
            db.insert(key, Value::Str(empty), 0);
            true
        }
    };
    let bytes = buffer(db, key)?;
    let mut changed = 0u64;
    for element in &args[2..] {
        if hll::add(bytes, element, max_bytes)? {
            changed += 1;
        }
    }
    if changed > 0 || created {
        hll::invalidate_cache(bytes);
        db.dirty += changed;
        ctx.notify(notify::STRING, "pfadd", key);
    }
    ctx.out.integer(i64::from(changed > 0 || created));
    Ok(())
}
