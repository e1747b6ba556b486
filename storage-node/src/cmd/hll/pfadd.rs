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

use super::super::errors::{CmdError, WRONGTYPE};
use super::super::{CmdResult, Ctx};
use super::{checked, sparse_max_bytes};
use crate::pubsub::notify;
use crate::types::{hll, StringValue, Value};

pub(super) fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let elements = &args[2..];
    let max_bytes = sparse_max_bytes(ctx);
    let db = ctx.db();
    let (created, changed) = match db.get_mut(key) {
        Some(entry) => {
            checked(&entry.value)?;
            let Value::Str(string) = &mut entry.value else {
                return Err(WRONGTYPE.into());
            };
            let bytes = string.make_raw();
            let changed = add_all(bytes, elements, max_bytes)?;
            if changed > 0 {
                hll::invalidate_cache(bytes);
            }
            (false, changed)
        }
        None => {
            // A fresh HLL cannot be corrupt, so it is filled before it is stored.
            let mut bytes = hll::new_sparse();
            let changed = add_all(&mut bytes, elements, max_bytes)?;
            hll::invalidate_cache(&mut bytes);
            // Counts the creation as one change.
            db.insert(key, Value::Str(StringValue::raw(bytes)), 0);
            (true, changed)
        }
    };
    if changed > 0 || created {
        db.dirty += changed;
        ctx.notify(notify::STRING, "pfadd", key);
    }
    ctx.out.integer(i64::from(changed > 0 || created));
    Ok(())
}

/// Adds every element; returns how many changed a register.
fn add_all(hll: &mut Vec<u8>, elements: &[Bytes], max_bytes: usize) -> Result<u64, CmdError> {
    let mut changed = 0;
    for element in elements {
        if hll::add(hll, element, max_bytes)? {
            changed += 1;
        }
    }
    Ok(changed)
}
