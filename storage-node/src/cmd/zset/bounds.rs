//! Score and lexicographic ranges, and the ranks they cover.
//!
//! - Score bounds: a number, `-inf`/`+inf`, optionally prefixed by `(` for an exclusive
//!   bound. They are read with C's `strtod` as Redis does: leading blanks are allowed, an
//!   empty bound reads as 0, overflow reads as ±inf; NaN or trailing characters are `ERR min
//!   or max is not a float`.
//! - Lex bounds: `[member` (inclusive), `(member` (exclusive), `-` and `+` (the ends);
//!   anything else is `ERR min or max not valid string range item`.
//!
//! A range maps to a contiguous run of ranks. For lex ranges over members with different
//! scores the result is defined by Redis's algorithm, not by the order: for a listpack
//! (small) set Redis scans from the head for the first member ≥ min (from the tail for the
//! last ≤ max when reversed) and stops at the first one out of range; this module does the
//! same. Bigger sets use the tree, which agrees whenever scores are equal (the documented
//! use; Redis's own skiplist answer otherwise depends on its random levels).

use std::cmp::Ordering;

use slotproxy::numbers::parse_f64;

use crate::cmd::errors::{CmdError, NOT_FLOAT};
use crate::types::ZSetValue;

pub const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";
pub const NOT_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// A score argument (ZADD, ZINCRBY, WEIGHTS): Redis's `getDoubleFromObject`, which also
/// refuses values that overflow to infinity or underflow to zero.
pub fn score_arg(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg)
        .and_then(|_| strtod_checked(arg))
        .ok_or(CmdError::from(NOT_FLOAT))
}

/// C's `strtod` over the whole argument, as `zslParseRange` uses it: a C string, so a NUL
/// byte ends it (`"\0x"` reads as the empty string, which is 0).
fn strtod_whole(text: &[u8]) -> Option<f64> {
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    if text.is_empty() {
        return Some(0.0);
    }
    let start = text
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let text = std::str::from_utf8(&text[start..]).ok()?;
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    let value = match unsigned {
        "inf" | "infinity" if lower.starts_with('-') => f64::NEG_INFINITY,
        "inf" | "infinity" => f64::INFINITY,
        _ if unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') => text
            .parse::<f64>()
            .ok()
            .or_else(|| slotproxy::numbers::parse_hex_f64(text))?,
        _ => return None,
    };
    (!value.is_nan()).then_some(value)
}

/// `strtod` over the whole text with its range errors refused (overflow to infinity,
/// underflow to zero), as SORT reads numbers.
pub fn strtod_checked(text: &[u8]) -> Option<f64> {
    let value = strtod_whole(text)?;
    let lower = String::from_utf8_lossy(text).to_ascii_lowercase();
    let mantissa = lower.split('e').next().unwrap_or_default();
    let overflow = value.is_infinite() && !mantissa.contains("inf");
    let underflow = value == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    (!overflow && !underflow).then_some(value)
}

/// A score range.
#[derive(Clone, Copy, Debug)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub min_exclusive: bool,
    pub max_exclusive: bool,
}

fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    match arg.strip_prefix(b"(") {
        Some(rest) => strtod_whole(rest).map(|v| (v, true)),
        None => strtod_whole(arg).map(|v| (v, false)),
    }
}

impl ScoreRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, CmdError> {
        let ((min, min_exclusive), (max, max_exclusive)) =
            score_bound(min)
                .zip(score_bound(max))
                .ok_or(CmdError::from(NOT_FLOAT_RANGE))?;
        Ok(ScoreRange {
            min,
            max,
            min_exclusive,
            max_exclusive,
        })
    }

    fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_exclusive || self.max_exclusive))
    }

    pub fn above_min(&self, score: f64) -> bool {
        if self.min_exclusive {
            score > self.min
        } else {
            score >= self.min
        }
    }

    pub fn below_max(&self, score: f64) -> bool {
        if self.max_exclusive {
            score < self.max
        } else {
            score <= self.max
        }
    }

    /// The ranks `[start, end)` of the elements in range.
    pub fn ranks(&self, zset: &ZSetValue) -> (usize, usize) {
        if self.is_empty() {
            return (0, 0);
        }
        let start = zset.tree.count_before(|s, _| !self.above_min(s));
        let end = zset.tree.count_before(|s, _| self.below_max(s));
        (start, end.max(start))
    }
}

/// One end of a lex range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    Min,
    Max,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

impl LexBound {
    fn parse(arg: &[u8]) -> Option<LexBound> {
        match arg.split_first() {
            Some((b'+', [])) => Some(LexBound::Max),
            Some((b'-', [])) => Some(LexBound::Min),
            Some((b'(', rest)) => Some(LexBound::Exclusive(rest.to_vec())),
            Some((b'[', rest)) => Some(LexBound::Inclusive(rest.to_vec())),
            _ => None,
        }
    }

    fn value(&self) -> Option<&[u8]> {
        match self {
            LexBound::Inclusive(v) | LexBound::Exclusive(v) => Some(v),
            LexBound::Min | LexBound::Max => None,
        }
    }

    fn exclusive(&self) -> bool {
        !matches!(self, LexBound::Inclusive(_))
    }
}

