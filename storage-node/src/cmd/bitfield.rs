//! Integer fields of arbitrary width at arbitrary bit offsets of a string.
//!
//! - `BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
//!   [OVERFLOW WRAP|SAT|FAIL] ...` → array with one entry per GET/SET/INCRBY: GET the field,
//!   SET the field's previous value, INCRBY its new value; null for a SET or INCRBY that
//!   overflowed under `OVERFLOW FAIL` (which then writes nothing). OVERFLOW applies to the
//!   operations after it; the default is WRAP. Fields are big-endian, starting at the most
//!   significant bit of the first byte.
//! - `BITFIELD_RO key [GET type offset] ...` → the same for reads only; any SET or INCRBY is
//!   `ERR BITFIELD_RO only supports the GET subcommand` (after the whole command parsed).
//!
//! `type` is `i1`..`i64` or `u1`..`u63` (otherwise `ERR Invalid bitfield type. Use something
//! like i16 u8. Note that u64 is not supported but i64 is.`). `offset` is a bit offset, or
//! `#N` for the N-th field of that width (`ERR bit offset is not an integer or out of range`).
//! A bad OVERFLOW mode is `ERR Invalid OVERFLOW type specified`; a missing argument or an
//! unknown subcommand is `ERR syntax error`. Every operation is parsed before any runs. A
//! command with a write grows the string zero-filled to cover all written fields (creating
//! the key) before running, even if every write then fails.

use bytes::Bytes;

use super::bitmap::{bit_offset, max_bulk_len, read_string, string_for_bit_write};
use super::errors::{CmdError, SYNTAX};
use super::{args, CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[("bitfield", bitfield), ("bitfield_ro", bitfield_ro)];

const INVALID_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Get,
    Set,
    IncrBy,
}

/// A field's width and signedness.
#[derive(Clone, Copy)]
struct FieldType {
    signed: bool,
    bits: u32,
}

/// One parsed GET, SET or INCRBY.
struct FieldOp {
    kind: OpKind,
    field: FieldType,
    offset: u64,
    /// The SET value or INCRBY increment.
    value: i64,
    overflow: Overflow,
}

impl FieldType {
    fn parse(arg: &[u8]) -> Result<FieldType, CmdError> {
        let signed = match arg.first() {
            Some(b'i') => true,
            Some(b'u') => false,
            _ => return Err(INVALID_TYPE.into()),
        };
        // Redis reads the width as a C string: it ends at the first NUL byte.
        let digits = &arg[1..];
        let digits = &digits[..digits.iter().position(|&b| b == 0).unwrap_or(digits.len())];
        let max_bits = if signed { 64 } else { 63 };
        match slotproxy::numbers::parse_i64(digits) {
            Some(bits) if (1..=max_bits).contains(&bits) => Ok(FieldType {
                signed,
                bits: bits as u32,
            }),
            _ => Err(INVALID_TYPE.into()),
        }
    }

    /// The last bit a field at `offset` covers.
    fn last_bit(self, offset: u64) -> u64 {
        offset + u64::from(self.bits) - 1
    }
}

fn parse_ops(args: &[Bytes], max_bulk_len: usize) -> Result<Vec<FieldOp>, CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut i = 2;
    while i < args.len() {
        let name = &args[i];
        let remaining = args.len() - i - 1;
        let kind = if args::is(name, "get") && remaining >= 2 {
            OpKind::Get
        } else if args::is(name, "set") && remaining >= 3 {
            OpKind::Set
        } else if args::is(name, "incrby") && remaining >= 3 {
            OpKind::IncrBy
        } else if args::is(name, "overflow") && remaining >= 1 {
            let mode = &args[i + 1];
            overflow = if args::is(mode, "wrap") {
                Overflow::Wrap
            } else if args::is(mode, "sat") {
                Overflow::Sat
            } else if args::is(mode, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified".into());
            };
            i += 2;
            continue;
        } else {
            return Err(SYNTAX.into());
        };
        let field = FieldType::parse(&args[i + 1])?;
        let offset = bit_offset(&args[i + 2], Some(field.bits), max_bulk_len)?;
        let value = if kind == OpKind::Get {
            0
        } else {
            args::int(&args[i + 3])?
        };
        ops.push(FieldOp {
            kind,
            field,
            offset,
            value,
            overflow,
        });
        i += if kind == OpKind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// Reads `bits` bits at `offset` as an unsigned number; bits past the end read as zero.
fn read_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    (offset..offset + u64::from(bits)).fold(0, |value, pos| {
        let byte = bytes.get((pos >> 3) as usize).copied().unwrap_or(0);
        (value << 1) | u64::from((byte >> (7 - (pos & 7))) & 1)
    })
}

/// Reads a field, sign-extending signed ones.
fn read_field(bytes: &[u8], offset: u64, field: FieldType) -> i64 {
    let raw = read_unsigned(bytes, offset, field.bits);
    if field.signed && field.bits < 64 && raw >> (field.bits - 1) & 1 == 1 {
        (raw | (u64::MAX << field.bits)) as i64
    } else {
        raw as i64
    }
}

