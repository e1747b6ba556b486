//! Bitmap commands: strings addressed bit by bit.
//!
//! Bit 0 is the most significant bit of the first byte, as in Redis. Reads treat a missing
//! key, and every bit past the end of a string, as 0. Writes grow the string zero-filled and
//! leave it `raw`, as Redis does.
//!
//! - `SETBIT key offset 0|1` → the bit's previous value; `setbit_getbit.rs`.
//! - `GETBIT key offset` → the bit; `setbit_getbit.rs`.
//! - `BITCOUNT key [start end [BYTE|BIT]]` → number of set bits; `bitcount_bitpos.rs`.
//! - `BITPOS key bit [start [end [BYTE|BIT]]]` → first position of `bit`; `bitcount_bitpos.rs`.
//! - `BITOP AND|OR|XOR|NOT destkey srckey...` → length of the stored result; `bitop.rs`.
//!
//! `BITFIELD` and `BITFIELD_RO` live in `cmd/bitfield.rs` and share the helpers below.

mod bitcount_bitpos;
mod bitop;
mod setbit_getbit;

use super::errors::{CmdError, BIT_OFFSET, WRONGTYPE};
use super::Handler;
use crate::keyspace::Db;
use crate::types::{StringValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("setbit", setbit_getbit::setbit),
    ("getbit", setbit_getbit::getbit),
    ("bitcount", bitcount_bitpos::bitcount),
    ("bitpos", bitcount_bitpos::bitpos),
    ("bitop", bitop::bitop),
];

/// Replied when the memory for growing a string cannot be had. Redis would abort instead.
const GROW_FAILED: &str = "OOM out of memory while growing the string";

/// Parses a bit offset as Redis does for SETBIT, GETBIT and BITFIELD.
///
/// With `field_width` (BITFIELD), `#N` means the N-th field of that width: the offset is
/// `N * width`, multiplied with wrap-around like Redis's C arithmetic. Offsets must address a
/// byte below `max_bulk_len` (`proto-max-bulk-len`), which is what bounds string growth.
pub(super) fn bit_offset(
    arg: &[u8],
    field_width: Option<u32>,
    max_bulk_len: usize,
) -> Result<u64, CmdError> {
    let (digits, width) = match (arg.first(), field_width) {
        (Some(b'#'), Some(width)) => (&arg[1..], Some(width)),
        _ => (arg, None),
    };
    let mut offset = slotproxy::numbers::parse_i64(digits).ok_or(CmdError::from(BIT_OFFSET))?;
    if let Some(width) = width {
        offset = offset.wrapping_mul(i64::from(width));
    }
    if offset < 0 || (offset >> 3) as u64 >= max_bulk_len as u64 {
        return Err(BIT_OFFSET.into());
    }
    Ok(offset as u64)
}

/// The string at `key` for reading (counts a hit or miss), or None if the key is missing.
pub(super) fn read_string<'a>(db: &'a mut Db, key: &[u8]) -> Result<Option<&'a [u8]>, CmdError> {
    match db.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s.as_slice())),
        #[allow(unreachable_patterns)]
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// A string opened for an in-place bit write.
pub(super) struct BitTarget<'a> {
    pub bytes: &'a mut Vec<u8>,
    /// The key did not exist and was created by this lookup.
    pub created: bool,
    /// The string was created or had to grow (Redis then counts the write as a change even
    /// when no bit flips).
    pub grown: bool,
}

/// Opens the string at `key` for writing bits, creating it if missing and growing it
/// zero-filled to at least `min_len` bytes. The value becomes `raw`, as in Redis.
pub(super) fn string_for_bit_write<'a>(
    db: &'a mut Db,
    key: &[u8],
    min_len: usize,
) -> Result<BitTarget<'a>, CmdError> {
    let created = match db.get_mut(key).map(|e| &e.value) {
        None => true,
        Some(Value::Str(_)) => false,
        #[allow(unreachable_patterns)]
        Some(_) => return Err(WRONGTYPE.into()),
    };
    if created {
        let mut bytes = Vec::new();
        grow_zeroed(&mut bytes, min_len)?;
        db.insert(key, Value::Str(StringValue::raw(bytes)), 0);
    }
    let Some(entry) = db.get_mut(key) else {
        return Err("ERR internal error: key vanished while being written".into());
    };
    let bytes = match &mut entry.value {
        Value::Str(s) => s.make_raw(),
        #[allow(unreachable_patterns)]
        _ => return Err(WRONGTYPE.into()),
    };
    let grown = grow_zeroed(bytes, min_len)? || created;
    Ok(BitTarget {
        bytes,
        created,
        grown,
    })
}

/// Zero-extends `bytes` to `len`, reporting a failed allocation as an error reply rather
/// than aborting. Returns whether the buffer grew.
fn grow_zeroed(bytes: &mut Vec<u8>, len: usize) -> Result<bool, CmdError> {
    if bytes.len() >= len {
        return Ok(false);
    }
    bytes
        .try_reserve_exact(len - bytes.len())
        .map_err(|_| CmdError::from(GROW_FAILED))?;
    bytes.resize(len, 0);
    Ok(true)
}

/// The `proto-max-bulk-len` setting, which bounds bit offsets.
pub(super) fn max_bulk_len(ctx: &super::Ctx<'_>) -> usize {
    ctx.shared.config().proto_max_bulk_len
}
