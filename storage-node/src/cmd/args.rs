//! Reading command arguments, with Redis's error replies for bad ones.

use bytes::Bytes;
use slotproxy::numbers;

use super::errors::{CmdError, NOT_FLOAT, NOT_INTEGER};

/// True if `arg` is `word`, ignoring ASCII case.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An integer argument, or `ERR value is not an integer or out of range`.
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    numbers::parse_i64(arg).ok_or_else(|| NOT_INTEGER.into())
}

/// An integer argument within `min..=max` (Redis's `getRangeLongFromObjectOrReply`): not an
/// integer gives `ERR value is not an integer or out of range`, outside the range
/// `ERR value is out of range, value must between <min> and <max>`.
pub fn int_in_range(arg: &[u8], min: i64, max: i64) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n < min || n > max {
        return Err(
            format!("ERR value is out of range, value must between {min} and {max}").into(),
        );
    }
    Ok(n)
}

/// A C `int` argument (Redis's `getIntFromObjectOrReply`).
pub fn int32(arg: &[u8]) -> Result<i64, CmdError> {
    int_in_range(arg, i32::MIN.into(), i32::MAX.into())
}

/// A non-negative integer argument, or the given error.
pub fn non_negative(arg: &[u8], error: &'static str) -> Result<i64, CmdError> {
    match numbers::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(error.into()),
    }
}

/// A double argument, or `ERR value is not a valid float`.
pub fn float(arg: &[u8]) -> Result<f64, CmdError> {
    numbers::parse_f64(arg).ok_or_else(|| NOT_FLOAT.into())
}

/// The argument as (lossy) text, for error messages.
pub fn text(arg: &Bytes) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// A blocking command's timeout in seconds, with decimals (Redis's
/// `getTimeoutFromObjectOrReply` with seconds as the unit). None means wait forever (0).
///
/// The text is read as a `long double`, multiplied by 1000 and rounded up to milliseconds.
/// As in Redis, a value whose milliseconds do not fit 64 bits (infinity included) converts
/// to the most negative integer and so is "negative".
pub fn timeout_seconds(arg: &[u8]) -> Result<Option<std::time::Duration>, CmdError> {
    use crate::types::long_double::{self, Parsed};
    const NOT_A_FLOAT: &str = "ERR timeout is not a float or out of range";
    const NEGATIVE: &str = "ERR timeout is negative";
    let seconds = match long_double::parse(arg).ok_or(NOT_A_FLOAT)? {
        Parsed::Infinite => return Err(NEGATIVE.into()),
        Parsed::Finite(value) => value.to_f64(),
    };
    let millis = (seconds * 1000.0).ceil();
    // `i64::MAX as f64` rounds up to 2^63, which is already out of range.
    if !(millis >= i64::MIN as f64 && millis < i64::MAX as f64) || millis < 0.0 {
        return Err(NEGATIVE.into());
    }
    let millis = millis as u64;
    Ok((millis > 0).then(|| std::time::Duration::from_millis(millis)))
}

/// A timeout in milliseconds (Redis's `getTimeoutFromObjectOrReply` with milliseconds as
/// the unit): WAIT, CLIENT PAUSE, FAILOVER.
pub fn timeout_millis(arg: &[u8]) -> Result<u64, CmdError> {
    let millis = slotproxy::numbers::parse_i64(arg)
        .ok_or("ERR timeout is not an integer or out of range")?;
    u64::try_from(millis).map_err(|_| "ERR timeout is negative".into())
}

/// An integer argument within `min..=max`, with one error for anything else (Redis's
/// `getRangeLongFromObjectOrReply` given its own message).
pub fn int_in_range_or(
    arg: &[u8],
    min: i64,
    max: i64,
    error: &'static str,
) -> Result<i64, CmdError> {
    match numbers::parse_i64(arg) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(error.into()),
    }
}
