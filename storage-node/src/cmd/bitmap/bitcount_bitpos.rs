//! Counting and searching bits.
//!
//! - `BITCOUNT key [start end [BYTE|BIT]]` → integer: the number of set bits in the string,
//!   or in the inclusive range (bytes by default, bits with `BIT`). Negative indexes count
//!   from the end and the range is clamped to the string. A missing key answers 0 before the
//!   arguments are even looked at (as Redis 7.0 does), then WRONGTYPE; a start/end that is
//!   not an integer is `ERR value is not an integer or out of range`; both negative with
//!   start > end answers 0; a unit other than BYTE|BIT, or a lone start, is `ERR syntax error`.
//! - `BITPOS key bit [start [end [BYTE|BIT]]]` → integer: the position (in bits from the
//!   start of the string) of the first bit equal to `bit`, or -1. `bit` must be 0 or 1
//!   (`ERR The bit argument must be 1 or 0.`). A missing key answers 0 when looking for 0
//!   and -1 when looking for 1. When searching for 0 without an explicit end, the string is
//!   taken as followed by zeros, so an all-ones string answers its length in bits; with an
//!   explicit end the search stays inside the range and answers -1. An empty range answers -1.

use bytes::Bytes;

use super::super::errors::{CmdError, SYNTAX};
use super::super::{args, CmdResult, Ctx};
use super::read_string;

/// `BYTE` (false) or `BIT` (true) units for a range.
fn bit_units(arg: &[u8]) -> Result<bool, CmdError> {
    if args::is(arg, "bit") {
        Ok(true)
    } else if args::is(arg, "byte") {
        Ok(false)
    } else {
        Err(SYNTAX.into())
    }
}

/// Resolves an inclusive `start..=end` range over `total` units, with negative indexes
/// counting from the end, clamped to the string. None when the range is empty.
fn clamp_range(start: i64, end: i64, total: i64) -> Option<(u64, u64)> {
    let resolve = |i: i64| if i < 0 { total + i } else { i }.max(0);
    let start = resolve(start);
    let end = resolve(end).min(total - 1);
    (start <= end).then_some((start as u64, end as u64))
}

/// Inclusive bit range of the inclusive byte range `start..=end`.
fn byte_range_in_bits((start, end): (u64, u64)) -> (u64, u64) {
    (start * 8, end * 8 + 7)
}

/// Counts the set bits of `bytes`, eight bytes at a time.
pub(crate) fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut count: u64 = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        count += u64::from(u64::from_ne_bytes(word).count_ones());
    }
    count
        + chunks
            .remainder()
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum::<u64>()
}

/// Bits of a byte at or after bit `offset & 7`.
fn from_bit_mask(offset: u64) -> u8 {
    0xFF >> (offset & 7)
}

/// Bits of a byte at or before bit `offset & 7`.
fn through_bit_mask(offset: u64) -> u8 {
    !((0xFFu16 >> ((offset & 7) + 1)) as u8)
}

/// Counts the set bits in the inclusive bit range `first..=last` (inside `bytes`).
fn count_bits(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let whole = popcount(&bytes[first_byte..=last_byte]);
    let before = (bytes[first_byte] & !from_bit_mask(first)).count_ones();
    let after = (bytes[last_byte] & !through_bit_mask(last)).count_ones();
    whole - u64::from(before) - u64::from(after)
}

/// Index of the first byte holding a bit equal to `bit`, skipping uninteresting bytes eight
/// at a time.
fn first_byte_with(bytes: &[u8], bit: bool) -> Option<usize> {
    let (skip_byte, skip_word) = if bit { (0u8, 0u64) } else { (0xFF, u64::MAX) };
    let mut chunks = bytes.chunks_exact(8);
    let mut index = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if u64::from_ne_bytes(word) != skip_word {
            break;
        }
        index += 8;
    }
    bytes[index..]
        .iter()
        .position(|&b| b != skip_byte)
        .map(|i| index + i)
}

/// Position of the first bit equal to `bit` in the inclusive bit range `first..=last`.
fn find_bit(bytes: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    // Look at every byte so that the wanted bits read as ones.
    let wanted = |byte: u8| if bit { byte } else { !byte };
    let hit = |index: usize, ones: u8| {
        (ones != 0).then(|| index as u64 * 8 + u64::from(ones.leading_zeros()))
    };
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let head = wanted(bytes[first_byte]) & from_bit_mask(first);
    if first_byte == last_byte {
        return hit(first_byte, head & through_bit_mask(last));
    }
    if let Some(found) = hit(first_byte, head) {
        return Some(found);
    }
    let middle = &bytes[first_byte + 1..last_byte];
    if let Some(i) = first_byte_with(middle, bit) {
        return hit(first_byte + 1 + i, wanted(middle[i]));
    }
    hit(last_byte, wanted(bytes[last_byte]) & through_bit_mask(last))
}

pub(super) fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis 7.0 looks the key up before parsing the range.
    let Some(bytes) = read_string(ctx.db(), &args[1])? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let bit_range = match args.len() {
        2 => (!bytes.is_empty()).then(|| (0, bytes.len() as u64 * 8 - 1)),
        4 | 5 => {
            let start = args::int(&args[2])?;
            let end = args::int(&args[3])?;
            if start < 0 && end < 0 && start > end {
                None
            } else {
                let in_bits = match args.get(4) {
                    Some(unit) => bit_units(unit)?,
                    None => false,
                };
                let len = bytes.len() as i64;
                if in_bits {
                    clamp_range(start, end, len * 8)
                } else {
                    clamp_range(start, end, len).map(byte_range_in_bits)
                }
            }
        }
        _ => return Err(SYNTAX.into()),
    };
    let count = bit_range.map_or(0, |(first, last)| count_bits(bytes, first, last));
    ctx.out.integer(count as i64);
    Ok(())
}

pub(super) fn bitpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let bit = match args::int(&args[2])? {
        0 => false,
        1 => true,
        _ => return Err("ERR The bit argument must be 1 or 0.".into()),
    };
    let Some(bytes) = read_string(ctx.db(), &args[1])? else {
        // A missing key is an endless run of zeros.
        ctx.out.integer(if bit { -1 } else { 0 });
        return Ok(());
    };
    let len = bytes.len() as i64;
    let (bit_range, end_given) = match args.len() {
        3 => (clamp_range(0, -1, len).map(byte_range_in_bits), false),
        4..=6 => {
            let start = args::int(&args[3])?;
            let in_bits = match args.get(5) {
                Some(unit) => bit_units(unit)?,
                None => false,
            };
            let end = match args.get(4) {
                Some(end) => Some(args::int(end)?),
                None => None,
            };
            let range = if in_bits {
                clamp_range(start, end.unwrap_or(-1), len * 8)
            } else {
                clamp_range(start, end.unwrap_or(-1), len).map(byte_range_in_bits)
            };
            (range, end.is_some())
        }
        _ => return Err(SYNTAX.into()),
    };
    let Some((first, last)) = bit_range else {
        ctx.out.integer(-1);
        return Ok(());
    };
    let position = match find_bit(bytes, first, last, bit) {
        Some(position) => position as i64,
        // Without an explicit end, the zeros after the string count: the first one is just
        // past the last byte searched.
        None if !bit && !end_given => ((last >> 3) as i64 + 1) * 8,
        None => -1,
    };
    ctx.out.integer(position);
    Ok(())
}
