//! A software model of the x87 80-bit `long double` that Redis's INCRBYFLOAT computes with.
//!
//! Redis parses both operands with `strtold`, adds them in 80-bit precision (64-bit
//! mantissa, 15-bit exponent, round to nearest even), and formats the sum with `"%.17Lf"`
//! before trimming trailing zeros. `f64` would give different digits (`0.1 + 0.2` is `0.3`
//! in Redis but `0.30000000000000004` in `f64`), so every step is done exactly here:
//! parsing rounds the exact decimal value once, addition keeps guard and sticky bits, and
//! formatting prints the exact binary value rounded to 17 decimals.

mod bignum;
mod parse;

use bignum::BigUint;

pub use parse::parse;

/// The exponent of the lowest mantissa bit of the smallest numbers (subnormals and the
/// smallest normal): the smallest positive value is `2^-16445`.
const MIN_LSB_EXPONENT: i64 = -16445;

/// The exponent of the lowest mantissa bit of the largest numbers: the largest finite value
/// is `(2^64 - 1) * 2^16320`, just under `2^16384`.
const MAX_LSB_EXPONENT: i64 = 16320;

/// Decimals that `"%.17Lf"` prints.
const FRACTION_DIGITS: usize = 17;
const FRACTION_SCALE: u128 = 100_000_000_000_000_000;

/// A finite 80-bit float: `(-1)^negative * mantissa * 2^exponent`.
///
/// A non-zero mantissa has its top bit set, except for subnormals, whose exponent is
/// [`MIN_LSB_EXPONENT`]; zero has a zero mantissa.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongDouble {
    negative: bool,
    mantissa: u64,
    exponent: i64,
}

/// What `strtold` reads from a valid number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    Finite(LongDouble),
    /// `inf` / `infinity`, either sign; any sum with it is infinite or NaN.
    Infinite,
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble {
        negative: false,
        mantissa: 0,
        exponent: 0,
    };

    /// An exact integer (every `i64` fits a 64-bit mantissa).
    pub fn from_i64(n: i64) -> LongDouble {
        round(n < 0, u128::from(n.unsigned_abs()), 0, false).unwrap_or(LongDouble::ZERO)
    }

    /// A finite `f64`, exactly (the 80-bit format holds every `f64`), as C promotes a
    /// `double` to `long double`; None for infinities and NaN.
    pub fn from_f64(d: f64) -> Option<LongDouble> {
        if !d.is_finite() {
            return None;
        }
        let bits = d.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1 << 52) - 1);
        let (mantissa, exponent) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1 << 52), biased - 1075)
        };
        round(d.is_sign_negative(), u128::from(mantissa), exponent, false)
    }

    /// The nearest `f64` (infinite beyond its range), for uses that need no 80-bit
    /// precision, such as blocking timeouts.
    pub fn to_f64(&self) -> f64 {
        let magnitude =
            (self.mantissa as f64) * 2f64.powi(self.exponent.clamp(-20000, 20000) as i32);
        if self.negative {
            -magnitude
        } else {
            magnitude
        }
    }

    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// The correctly rounded sum, or None if it overflows to infinity.
    pub fn checked_add(self, other: LongDouble) -> Option<LongDouble> {
        if other.is_zero() {
            return Some(self);
        }
        if self.is_zero() {
            return Some(other);
        }
        let (high, low) = if self.exponent >= other.exponent {
            (self, other)
        } else {
            (other, self)
        };
        // 62 guard bits below each mantissa, and the bits shifted out of the smaller operand
        // folded into its lowest bit ("sticky"): exact enough for correct rounding, because
        // when anything is shifted out the operands are at least 2 binary orders apart.
        const GUARD: u32 = 62;
        let high_bits = u128::from(high.mantissa) << GUARD;
        let distance = (high.exponent - low.exponent) as u64;
        let low_full = u128::from(low.mantissa) << GUARD;
        let low_bits = if distance >= 127 {
            u128::from(low_full != 0)
        } else {
            let shifted = low_full >> distance;
            shifted | u128::from(shifted << distance != low_full)
        };
        let exponent = high.exponent - i64::from(GUARD);
        if high.negative == low.negative {
            round(high.negative, high_bits + low_bits, exponent, false)
        } else if high_bits >= low_bits {
            round(high.negative, high_bits - low_bits, exponent, false)
        } else {
            round(low.negative, low_bits - high_bits, exponent, false)
        }
    }

    /// The text Redis stores and replies for an INCRBYFLOAT result: `"%.17Lf"` with the
    /// trailing zeros (and a bare `.`) removed, and `-0` written `0`.
    pub fn to_human_string(&self) -> String {
        let (integer, fraction) = self.integer_and_fraction();
        let mut text = String::new();
        if self.negative {
            text.push('-');
        }
        text.push_str(&integer);
        let fraction = format!("{fraction:0width$}", width = FRACTION_DIGITS);
        let fraction = fraction.trim_end_matches('0');
        if !fraction.is_empty() {
            text.push('.');
            text.push_str(fraction);
        }
        if text == "-0" {
            text = "0".into();
        }
        text
    }

    /// The integer part in decimal, and the fraction rounded (half to even, as glibc's
    /// printf) to 17 decimals, as an integer below 10^17.
    fn integer_and_fraction(&self) -> (String, u128) {
        let mantissa = self.mantissa;
        if self.exponent >= 0 {
            let mut integer = BigUint::from_u128(u128::from(mantissa));
            integer.shl(self.exponent as u64);
            return (integer.to_decimal(), 0);
        }
        let shift = self.exponent.unsigned_abs();
        let (mut integer, fraction_bits) = if shift >= 64 {
            (0u64, mantissa)
        } else {
            (mantissa >> shift, mantissa & ((1u64 << shift) - 1))
        };
        // fraction_bits / 2^shift, scaled by 10^17: below 2^121, so it fits.
        let scaled = u128::from(fraction_bits) * FRACTION_SCALE;
        let mut fraction = if shift >= 128 { 0 } else { scaled >> shift };
        let round_up = match shift {
            s if s > 128 => false,
            128 => scaled > 1 << 127,
            s => {
                let remainder = scaled & ((1u128 << s) - 1);
                let half = 1u128 << (s - 1);
                remainder > half || (remainder == half && fraction % 2 == 1)
            }
        };
        if round_up {
            fraction += 1;
            if fraction == FRACTION_SCALE {
                fraction = 0;
                integer += 1;
            }
        }
        (integer.to_string(), fraction)
    }
}