/// Writes the low `bits` bits of `value` at `offset` (which the string covers).
fn write_field(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..bits {
        let pos = offset + u64::from(i);
        let mask = 0x80u8 >> (pos & 7);
        let byte = &mut bytes[(pos >> 3) as usize];
        if (value >> (bits - 1 - i)) & 1 == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// Where `value + incr` lands for an unsigned field of `bits` (< 64) bits: Ok(sum) when it
/// fits, Err(result under WRAP or SAT) when it overflows. Compares like Redis does, so a
/// negative SET value counts as a huge one (saturating to the maximum).
fn unsigned_add(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Result<u64, u64> {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let saturated = if value > max || (incr > 0 && incr > max_incr) {
        max
    } else if incr < 0 && incr < min_incr {
        0
    } else {
        return Ok(value.wrapping_add(incr as u64));
    };
    match overflow {
        Overflow::Sat => Err(saturated),
        _ => Err(value.wrapping_add(incr as u64) & max),
    }
}

/// The signed counterpart of [`unsigned_add`], for `bits` up to 64.
fn signed_add(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Result<i64, i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    // Only used once `value` is known to be in range, where they cannot overflow.
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let saturated = if value > max
        || (bits != 64 && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr)
    {
        max
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        min
    } else {
        return Ok(value.wrapping_add(incr));
    };
    if overflow == Overflow::Sat {
        return Err(saturated);
    }
    // Wrap: keep the low bits and sign-extend from the field's top bit.
    let mut sum = (value as u64).wrapping_add(incr as u64);
    if bits < 64 {
        let high = u64::MAX << bits;
        if sum & (1 << (bits - 1)) != 0 {
            sum |= high;
        } else {
            sum &= !high;
        }
    }
    Err(sum as i64)
}

/// Runs a SET or INCRBY on `bytes`. Returns the reply (None for a FAIL overflow) and whether
/// the field changed.
fn run_write(bytes: &mut [u8], op: &FieldOp) -> (Option<i64>, bool) {
    let FieldOp {
        kind,
        field,
        offset,
        value,
        overflow,
    } = *op;
    let (old, new, reply) = if field.signed {
        let old = read_field(bytes, offset, field);
        let (start, incr) = match kind {
            OpKind::IncrBy => (old, value),
            _ => (value, 0),
        };
        let new = match signed_add(start, incr, field.bits, overflow) {
            Ok(new) => new,
            Err(_) if overflow == Overflow::Fail => return (None, false),
            Err(limited) => limited,
        };
        let reply = if kind == OpKind::IncrBy { new } else { old };
        (old as u64, new as u64, reply)
    } else {
        let old = read_unsigned(bytes, offset, field.bits);
        let (start, incr) = match kind {
            OpKind::IncrBy => (old, value),
            _ => (value as u64, 0),
        };
        let new = match unsigned_add(start, incr, field.bits, overflow) {
            Ok(new) => new,
            Err(_) if overflow == Overflow::Fail => return (None, false),
            Err(limited) => limited,
        };
        let reply = if kind == OpKind::IncrBy { new } else { old };
        (old, new, reply as i64)
    };
    write_field(bytes, offset, field.bits, new);
    (Some(reply), old != new)
}

fn bitfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, false)
}

fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, true)
}

fn run(ctx: &mut Ctx<'_>, args: &[Bytes], read_only: bool) -> CmdResult {
    let ops = parse_ops(args, max_bulk_len(ctx))?;
    let last_written_bit = ops
        .iter()
        .filter(|op| op.kind != OpKind::Get)
        .map(|op| op.field.last_bit(op.offset))
        .max();
    let replies: Vec<Option<i64>> = match last_written_bit {
        None => {
            let bytes = read_string(ctx.db(), &args[1])?.unwrap_or_default();
            ops.iter()
                .map(|op| Some(read_field(bytes, op.offset, op.field)))
                .collect()
        }
        Some(_) if read_only => {
            return Err("ERR BITFIELD_RO only supports the GET subcommand".into());
        }
        Some(last_bit) => {
            // The offset check bounds `last_bit` to a few bytes past proto-max-bulk-len.
            let target = string_for_bit_write(ctx.db(), &args[1], (last_bit >> 3) as usize + 1)?;
            let mut changes = 0u64;
            let replies = ops
                .iter()
                .map(|op| {
                    if op.kind == OpKind::Get {
                        return Some(read_field(target.bytes, op.offset, op.field));
                    }
                    let (reply, changed) = run_write(target.bytes, op);
                    if reply.is_some() && (changed || target.grown) {
                        changes += 1;
                    }
                    reply
                })
                .collect();
            // Creating the key already counted one change.
            let created = u64::from(target.created);
            let db = ctx.db();
            db.dirty = (db.dirty + changes).saturating_sub(created);
            if changes > 0 {
                ctx.notify(crate::pubsub::notify::STRING, "setbit", &args[1]);
            }
            replies
        }
    };
    ctx.out.array(replies.len());
    for reply in replies {
        match reply {
            Some(n) => ctx.out.integer(n),
            None => ctx.out.null(),
        }
    }
    Ok(())
}
