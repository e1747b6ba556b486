//! HyperLogLog commands. An HLL is a plain string in Redis's layout (`types::hll`), so
//! these commands only check that a string is one before they read or change it.
//!
//! - `PFADD key [element ...]` → 1 if a register changed (or the key was created), else 0;
//!   `pfadd.rs`.
//! - `PFCOUNT key [key ...]` → the estimated cardinality (of the union for several keys);
//!   `pfcount.rs`.
//! - `PFMERGE destkey [sourcekey ...]` → OK; `pfmerge.rs`.
//! - `PFDEBUG GETREG|DECODE|ENCODING|TODENSE key` → `pfdebug.rs`.
//! - `PFSELFTEST` → OK, or the failed check; `pfselftest.rs`.
//!
//! A string that is not an HLL gets `WRONGTYPE Key is not a valid HyperLogLog string
//! value.`; an HLL whose sparse opcodes do not add up gets `INVALIDOBJ Corrupted HLL object
//! detected`.

mod pfadd;
mod pfcount;
mod pfdebug;
mod pfmerge;
mod pfselftest;

use super::errors::{CmdError, WRONGTYPE};
use super::Handler;
use crate::types::hll::{self, Encoding};
use crate::types::Value;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("pfadd", pfadd::pfadd),
    ("pfcount", pfcount::pfcount),
    ("pfmerge", pfmerge::pfmerge),
    ("pfdebug", pfdebug::pfdebug),
    ("pfselftest", pfselftest::pfselftest),
];

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

impl From<hll::Corrupt> for CmdError {
    fn from(_: hll::Corrupt) -> CmdError {
        CORRUPT.into()
    }
}

/// The HLL held by `value`: WRONGTYPE for another type, or for a string that is not an HLL.
fn checked(value: &Value) -> Result<(&[u8], Encoding), CmdError> {
    let Value::Str(string) = value else {
        return Err(WRONGTYPE.into());
    };
    let bytes = string.as_slice();
    let encoding = hll::encoding(bytes).map_err(|_| CmdError::from(NOT_HLL))?;
    Ok((bytes, encoding))
}

/// The HLL at `key` as a growable buffer (the string becomes `raw`, as Redis's
/// `dbUnshareStringValue` makes it), for a key already checked with [`checked`].
fn buffer<'a>(db: &'a mut crate::keyspace::Db, key: &[u8]) -> Result<&'a mut Vec<u8>, CmdError> {
    match db.get_mut(key).map(|entry| &mut entry.value) {
        Some(Value::Str(string)) => Ok(string.make_raw()),
        _ => Err("ERR internal error: HyperLogLog vanished while being written".into()),
    }
}

/// The `hll-sparse-max-bytes` setting.
fn sparse_max_bytes(ctx: &super::Ctx<'_>) -> usize {
    ctx.shared.config().hll_sparse_max_bytes
}