/// Compares bound values as Redis's `sdscmplex`: `-` below everything, `+` above.
fn cmp_bounds(a: &LexBound, b: &LexBound) -> Ordering {
    match (a, b) {
        (LexBound::Min, LexBound::Min) | (LexBound::Max, LexBound::Max) => Ordering::Equal,
        (LexBound::Min, _) | (_, LexBound::Max) => Ordering::Less,
        (LexBound::Max, _) | (_, LexBound::Min) => Ordering::Greater,
        _ => a.value().cmp(&b.value()),
    }
}

/// A lexicographic range.
#[derive(Clone, Debug)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Result<LexRange, CmdError> {
        match (LexBound::parse(min), LexBound::parse(max)) {
            (Some(min), Some(max)) => Ok(LexRange { min, max }),
            _ => Err(NOT_LEX_RANGE.into()),
        }
    }

    fn is_empty(&self) -> bool {
        match cmp_bounds(&self.min, &self.max) {
            Ordering::Greater => true,
            Ordering::Equal => self.min.exclusive() || self.max.exclusive(),
            Ordering::Less => false,
        }
    }

    pub fn above_min(&self, member: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(v) => member >= v.as_slice(),
            LexBound::Exclusive(v) => member > v.as_slice(),
        }
    }

    pub fn below_max(&self, member: &[u8]) -> bool {
        match &self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(v) => member <= v.as_slice(),
            LexBound::Exclusive(v) => member < v.as_slice(),
        }
    }

    /// Redis's `zslIsInLexRange`: a non-empty range that the set's ends do not exclude.
    fn may_match(&self, zset: &ZSetValue) -> bool {
        let (Some((first, _)), Some((last, _))) =
            (zset.tree.select(0), zset.tree.iter_rev_from(0).next())
        else {
            return false;
        };
        !self.is_empty() && self.above_min(last) && self.below_max(first)
    }

    /// The ranks `[start, end)` of the elements in range, walking forwards.
    pub fn ranks(&self, zset: &ZSetValue) -> (usize, usize) {
        if !self.may_match(zset) {
            return (0, 0);
        }
        if !zset.is_listpack() {
            let start = zset.tree.count_before(|_, m| !self.above_min(m));
            let end = zset.tree.count_before(|_, m| self.below_max(m));
            return (start, end.max(start));
        }
        let mut members = zset.tree.iter().enumerate();
        let Some((start, _)) = members.find(|(_, (m, _))| self.above_min(m)) else {
            return (0, 0);
        };
        let mut end = start;
        for (rank, (member, _)) in zset.tree.iter_from(start).enumerate() {
            if !self.below_max(member) {
                break;
            }
            end = start + rank + 1;
        }
        (start, end)
    }

    /// The ranks `[start, end)` of the elements in range, walking backwards from the end.
    pub fn ranks_reversed(&self, zset: &ZSetValue) -> (usize, usize) {
        if !zset.is_listpack() {
            return self.ranks(zset);
        }
        if !self.may_match(zset) {
            return (0, 0);
        }
        let len = zset.len();
        let Some(from_end) = zset
            .tree
            .iter_rev_from(0)
            .position(|(m, _)| self.below_max(m))
        else {
            return (0, 0);
        };
        let end = len - from_end;
        let mut start = end;
        for (member, _) in zset.tree.iter_rev_from(from_end) {
            if !self.above_min(member) {
                break;
            }
            start -= 1;
        }
        (start, end)
    }
}

/// Clamps `start..=stop` (negative counts from the end) to ranks `[start, end)` of a set
/// of `len` elements, as ZRANGE and ZREMRANGEBYRANK do.
pub fn rank_range(start: i64, stop: i64, len: usize) -> (usize, usize) {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut stop = if stop < 0 { len + stop } else { stop };
    if start < 0 {
        start = 0;
    }
    if start > stop || start >= len {
        return (0, 0);
    }
    if stop >= len {
        stop = len - 1;
    }
    (start as usize, stop as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_bounds_read_like_strtod() {
        assert_eq!(strtod_whole(b""), Some(0.0));
        assert_eq!(strtod_whole(b"  1.5"), Some(1.5));
        assert_eq!(strtod_whole(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(strtod_whole(b"+Infinity"), Some(f64::INFINITY));
        assert_eq!(strtod_whole(b"1e400"), Some(f64::INFINITY));
        assert_eq!(strtod_whole(b"nan"), None);
        assert_eq!(strtod_whole(b"1 "), None);
        assert_eq!(strtod_whole(b"   "), None);
        assert!(score_arg(b"1e400").is_err());
        assert!(score_arg(b"1e-400").is_err());
        assert_eq!(score_arg(b"0e5"), Ok(0.0));
        assert_eq!(score_arg(b"-inf"), Ok(f64::NEG_INFINITY));
    }

    #[test]
    fn rank_ranges_clamp_like_redis() {
        assert_eq!(rank_range(0, -1, 5), (0, 5));
        assert_eq!(rank_range(-100, 100, 5), (0, 5));
        assert_eq!(rank_range(3, 1, 5), (0, 0));
        assert_eq!(rank_range(5, 10, 5), (0, 0));
        assert_eq!(rank_range(-2, -1, 5), (3, 5));
        assert_eq!(rank_range(0, 0, 0), (0, 0));
    }
}
