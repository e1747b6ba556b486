//! The sparse encoding: after the header, a run-length list of opcodes covering all
//! 16,384 registers in order.
//!
//! - `ZERO` `00xxxxxx`: 1 to 64 registers set to 0 (length - 1 in six bits);
//! - `XZERO` `01xxxxxx yyyyyyyy`: 1 to 16,384 registers set to 0 (length - 1 in 14 bits);
//! - `VAL` `1vvvvvxx`: 1 to 4 registers set to a value from 1 to 32 (both minus 1).
//!
//! A register above 32, or a string that would grow past `hll-sparse-max-bytes`, turns the
//! value dense. The functions follow Redis's `hllSparseSet` step by step (including where
//! it stops scanning and how it merges neighbours afterwards), since the bytes it produces
//! are what GET and DUMP show. An XZERO cut short by the end of a corrupt string reads its
//! missing second byte as 0, as Redis reads the string's terminator there. (After Redis
//! splits such an opcode, a byte of the split can remain past the end, and Redis's next
//! read of the cut opcode sees it; the node cannot keep bytes past a string's end, so its
//! next read sees 0. The README lists this one difference.)

use super::{dense, Corrupt, Histogram, HEADER_LEN, REGISTERS};

/// The largest value a VAL opcode holds.
pub const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;

/// One decoded opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Zero(usize),
    XZero(usize),
    /// Value, run length.
    Val(u8, usize),
}

impl Opcode {
    /// Decodes the opcode starting at `at` (which must be inside `bytes`).
    pub fn at(bytes: &[u8], at: usize) -> Opcode {
        let first = bytes[at];
        if first & 0x80 != 0 {
            Opcode::Val(((first >> 2) & 0x1f) + 1, usize::from(first & 3) + 1)
        } else if first & 0x40 != 0 {
            let second = bytes.get(at + 1).copied().unwrap_or(0);
            Opcode::XZero(((usize::from(first & 0x3f) << 8) | usize::from(second)) + 1)
        } else {
            Opcode::Zero(usize::from(first & 0x3f) + 1)
        }
    }

    /// Registers covered.
    pub fn span(self) -> usize {
        match self {
            Opcode::Zero(n) | Opcode::XZero(n) | Opcode::Val(_, n) => n,
        }
    }

    /// Bytes taken.
    fn width(self) -> usize {
        match self {
            Opcode::XZero(_) => 2,
            Opcode::Zero(_) | Opcode::Val(..) => 1,
        }
    }
}

fn val(value: u8, len: usize) -> u8 {
    ((value - 1) << 2) | (len as u8 - 1) | 0x80
}

/// Appends the shortest opcode for a run of `len` zero registers.
fn push_zeros(seq: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        seq.push(0x40 | ((len - 1) >> 8) as u8);
        seq.push(((len - 1) & 0xff) as u8);
    } else {
        seq.push((len - 1) as u8);
    }
}

/// The payload of an empty HLL: XZERO opcodes for every register.
pub fn empty_payload() -> Vec<u8> {
    let mut payload = Vec::new();
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(1 << 14);
        payload.push(0x40 | ((run - 1) >> 8) as u8);
        payload.push(((run - 1) & 0xff) as u8);
        left -= run;
    }
    payload
}

/// The opcodes of `hll` (header included) in order.
pub fn opcodes(hll: &[u8]) -> impl Iterator<Item = Opcode> + '_ {
    let mut at = HEADER_LEN;
    std::iter::from_fn(move || {
        let op = (at < hll.len()).then(|| Opcode::at(hll, at))?;
        at += op.width();
        Some(op)
    })
}

/// How many registers hold each value, or `Corrupt` if the opcodes do not cover exactly
/// all the registers.
pub fn histogram(hll: &[u8]) -> Result<Histogram, Corrupt> {
    let mut histogram = [0u64; 64];
    let mut covered = 0usize;
    for op in opcodes(hll) {
        let value = match op {
            Opcode::Val(value, _) => usize::from(value),
            Opcode::Zero(_) | Opcode::XZero(_) => 0,
        };
        histogram[value] += op.span() as u64;
        covered += op.span();
    }
    if covered == REGISTERS {
        Ok(histogram)
    } else {
        Err(Corrupt)
    }
}

