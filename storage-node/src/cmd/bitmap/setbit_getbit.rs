//! Single-bit access.
//!
//! - `SETBIT key offset value` → integer: the bit's previous value. The string grows
//!   zero-filled to reach the offset (a missing key is created) and becomes `raw`. The
//!   offset is checked first (`ERR bit offset is not an integer or out of range`: negative,
//!   not an integer, or addressing a byte at or past `proto-max-bulk-len`, i.e. above
//!   2^32-1 by default), then the value (`ERR bit is not an integer or out of range` unless
//!   it is 0 or 1), then the key's type (WRONGTYPE).
//! - `GETBIT key offset` → integer: the bit, 0 past the end of the string or for a missing
//!   key. Same offset check, then WRONGTYPE.

use bytes::Bytes;

use super::super::errors::BIT_VALUE;
use super::super::{args, CmdResult, Ctx};
use super::{bit_offset, max_bulk_len, read_string, string_for_bit_write};

/// The mask selecting bit `offset` within its byte (bit 0 is the most significant).
fn bit_mask(offset: u64) -> u8 {
    0x80 >> (offset & 7)
}

pub(super) fn setbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(&args[2], None, max_bulk_len(ctx))?;
    let on = args::non_negative(&args[3], BIT_VALUE)?;
    if on > 1 {
        return Err(BIT_VALUE.into());
    }
    // The offset check above keeps the byte index below proto-max-bulk-len, a usize.
    let byte = (offset >> 3) as usize;
    let mask = bit_mask(offset);
    let target = string_for_bit_write(ctx.db(), &args[1], byte + 1)?;
    let old = target.bytes[byte] & mask != 0;
    let changed = target.grown || old != (on == 1);
    if on == 1 {
        target.bytes[byte] |= mask;
    } else {
        target.bytes[byte] &= !mask;
    }
    // Creating the key already counted one change.
    if changed && !target.created {
        ctx.db().dirty += 1;
    }
    if changed {
        ctx.notify(crate::pubsub::notify::STRING, "setbit", &args[1]);
    }
    ctx.out.integer(i64::from(old));
    Ok(())
}

pub(super) fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(&args[2], None, max_bulk_len(ctx))?;
    let bit = read_string(ctx.db(), &args[1])?
        .and_then(|bytes| bytes.get((offset >> 3) as usize))
        .is_some_and(|byte| byte & bit_mask(offset) != 0);
    ctx.out.integer(i64::from(bit));
    Ok(())
}
