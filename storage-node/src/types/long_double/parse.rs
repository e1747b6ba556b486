//! Reading a number the way Redis's `string2ld` does: `strtold` must consume the whole
//! string, no leading blank, no NaN, and a result that overflows (or underflows to zero) is
//! refused. Decimal and hexadecimal (`0x1.8p3`) forms and `inf`/`infinity` are accepted.

use super::bignum::{divide, BigUint};
use super::{round, LongDouble, Parsed};

/// Redis copies the text into a buffer of this size first; longer text is refused.
const MAX_CHARS: usize = 5 * 1024;

/// Decimal magnitudes certainly beyond the 80-bit range (largest ≈ 1.19e4932, smallest
/// subnormal ≈ 3.6e-4951); anything between is converted exactly.
const DECIMAL_OVERFLOW: i64 = 4934;
const DECIMAL_UNDERFLOW: i64 = -4953;

/// Exponents are read with saturation far beyond these ranges, so no arithmetic overflows.
const EXPONENT_CLAMP: i64 = 1_000_000_000;

/// Parses `text` as `strtold` would, with Redis's extra checks. None if Redis would answer
/// "value is not a valid float".
pub fn parse(text: &[u8]) -> Option<Parsed> {
    if text.is_empty() || text.len() >= MAX_CHARS {
        return None;
    }
    let (negative, body) = match text[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some(Parsed::Infinite);
    }
    let value = match body {
        [b'0', b'x' | b'X', hex @ ..] => parse_hex(negative, hex)?,
        _ => parse_decimal(negative, body)?,
    };
    Some(Parsed::Finite(value))
}

/// Splits `digits[.digits]` off the front of `text`: the digits (without the point), the
/// number of digits after the point, and the rest. None without any digit.
fn split_mantissa(text: &[u8], is_digit: fn(&u8) -> bool) -> Option<(Vec<u8>, usize, &[u8])> {
    let integer_len = text.iter().take_while(|c| is_digit(c)).count();
    let mut digits = text[..integer_len].to_vec();
    let mut rest = &text[integer_len..];
    let mut fraction_len = 0;
    if let [b'.', after @ ..] = rest {
        fraction_len = after.iter().take_while(|c| is_digit(c)).count();
        digits.extend_from_slice(&after[..fraction_len]);
        rest = &after[fraction_len..];
    }
    (!digits.is_empty()).then_some((digits, fraction_len, rest))
}

/// An exponent: `[+-]digits` filling the whole of `text`, saturated.
fn parse_exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().fold(0i64, |acc, d| {
        (acc * 10 + i64::from(d - b'0')).min(EXPONENT_CLAMP)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// The exponent part after the mantissa: nothing, or a marker followed by an exponent.
fn trailing_exponent(rest: &[u8], markers: &[u8; 2]) -> Option<i64> {
    match rest {
        [] => Some(0),
        [marker, exponent @ ..] if markers.contains(marker) => parse_exponent(exponent),
        _ => None,
    }
}

fn parse_decimal(negative: bool, text: &[u8]) -> Option<LongDouble> {
    let (digits, fraction_len, rest) = split_mantissa(text, u8::is_ascii_digit)?;
    let exponent = trailing_exponent(rest, b"eE")? - fraction_len as i64;
    let significant: Vec<u8> = digits.iter().copied().skip_while(|&d| d == b'0').collect();
    if significant.is_empty() {
        return round(negative, 0, 0, false);
    }
    // The value is below 10^magnitude and at least 10^(magnitude - 1).
    let magnitude = significant.len() as i64 + exponent;
    if !(DECIMAL_UNDERFLOW..=DECIMAL_OVERFLOW).contains(&magnitude) {
        return None;
    }
    let mut numerator = BigUint::default();
    for chunk in significant.chunks(9) {
        let chunk_value = chunk
            .iter()
            .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
        numerator.mul_add_small(10u32.pow(chunk.len() as u32), chunk_value);
    }
    let mut denominator = BigUint::from_u128(1);
    if exponent >= 0 {
        numerator.mul_pow10(exponent as u32);
    } else {
        denominator = BigUint::pow10(exponent.unsigned_abs() as u32);
    }
    // Scale by 2^scale so that the quotient has 67 or 68 bits: enough for the 64 kept bits,
    // a rounding bit and a sticky remainder.
    let scale = 67 + denominator.bit_len() as i64 - numerator.bit_len() as i64;
    if scale >= 0 {
        numerator.shl(scale as u64);
    } else {
        denominator.shl(scale.unsigned_abs());
    }
    let (quotient, inexact) = divide(&numerator, &denominator, 70);
    finish(negative, quotient, -scale, inexact)
}

fn parse_hex(negative: bool, text: &[u8]) -> Option<LongDouble> {
    let (digits, fraction_len, rest) = split_mantissa(text, u8::is_ascii_hexdigit)?;
    let exponent = trailing_exponent(rest, b"pP")? - 4 * fraction_len as i64;
    let mut mantissa = BigUint::default();
    for d in digits {
        let nibble = char::from(d).to_digit(16)?;
        mantissa.mul_add_small(16, nibble);
    }
    // Keep the top 128 bits; anything below them only matters as a sticky bit.
    let excess = mantissa.bit_len().saturating_sub(128);
    let inexact = mantissa.shr(excess);
    finish(
        negative,
        mantissa.low_u128(),
        exponent + excess as i64,
        inexact,
    )
}

/// Rounds the exact value, refusing overflow and a non-zero value that rounds to zero
/// (`strtold` reports both with ERANGE, and Redis rejects them).
fn finish(negative: bool, magnitude: u128, exponent: i64, inexact: bool) -> Option<LongDouble> {
    let value = round(negative, magnitude, exponent, inexact)?;
    if value.is_zero() && (magnitude != 0 || inexact) {
        return None;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_strtold_consumes_whole() {
        for good in [
            "1",
            "-1",
            "+1",
            ".5",
            "5.",
            "1e3",
            "1E+3",
            "1e-3",
            "0x10",
            "0x1.8p1",
            "0X.8P-1",
            "inf",
            "-Infinity",
            "0e99999",
            "00012",
            "1e-4940",
        ] {
            assert!(parse(good.as_bytes()).is_some(), "{good}");
        }
        for bad in [
            "",
            " 1",
            "1 ",
            ".",
            "1e",
            "1e+",
            "e5",
            "0x",
            "0x.",
            "0x1p",
            "nan",
            "-nan",
            "nan(1)",
            "infinit",
            "1e5000",
            "1e-5000",
            "0x1p99999",
            "0x1p-99999",
            "1\0",
            "--1",
            "1.2.3",
        ] {
            assert!(parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(parse("1".repeat(5119).as_bytes()).is_none());
        assert!(parse(format!("0.{}", "0".repeat(5117)).as_bytes()).is_some());
        assert!(parse(format!("0.{}", "0".repeat(5118)).as_bytes()).is_none());
    }
}