/// Rounds `±magnitude * 2^exponent` (plus, if `sticky`, a positive amount below the lowest
/// bit of `magnitude`) to the nearest 80-bit float, ties to even. None if it overflows.
///
/// When `sticky` is set, `magnitude` must have more than 65 significant bits, so that the
/// sticky part lies below the rounding position.
fn round(negative: bool, magnitude: u128, exponent: i64, sticky: bool) -> Option<LongDouble> {
    if magnitude == 0 {
        return Some(LongDouble {
            negative,
            ..LongDouble::ZERO
        });
    }
    let bits = i64::from(128 - magnitude.leading_zeros());
    let top_exponent = exponent + bits - 1;
    let mut lsb_exponent = (top_exponent - 63).max(MIN_LSB_EXPONENT);
    let shift = lsb_exponent - exponent;
    let mut kept = if shift <= 0 {
        magnitude << shift.unsigned_abs()
    } else if shift >= 128 {
        let round_up = shift == 128 && (magnitude > 1 << 127 || (magnitude == 1 << 127 && sticky));
        u128::from(round_up)
    } else {
        let kept = magnitude >> shift;
        let remainder = magnitude & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let round_up = remainder > half || (remainder == half && (sticky || kept % 2 == 1));
        kept + u128::from(round_up)
    };
    if kept >> 64 != 0 {
        kept >>= 1;
        lsb_exponent += 1;
    }
    if lsb_exponent > MAX_LSB_EXPONENT {
        return None;
    }
    Some(LongDouble {
        negative,
        mantissa: kept as u64,
        exponent: if kept == 0 { 0 } else { lsb_exponent },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_convert_exactly() {
        // What Redis's addReplyHumanLongDouble prints for these doubles.
        let human = |d: f64| LongDouble::from_f64(d).unwrap().to_human_string();
        assert_eq!(human(85.05112878), "85.0511287799999991");
        // The centre of the westmost geohash cell.
        let west = -180.0 + 0.5 * 360.0 / 2f64.powi(26);
        assert_eq!(human(west), "-179.99999731779098511");
        assert_eq!(human(180.0), "180");
        assert_eq!(human(-0.0), "0");
        assert_eq!(human(2f64.powi(-18)), "0.00000381469726562");
        assert_eq!(human(5e-324), "0");
        assert!(LongDouble::from_f64(f64::INFINITY).is_none());
    }

    fn value(text: &str) -> LongDouble {
        match parse(text.as_bytes()) {
            Some(Parsed::Finite(v)) => v,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn sum(a: &str, b: &str) -> String {
        value(a)
            .checked_add(value(b))
            .expect("finite sum")
            .to_human_string()
    }

    #[test]
    fn sums_print_like_redis() {
        assert_eq!(sum("0.1", "0.2"), "0.3");
        assert_eq!(sum("10.5", "0.1"), "10.6");
        assert_eq!(sum("5.0e3", "2.0e2"), "5200");
        assert_eq!(sum("0", "-0"), "0");
        assert_eq!(sum("1", "-1"), "0");
        assert_eq!(sum("0", "0.000003814697265625"), "0.00000381469726562");
        assert_eq!(sum("0", "0.000011444091796875"), "0.00001144409179688");
        assert_eq!(sum("0", "1e-30"), "0");
        assert_eq!(sum("0", "-1e-30"), "0");
        assert_eq!(sum("0", "1e20"), "100000000000000000000");
        assert_eq!(sum("0", "0x1p4"), "16");
        assert_eq!(sum("9223372036854775807", "1"), "9223372036854775808");
    }

    #[test]
    fn integers_are_exact() {
        assert_eq!(
            LongDouble::from_i64(i64::MIN).to_human_string(),
            "-9223372036854775808"
        );
        assert_eq!(LongDouble::from_i64(0).to_human_string(), "0");
    }

    #[test]
    fn overflow_is_detected() {
        assert_eq!(value("1e4932").checked_add(value("1e4932")), None);
        assert!(value("1e4932").checked_add(value("-1e4932")).is_some());
    }
}
