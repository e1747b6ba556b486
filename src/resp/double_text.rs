//! Doubles as C's `printf("%.<precision>g")` writes them: what Redis 7.0 replies with and
//! stores (`%.17g` in `d2string`, scores in a listpack), and what Lua prints (`%.14g`).
//!
//! `%.Pg` takes the P significant digits of the exact binary value, correctly rounded with
//! ties to even (glibc), and the decimal exponent X of the first digit after rounding; then
//! it writes fixed notation when -4 <= X < P, else `d.ddde±XX`, without trailing zeros.
//!
//! The digits come from exact 128-bit integer arithmetic when it reaches (|d| from about
//! 1e-16 to 3e38, precision up to 17: every score in practice), and otherwise from Rust's
//! exact formatting (`{:.Ne}`, correctly rounded too, but it often falls back to a slow
//! bignum algorithm at 17 digits, which made it the hottest part of an RDB save).

use crate::numbers::IntegerText;

/// The widest precision written without allocation (`%.17g` is exact for every double).
const MAX_FAST_PRECISION: usize = 17;

/// A double formatted as `%.17g` (or a narrower precision) in a stack buffer.
pub struct DoubleText {
    bytes: [u8; MAX_FAST_PRECISION + 7],
    len: usize,
}

impl DoubleText {
    /// `d` as `%.17g`, Redis's `d2string`.
    pub fn new(d: f64) -> DoubleText {
        DoubleText::with_precision(d, MAX_FAST_PRECISION)
    }

    /// `d` as `%.<precision>g`; `precision` is clamped to 1..=17.
    pub fn with_precision(d: f64, precision: usize) -> DoubleText {
        let precision = precision.clamp(1, MAX_FAST_PRECISION);
        let mut text = DoubleText {
            bytes: [0; MAX_FAST_PRECISION + 7],
            len: 0,
        };
        text.len = match special_text(d) {
            Some(special) => put(&mut text.bytes, 0, special.as_bytes()),
            None => match small_integer(d, precision) {
                Some(n) => put(&mut text.bytes, 0, IntegerText::new(n).as_bytes()),
                None => {
                    let (digits, exponent) = exact_digits(d.abs(), precision)
                        .unwrap_or_else(|| library_digits_u64(d.abs(), precision));
                    let mut ascii = [b'0'; MAX_FAST_PRECISION];
                    let ascii = &mut ascii[..precision];
                    write_digits(ascii, digits);
                    layout(&mut text.bytes, d < 0.0, ascii, exponent)
                }
            },
        };
        text
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits, signs, '.', 'e', "inf" and "nan" are ever written.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

/// Formats a double as C's `%.17g` does, which is what Redis 7.0 replies with.
pub fn format_double(d: f64) -> String {
    DoubleText::new(d).as_str().to_owned()
}

/// Formats a double as C's `%.<precision>g` does (Lua and its cjson library use 14).
pub fn format_g(d: f64, precision: i32) -> String {
    let precision = precision.max(1) as usize;
    if precision <= MAX_FAST_PRECISION {
        return DoubleText::with_precision(d, precision).as_str().to_owned();
    }
    if let Some(special) = special_text(d) {
        return special.to_owned();
    }
    let (digits, exponent) = library_digits(d.abs(), precision);
    let mut out = vec![0u8; precision + 7];
    let len = layout(&mut out, d < 0.0, &digits, exponent);
    out.truncate(len);
    String::from_utf8(out).unwrap_or_default()
}

fn special_text(d: f64) -> Option<&'static str> {
    if d.is_nan() {
        Some("nan")
    } else if d.is_infinite() {
        Some(if d > 0.0 { "inf" } else { "-inf" })
    } else if d == 0.0 {
        Some(if d.is_sign_negative() { "-0" } else { "0" })
    } else {
        None
    }
}

/// `d` as an integer when it is one with at most `precision` digits (`%g` then prints
/// exactly its digits), as Redis's `d2string` also does first.
fn small_integer(d: f64, precision: usize) -> Option<i64> {
    let limit = POW10[precision.min(15)] as f64;
    (d.fract() == 0.0 && d.abs() < limit).then_some(d as i64)
}

const POW10: [u64; 20] = {
    let mut table = [1u64; 20];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// 5^0 ..= 5^55, the powers of five that fit in 128 bits.
const POW5: [u128; 56] = {
    let mut table = [1u128; 56];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 5;
        i += 1;
    }
    table
};

/// 10^0 ..= 10^38, the powers of ten that fit in 128 bits.
const POW10_WIDE: [u128; 39] = {
    let mut table = [1u128; 39];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// The `precision` (1..=17) significant digits of `value` (finite, positive) as an integer,
/// correctly rounded with ties to even, and the decimal exponent of the first digit; `None`
/// when 128-bit integers cannot hold the exact computation.
fn exact_digits(value: f64, precision: usize) -> Option<(u64, i32)> {
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    // value = mantissa * 2^exponent2 exactly.
    let (mut mantissa, mut exponent2) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    let zeros = mantissa.trailing_zeros();
    mantissa >>= zeros;
    exponent2 += zeros as i32;
    let log2 = 63 - mantissa.leading_zeros() as i32 + exponent2;
    // floor(log2 * log10(2)): the decimal exponent, or one less.
    let mut exponent10 = (log2 * 78913) >> 18;
    let (low, high) = (POW10[precision - 1], POW10[precision]);
    for _ in 0..3 {
        let scale = precision as i32 - 1 - exponent10;
        let (truncated, round_up) = scaled(mantissa, exponent2, scale)?;
        if truncated < low {
            exponent10 -= 1;
        } else if truncated >= high {
            exponent10 += 1;
        } else {
            let digits = truncated + u64::from(round_up);
            return Some(if digits == high {
                (low, exponent10 + 1)
            } else {
                (digits, exponent10)
            });
        }
    }
    None
}

/// floor(mantissa * 2^exponent2 * 10^scale), and whether rounding it to nearest (ties to
/// even) goes up; `None` when an exact 128-bit computation is impossible.
fn scaled(mantissa: u64, exponent2: i32, scale: i32) -> Option<(u64, bool)> {
    let (quotient, remainder_vs_half) = if scale >= 0 {
        let numerator = u128::from(mantissa).checked_mul(*POW5.get(scale as usize)?)?;
        let shift = exponent2 + scale;
        if shift >= 0 {
            if numerator.leading_zeros() < shift as u32 {
                return None;
            }
            (numerator << shift, std::cmp::Ordering::Less)
        } else {
            let shift = shift.unsigned_abs();
            if shift >= 128 {
                return None;
            }
            let remainder = numerator & ((1u128 << shift) - 1);
            (numerator >> shift, remainder.cmp(&(1u128 << (shift - 1))))
        }
    } else {
        let mut denominator = *POW10_WIDE.get(scale.unsigned_abs() as usize)?;
        let mut numerator = u128::from(mantissa);
        if exponent2 >= 0 {
            if numerator.leading_zeros() < exponent2 as u32 {
                return None;
            }
            numerator <<= exponent2;
        } else {
            let shift = exponent2.unsigned_abs();
            if denominator.leading_zeros() < shift {
                return None;
            }
            denominator <<= shift;
        }
        let remainder = numerator % denominator;
        (
            numerator / denominator,
            remainder.cmp(&(denominator - remainder)),
        )
    };
    let quotient = u64::try_from(quotient).ok()?;
    let round_up = match remainder_vs_half {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => quotient % 2 == 1,
        std::cmp::Ordering::Less => false,
    };
    Some((quotient, round_up))
}

/// The digits and decimal exponent from Rust's own exact formatting (`{:.Ne}` rounds
/// correctly, ties to even), as ASCII.
fn library_digits(value: f64, precision: usize) -> (Vec<u8>, i32) {
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    (digits, exponent.parse().unwrap_or(0))
}

fn library_digits_u64(value: f64, precision: usize) -> (u64, i32) {
    let (ascii, exponent) = library_digits(value, precision);
    let digits = ascii
        .iter()
        .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    (digits, exponent)
}

/// Writes `digits` as exactly `out.len()` ASCII digits.
fn write_digits(out: &mut [u8], mut digits: u64) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (digits % 10) as u8;
        digits /= 10;
    }
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    out[at..at + bytes.len()].copy_from_slice(bytes);
    at + bytes.len()
}