/// Calls `each(index, value)` for every non-zero register, or fails if the opcodes do not
/// cover exactly all the registers. A VAL run past the last register fails at once (even
/// after a complete cover), as redis-server 7.0.15 does.
pub fn for_each_register(hll: &[u8], mut each: impl FnMut(usize, u8)) -> Result<(), Corrupt> {
    let mut index = 0usize;
    for op in opcodes(hll) {
        if let Opcode::Val(value, len) = op {
            if index + len > REGISTERS {
                return Err(Corrupt);
            }
            for register in index..index + len {
                each(register, value);
            }
        }
        index += op.span();
    }
    if index == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// The dense form of the sparse `hll`: same header (cached cardinality and stale bit
/// included) with the dense encoding byte, and the registers packed.
pub fn to_dense(hll: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut dense_hll = vec![0u8; super::DENSE_LEN];
    dense_hll[..HEADER_LEN].copy_from_slice(&hll[..HEADER_LEN]);
    dense_hll[super::ENCODING_AT] = super::DENSE;
    let registers = &mut dense_hll[HEADER_LEN..];
    for_each_register(hll, |index, value| dense::put(registers, index, value))?;
    Ok(dense_hll)
}

/// What [`set`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum SetOutcome {
    /// The register already held `count` or more.
    Unchanged,
    /// The register was raised in place.
    Raised,
    /// The register needs a value or room the sparse form cannot give: convert to dense.
    Promote,
}

/// Raises register `index` of the sparse `hll` to `count` if it is lower, splitting and
/// then merging opcodes as Redis does. `max_bytes` is `hll-sparse-max-bytes`.
pub fn set(
    hll: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<SetOutcome, Corrupt> {
    if count > VAL_MAX_VALUE {
        return Ok(SetOutcome::Promote);
    }
    // Step 1: find the opcode covering the register.
    let end = hll.len();
    let mut at = HEADER_LEN;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    while at < end {
        let op = Opcode::at(hll, at);
        span = op.span();
        if index < first + span {
            break;
        }
        prev = Some(at);
        at += op.width();
        first += span;
    }
    if span == 0 || at >= end {
        return Err(Corrupt);
    }
    let op = Opcode::at(hll, at);
    // Step 2: the cases changed in place.
    match op {
        Opcode::Val(old, _) if old >= count => return Ok(SetOutcome::Unchanged),
        Opcode::Val(_, 1) | Opcode::Zero(1) => {
            hll[at] = val(count, 1);
            merge_neighbours(hll, prev.unwrap_or(HEADER_LEN));
            return Ok(SetOutcome::Raised);
        }
        _ => {}
    }
    // Otherwise split the opcode around the register: at most XZERO-VAL-XZERO, 5 bytes.
    let last = first + span - 1;
    let mut seq = Vec::with_capacity(5);
    match op {
        Opcode::Zero(_) | Opcode::XZero(_) => {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        }
        Opcode::Val(current, _) => {
            if index != first {
                seq.push(val(current, index - first));
            }
            seq.push(val(count, 1));
            if index != last {
                seq.push(val(current, last - index));
            }
        }
    }
    // Step 3: put the sequence in the opcode's place, unless that grows the string past
    // the limit.
    let new_len = (end + seq.len()).saturating_sub(op.width());
    if seq.len() > op.width() && new_len > max_bytes {
        return Ok(SetOutcome::Promote);
    }
    let rest = (at + op.width()).min(end);
    hll.splice(at..rest, seq);
    // An XZERO cut short by the end of the string counted a byte it did not have.
    hll.truncate(new_len);
    // Step 4: merge equal VAL neighbours.
    merge_neighbours(hll, prev.unwrap_or(HEADER_LEN));
    Ok(SetOutcome::Raised)
}

/// Merges adjacent VAL opcodes of equal value whose lengths fit one opcode, looking at up
/// to five opcodes from `from` (Redis's step 4 of `hllSparseSet`).
fn merge_neighbours(hll: &mut Vec<u8>, from: usize) {
    let mut at = from;
    let mut budget = 5;
    while at < hll.len() && budget > 0 {
        budget -= 1;
        match Opcode::at(hll, at) {
            Opcode::XZero(_) => {
                at += 2;
                continue;
            }
            Opcode::Zero(_) => {
                at += 1;
                continue;
            }
            Opcode::Val(value, len) => {
                if at + 1 < hll.len() {
                    if let Opcode::Val(next_value, next_len) = Opcode::at(hll, at + 1) {
                        if next_value == value && len + next_len <= VAL_MAX_LEN {
                            hll[at + 1] = val(value, len + next_len);
                            hll.remove(at);
                            // Try the merged opcode against its right neighbour too.
                            continue;
                        }
                    }
                }
            }
        }
        at += 1;
    }
}

/// `PFDEBUG DECODE`'s text: `z:LEN`, `Z:LEN` and `v:VALUE,LEN` separated by spaces.
pub fn decode(hll: &[u8]) -> String {
    let words: Vec<String> = opcodes(hll)
        .map(|op| match op {
            Opcode::Zero(len) => format!("z:{len}"),
            Opcode::XZero(len) => format!("Z:{len}"),
            Opcode::Val(value, len) => format!("v:{value},{len}"),
        })
        .collect();
    words.join(" ")
}
