//! Just enough unsigned big-integer arithmetic for exact decimal ⇄ binary conversion of
//! 80-bit floats: values reach about 2^34000 (a 5 KB decimal string over a power of ten).

use std::cmp::Ordering;

/// An unsigned integer as little-endian 32-bit limbs, without high zero limbs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BigUint {
    limbs: Vec<u32>,
}

/// The largest power of ten in a limb, used to convert nine decimal digits at a time.
const TEN_POW_9: u32 = 1_000_000_000;

impl BigUint {
    pub fn from_u128(mut n: u128) -> BigUint {
        let mut limbs = Vec::new();
        while n != 0 {
            limbs.push(n as u32);
            n >>= 32;
        }
        BigUint { limbs }
    }

    /// `10^exponent`.
    pub fn pow10(exponent: u32) -> BigUint {
        let mut n = BigUint::from_u128(1);
        n.mul_pow10(exponent);
        n
    }

    /// `self = self * 10^exponent`.
    pub fn mul_pow10(&mut self, exponent: u32) {
        for _ in 0..exponent / 9 {
            self.mul_add_small(TEN_POW_9, 0);
        }
        self.mul_add_small(10u32.pow(exponent % 9), 0);
    }

    pub fn is_zero(&self) -> bool {
        self.limbs.is_empty()
    }

    /// `self = self * factor + addend`.
    pub fn mul_add_small(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.limbs {
            let wide = u64::from(*limb) * u64::from(factor) + carry;
            *limb = wide as u32;
            carry = wide >> 32;
        }
        if carry != 0 {
            self.limbs.push(carry as u32);
        }
        self.trim();
    }

    /// Number of significant bits (0 for zero).
    pub fn bit_len(&self) -> u64 {
        match self.limbs.last() {
            None => 0,
            Some(&top) => self.limbs.len() as u64 * 32 - u64::from(top.leading_zeros()),
        }
    }

    pub fn shl(&mut self, bits: u64) {
        if self.is_zero() || bits == 0 {
            return;
        }
        let limb_shift = (bits / 32) as usize;
        let bit_shift = (bits % 32) as u32;
        let mut shifted = vec![0u32; limb_shift];
        let mut carry = 0u32;
        for &limb in &self.limbs {
            if bit_shift == 0 {
                shifted.push(limb);
            } else {
                shifted.push((limb << bit_shift) | carry);
                carry = limb >> (32 - bit_shift);
            }
        }
        if carry != 0 {
            shifted.push(carry);
        }
        self.limbs = shifted;
    }

    /// Shifts right by `bits`; returns true if any 1 bit was shifted out.
    pub fn shr(&mut self, bits: u64) -> bool {
        let limb_shift = (bits / 32) as usize;
        if limb_shift >= self.limbs.len() {
            let lost = !self.is_zero();
            self.limbs.clear();
            return lost;
        }
        let bit_shift = (bits % 32) as u32;
        let mut lost = self.limbs[..limb_shift].iter().any(|&l| l != 0);
        self.limbs.drain(..limb_shift);
        if bit_shift != 0 {
            lost |= self.limbs[0] & ((1 << bit_shift) - 1) != 0;
            for i in 0..self.limbs.len() {
                let high = self.limbs.get(i + 1).map_or(0, |&h| h << (32 - bit_shift));
                self.limbs[i] = (self.limbs[i] >> bit_shift) | high;
            }
        }
        self.trim();
        lost
    }

    /// `self -= other`; `other` must not be larger.
    pub fn sub_assign(&mut self, other: &BigUint) {
        let mut borrow = 0i64;
        for (i, limb) in self.limbs.iter_mut().enumerate() {
            let diff =
                i64::from(*limb) - i64::from(other.limbs.get(i).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(diff < 0);
            *limb = diff.rem_euclid(1 << 32) as u32;
        }
        debug_assert_eq!(borrow, 0, "subtraction underflow");
        self.trim();
    }

    /// The low 128 bits.
    pub fn low_u128(&self) -> u128 {
        self.limbs
            .iter()
            .take(4)
            .enumerate()
            .fold(0, |acc, (i, &l)| acc | u128::from(l) << (32 * i))
    }

    /// Decimal digits, most significant first ("0" for zero).
    pub fn to_decimal(&self) -> String {
        let mut rest = self.clone();
        let mut chunks = Vec::new();
        while !rest.is_zero() {
            chunks.push(rest.div_small(TEN_POW_9));
        }
        let mut text = chunks.last().map_or("0".to_string(), |top| top.to_string());
        for chunk in chunks.iter().rev().skip(1) {
            text.push_str(&format!("{chunk:09}"));
        }
        text
    }

    /// `self /= divisor`, returning the remainder.
    fn div_small(&mut self, divisor: u32) -> u32 {
        let mut remainder = 0u64;
        for limb in self.limbs.iter_mut().rev() {
            let wide = (remainder << 32) | u64::from(*limb);
            *limb = (wide / u64::from(divisor)) as u32;
            remainder = wide % u64::from(divisor);
        }
        self.trim();
        remainder as u32
    }

    fn trim(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
    }
}

impl PartialOrd for BigUint {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for BigUint {
    fn cmp(&self, other: &Self) -> Ordering {
        self.limbs
            .len()
            .cmp(&other.limbs.len())
            .then_with(|| self.limbs.iter().rev().cmp(other.limbs.iter().rev()))
    }
}

/// `numerator / denominator` for a quotient known to be below 2^(`quotient_bits`) (at most
/// 127): the quotient and whether there was a remainder.
pub fn divide(numerator: &BigUint, denominator: &BigUint, quotient_bits: u32) -> (u128, bool) {
    let mut remainder = numerator.clone();
    let mut shifted = denominator.clone();
    shifted.shl(u64::from(quotient_bits - 1));
    let mut quotient = 0u128;
    for bit in (0..quotient_bits).rev() {
        if shifted <= remainder {
            remainder.sub_assign(&shifted);
            quotient |= 1 << bit;
        }
        shifted.shr(1);
    }
    (quotient, !remainder.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_round_trips() {
        let mut n = BigUint::pow10(30);
        assert_eq!(n.to_decimal(), format!("1{}", "0".repeat(30)));
        n.shl(70);
        assert!(!n.shr(70));
        assert_eq!(n, BigUint::pow10(30));
        let mut m = BigUint::from_u128(u128::MAX);
        m.mul_add_small(u32::MAX, u32::MAX);
        assert_eq!(m.bit_len(), 160);
        assert_eq!(
            divide(&BigUint::pow10(20), &BigUint::from_u128(7), 70),
            (100_000_000_000_000_000_000 / 7, true)
        );
        m.sub_assign(&m.clone());
        assert!(m.is_zero());
        assert_eq!(BigUint::from_u128(12345).to_decimal(), "12345");
    }
}