/// Writes `%g`'s layout of the significant `digits` (first one non-zero; as many as the
/// precision) whose first has decimal `exponent`; returns the length. `out` holds at least
/// `digits.len() + 7` bytes.
fn layout(out: &mut [u8], negative: bool, digits: &[u8], exponent: i32) -> usize {
    let precision = digits.len() as i32;
    let significant = digits.len() - digits.iter().rev().take_while(|&&d| d == b'0').count();
    let digits = &digits[..significant.max(1)];
    let mut at = if negative { put(out, 0, b"-") } else { 0 };
    if (-4..precision).contains(&exponent) {
        if exponent >= 0 {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                at = put(out, at, digits);
                for _ in digits.len()..whole {
                    at = put(out, at, b"0");
                }
            } else {
                at = put(out, at, &digits[..whole]);
                at = put(out, at, b".");
                at = put(out, at, &digits[whole..]);
            }
        } else {
            at = put(out, at, b"0.");
            for _ in 1..exponent.unsigned_abs() {
                at = put(out, at, b"0");
            }
            at = put(out, at, digits);
        }
    } else {
        at = put(out, at, &digits[..1]);
        if digits.len() > 1 {
            at = put(out, at, b".");
            at = put(out, at, &digits[1..]);
        }
        at = put(out, at, if exponent < 0 { b"e-" } else { b"e+" });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            at = put(out, at, b"0");
        }
        at = put(out, at, IntegerText::new(i64::from(magnitude)).as_bytes());
    }
    at
}

#[cfg(test)]
#[path = "double_text_tests.rs"]
mod tests;
