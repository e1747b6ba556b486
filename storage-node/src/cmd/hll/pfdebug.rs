//! `PFDEBUG subcommand key`: HLL internals, for tests.
//!
//! - `GETREG` → array of the 16,384 register values (a sparse HLL is converted to dense
//!   first, and that conversion is a change that is propagated).
//! - `DECODE` → bulk string of the sparse opcodes, e.g. `Z:100 v:3,1 z:5 ...`; a dense HLL
//!   answers `ERR HLL encoding is not sparse`.
//! - `ENCODING` → status `sparse` or `dense`.
//! - `TODENSE` → 1 if the HLL was sparse and is now dense, else 0.
//!
//! A conversion counts as a change for propagation but, as in Redis, not for WATCH.
//!
//! The key is checked before the subcommand: a missing key answers `ERR The specified key
//! does not exist`, a string that is not an HLL WRONGTYPE, and only then an unknown
//! subcommand `ERR Unknown PFDEBUG subcommand '...'`.

use bytes::Bytes;

use super::super::errors::WRONGTYPE;
use super::super::{CmdResult, Ctx};
use super::checked;
use crate::types::hll::{self, sparse, Encoding};
use crate::types::Value;

/// What a subcommand answers.
enum Answer {
    Registers(Vec<u8>),
    Decoded(String),
    Encoding(&'static str),
    Converted(bool),
}

pub(super) fn pfdebug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[2];
    let db = ctx.keyspace.db(ctx.client.db);
    // Redis changes the value here without signalling the key, so WATCH does not see a
    // conversion: look it up without noting a write. A BGSAVE running meanwhile may save
    // the dense form, which holds the same registers.
    let Some(entry) = db.peek_mut(key) else {
        return Err("ERR The specified key does not exist".into());
    };
    let encoding = checked(&entry.value)?.1;
    let Value::Str(string) = &mut entry.value else {
        return Err(WRONGTYPE.into());
    };
    let bytes = string.make_raw();
    let answer = match args[1].to_ascii_lowercase().as_slice() {
        b"getreg" => {
            let converted = hll::to_dense(bytes)?;
            let registers = hll::dense_registers(bytes).collect();
            if converted {
                db.dirty += 1;
            }
            Answer::Registers(registers)
        }
        b"decode" if encoding != Encoding::Sparse => {
            return Err("ERR HLL encoding is not sparse".into());
        }
        b"decode" => Answer::Decoded(sparse::decode(bytes)),
        b"encoding" => Answer::Encoding(match encoding {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }),
        b"todense" => {
            let converted = hll::to_dense(bytes)?;
            if converted {
                db.dirty += 1;
            }
            Answer::Converted(converted)
        }
        _ => {
            // Redis formats the name with %s: it ends at a NUL byte.
            let name = args[1].split(|&b| b == 0).next().unwrap_or_default();
            return Err(format!(
                "ERR Unknown PFDEBUG subcommand '{}'",
                String::from_utf8_lossy(name)
            )
            .into());
        }
    };
    match answer {
        Answer::Registers(registers) => {
            ctx.out.array(registers.len());
            for value in registers {
                ctx.out.integer(i64::from(value));
            }
        }
        Answer::Decoded(text) => ctx.out.bulk(text.as_bytes()),
        Answer::Encoding(name) => ctx.out.simple(name),
        Answer::Converted(converted) => ctx.out.integer(i64::from(converted)),
    }
    Ok(())
}
