//! Numbers in requests, read with exactly the strictness Redis uses, and integers written
//! back as text without a heap allocation.

/// Parses a decimal `i64` the way Redis's `string2ll` does: an optional `-`, no `+`, no
/// blanks, no leading zeros (except `0` itself), no overflow.
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [] => return None,
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    if digits.len() > 19 {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if value > i64::MAX as u64 + 1 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

/// "00", "01", ... "99", back to back.
const DIGIT_PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Writes `value` in decimal into `buffer`, ending just before `end`, and returns where it
/// starts. The caller sizes the buffer: a `u64` takes at most 20 bytes.
pub fn write_decimal_before(buffer: &mut [u8], end: usize, mut value: u64) -> usize {
    let mut start = end;
    // Two digits per division: lengths and counts are written several times per request.
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        start -= 2;
        buffer[start..start + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        start -= 2;
        buffer[start..start + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        start -= 1;
        buffer[start] = b'0' + value as u8;
    }
    start
}

/// The decimal text of an `i64`, formatted on the stack (`i64::MIN` takes all 20 bytes).
/// Replies and integer values (INCR) are formatted on every request: `to_string` would
/// allocate and free a `String` each time.
pub struct IntegerText {
    digits: [u8; 20],
    start: usize,
}

impl IntegerText {
    pub fn new(n: i64) -> IntegerText {
        let mut digits = [0u8; 20];
        let mut start = write_decimal_before(&mut digits, 20, n.unsigned_abs());
        if n < 0 {
            start -= 1;
            digits[start] = b'-';
        }
        IntegerText { digits, start }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

/// Parses a `u64` with the same strictness as [`parse_i64`].
pub fn parse_u64(text: &[u8]) -> Option<u64> {
    match text {
        [b'0'] => Some(0),
        [b'1'..=b'9', ..] if text.len() <= 20 => {
            let mut value: u64 = 0;
            for &d in text {
                if !d.is_ascii_digit() {
                    return None;
                }
                value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            }
            Some(value)
        }
        _ => None,
    }
}

/// Reads a SCAN cursor the way Redis does with `strtoul`: an optional sign (a negative value wraps
/// around), decimal digits, nothing after them; leading whitespace and overflow are errors.
/// The argument is read as a C string, so it ends at a NUL byte, and an empty one is 0.
pub fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let text = arg.split(|&b| b == 0).next().unwrap_or_default();
    let Some(&first) = text.first() else {
        return Some(0);
    };
    if matches!(first, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return None;
    }
    let (negative, digits) = match first {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))?;
    }
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// Parses a double the way Redis's `getDoubleFromObject` does with `strtod`: no leading
/// blank, the whole string used, `inf`/`-inf` allowed, NaN refused.
pub fn parse_f64(text: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(text).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let value = match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        "nan" => return None,
        _ => s.parse::<f64>().ok().or_else(|| parse_hex_f64(s))?,
    };
    (!value.is_nan()).then_some(value)
}

/// The hexadecimal floats C's `strtod` also accepts (`0x10`, `0x1p3`, `-0X1.8P-1`): hex
/// digits with at most one point, then an optional binary exponent `p[+-]digits`. Redis
/// reads scores and ranges with `strtod`, so `ZADD k 0x1p3 m` is a score of 8.
pub fn parse_hex_f64(text: &str) -> Option<f64> {
    let (negative, rest) = split_sign(text);
    let rest = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    let (digits, exponent) = match rest.find(['p', 'P']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut mantissa = 0f64;
    for c in whole.chars().chain(fraction.chars()) {
        mantissa = mantissa * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut power = -4 * fraction.len() as i64;
    if let Some(exponent) = exponent {
        let (exponent_negative, exponent_digits) = split_sign(exponent);
        if exponent_digits.is_empty() || !exponent_digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Anything past a few thousand is already infinity or zero.
        let magnitude: i64 = exponent_digits.parse().unwrap_or(i64::MAX).min(100_000);
        power += if exponent_negative {
            -magnitude
        } else {
            magnitude
        };
    }
    let value = mantissa * 2f64.powi(power.clamp(-100_000, 100_000) as i32);
    Some(if negative { -value } else { value })
}

/// An optional leading `+` or `-`: whether it was `-`, and the rest.
fn split_sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"-0"), Some(0));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"-18446744073709551615"), Some(1));
        assert_eq!(parse_cursor(b"12\0junk"), Some(12));
        for bad in [
            &b"18446744073709551616"[..],
            b" 0",
            b"\t1",
            b"0 ",
            b"x",
            b"-",
            b"+",
            b"1x",
            b"0x10",
            b"+-1",
        ] {
            assert!(parse_cursor(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1a",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn doubles_follow_strtod() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b"abc"), None);
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"0x1p3"), Some(8.0));
        assert_eq!(parse_f64(b"-0X1.8P-1"), Some(-0.75));
        assert_eq!(parse_f64(b"0x.8"), Some(0.5));
        for bad in ["0x", "0x.", "0xg", "0x1p", "0x1p+", "0x1.2.3", "0x 1"] {
            assert_eq!(parse_f64(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn integer_text_matches_to_string() {
        for n in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            123456789,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            assert_eq!(IntegerText::new(n).as_bytes(), n.to_string().as_bytes());
        }
        for n in (-12_345..12_345).chain((0..64).map(|shift| 1i64 << shift)) {
            assert_eq!(IntegerText::new(n).as_bytes(), n.to_string().as_bytes());
        }
    }
}
