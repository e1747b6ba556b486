//! The dense encoding: 16,384 registers of 6 bits packed least significant bit first
//! (register 0 is the low 6 bits of the first byte), 12,288 bytes after the header.
//!
//! Redis reads and writes one byte past a register's first byte; for the last register
//! that byte is the string's terminator, and the bits involved are always zero. Here a
//! missing byte reads as zero and is not written, which gives the same results.

use super::{Histogram, REGISTERS, REGISTER_MAX};

/// The value of register `index`.
pub fn get(registers: &[u8], index: usize) -> u8 {
    let byte = index * 6 / 8;
    let shift = (index * 6) & 7;
    let low = u32::from(registers.get(byte).copied().unwrap_or(0));
    let high = u32::from(registers.get(byte + 1).copied().unwrap_or(0));
    (((low >> shift) | (high << (8 - shift))) & u32::from(REGISTER_MAX)) as u8
}

/// Sets register `index` to `value` (at most 63).
pub fn put(registers: &mut [u8], index: usize, value: u8) {
    let byte = index * 6 / 8;
    let shift = (index * 6) & 7;
    let value = u32::from(value & REGISTER_MAX);
    let max = u32::from(REGISTER_MAX);
    if let Some(low) = registers.get_mut(byte) {
        *low &= !((max << shift) as u8);
        *low |= (value << shift) as u8;
    }
    if let Some(high) = registers.get_mut(byte + 1) {
        *high &= !((max >> (8 - shift)) as u8);
        *high |= (value >> (8 - shift)) as u8;
    }
}

/// Raises register `index` to `count` if it is lower; returns whether it changed.
pub fn raise(registers: &mut [u8], index: usize, count: u8) -> bool {
    if count > get(registers, index) {
        put(registers, index, count);
        true
    } else {
        false
    }
}

/// The registers in groups of four, each group unpacked from the three bytes it fills
/// exactly. Loops over whole registers go by group: an iterator flattening the groups
/// into single registers cost ~35 instructions per register (PFCOUNT of three dense keys
/// spent 2.5 million instructions on it), a loop over groups a few.
pub fn groups(registers: &[u8]) -> impl Iterator<Item = [u8; 4]> + '_ {
    registers.chunks_exact(3).take(REGISTERS / 4).map(|group| {
        let (a, b, c) = (group[0], group[1], group[2]);
        [
            a & 63,
            (a >> 6 | b << 2) & 63,
            (b >> 4 | c << 4) & 63,
            c >> 2,
        ]
    })
}

/// Every register's value in order.
pub fn values(registers: &[u8]) -> impl Iterator<Item = u8> + '_ {
    groups(registers).flatten()
}

/// How many registers hold each value.
pub fn histogram(registers: &[u8]) -> Histogram {
    let mut histogram = [0u64; 64];
    for group in groups(registers) {
        for value in group {
            histogram[usize::from(value)] += 1;
        }
    }
    histogram
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_do_not_disturb_their_neighbours() {
        let mut registers = vec![0u8; REGISTERS * 6 / 8];
        for index in 0..REGISTERS {
            put(&mut registers, index, (index % 64) as u8);
        }
        for index in 0..REGISTERS {
            assert_eq!(
                get(&registers, index),
                (index % 64) as u8,
                "register {index}"
            );
        }
        let histogram = histogram(&registers);
        assert!(histogram.iter().all(|&n| n == (REGISTERS / 64) as u64));
        assert!(values(&registers)
            .enumerate()
            .all(|(i, v)| v == (i % 64) as u8));
        assert_eq!(groups(&registers).count(), REGISTERS / 4);
        assert!(!raise(&mut registers, 5, 5));
        assert!(raise(&mut registers, 5, 6));
        assert_eq!(get(&registers, 5), 6);
        assert_eq!(get(&registers, 4), 4);
        assert_eq!(get(&registers, 6), 6);
    }
}
