//! `PFMERGE destkey [sourcekey ...]` → OK.
//!
//! Stores at `destkey` the union of every HLL named, `destkey` included (missing keys are
//! empty HLLs). The destination turns dense first if any input is dense; otherwise its
//! registers are raised one by one in the sparse form, which may still promote it. The
//! cached cardinality is marked stale and the event is `pfadd` (Redis reports a merge as
//! a mass add).

use bytes::Bytes;

use super::super::{CmdResult, Ctx};
use super::{buffer, checked, sparse_max_bytes};
use crate::pubsub::notify;
use crate::types::hll::{self, Encoding};
use crate::types::{StringValue, Value};

pub(super) fn pfmerge(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let max_bytes = sparse_max_bytes(ctx);
    let dest = &args[1];
    let db = ctx.db();
    let mut max = vec![0u8; hll::REGISTERS];
    let mut any_dense = false;
    for key in &args[1..] {
        if let Some(entry) = db.get(key) {
            let (bytes, encoding) = checked(&entry.value)?;
            any_dense |= encoding == Encoding::Dense;
            hll::merge_into(&mut max, bytes)?;
        }
    }
    let created = db.get_mut(dest).is_none();
    if created {
        // Counts as the command's one change.
        db.insert(dest, Value::Str(StringValue::raw(hll::new_sparse())), 0);
    }
    let bytes = buffer(db, dest)?;
    if any_dense {
        hll::to_dense(bytes)?;
    }
    for (index, &value) in max.iter().enumerate() {
        if value != 0 {
            // The destination was validated with the sources, so this cannot find it
            // corrupt; Redis ignores the outcome here too.
            let _ = hll::set_register(bytes, index, value, max_bytes);
        }
    }
    hll::invalidate_cache(bytes);
    if !created {
        db.dirty += 1;
    }
    ctx.notify(notify::STRING, "pfadd", dest);
    ctx.out.ok();
    Ok(())
}
