//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest common
//! subsequence of two strings (a missing key is the empty string).
//!
//! - no option → the subsequence as a bulk string;
//! - `LEN` → its length as an integer;
//! - `IDX` → a map `matches` → array of `[[start1, end1], [start2, end2]]` ranges (with the
//!   range length appended when `WITHMATCHLEN`), last match first, only ranges at least
//!   `MINMATCHLEN` long; and `len` → the subsequence length.
//!
//! Errors: `ERR The specified keys must contain string values` (checked before the
//! options), `ERR syntax error`, `ERR If you want both the length and indexes, please just
//! use IDX.`, and `ERR Insufficient memory, transient memory for LCS exceeds
//! proto-max-bulk-len` when the dynamic-programming table (4 bytes per cell, as in Redis)
//! would be larger than `proto-max-bulk-len`.

use bytes::Bytes;

use super::max_string_len;
use crate::cmd::args::{int, is};
use crate::cmd::errors::SYNTAX;
use crate::cmd::{CmdResult, Ctx};
use crate::types::Value;

const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
const LEN_AND_IDX: &str = "ERR If you want both the length and indexes, please just use IDX.";
const TABLE_TOO_BIG: &str =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";

/// A common run of bytes: `a[a_start..=a_end]` equals `b[b_start..=b_end]`.
struct Match {
    a_start: usize,
    a_end: usize,
    b_start: usize,
    b_end: usize,
}

impl Match {
    fn len(&self) -> usize {
        self.a_end - self.a_start + 1
    }
}

pub fn lcs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let max_table = max_string_len(ctx);
    let db = ctx.db();
    let mut strings = Vec::with_capacity(2);
    for key in &args[1..3] {
        strings.push(match db.get(key).map(|entry| &entry.value) {
            None => Vec::new(),
            Some(Value::Str(s)) => s.as_slice().to_vec(),
            #[allow(unreachable_patterns)]
            Some(_) => return Err(NOT_STRINGS.into()),
        });
    }
    let (a, b) = (&strings[0], &strings[1]);

    let (mut want_len, mut want_idx, mut with_match_len, mut min_match_len) =
        (false, false, false, 0usize);
    let mut i = 3;
    while i < args.len() {
        let option = &args[i];
        if is(option, "idx") {
            want_idx = true;
        } else if is(option, "len") {
            want_len = true;
        } else if is(option, "withmatchlen") {
            with_match_len = true;
        } else if is(option, "minmatchlen") && i + 1 < args.len() {
            min_match_len = usize::try_from(int(&args[i + 1])?).unwrap_or(0);
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if want_idx && want_len {
        return Err(LEN_AND_IDX.into());
    }
    let cells = (a.len() as u128 + 1) * (b.len() as u128 + 1);
    if cells * 4 > max_table as u128 {
        return Err(TABLE_TOO_BIG.into());
    }

    let table = LcsTable::build(a, b);
    let out = &mut ctx.out;
    if want_len {
        out.integer(table.get(a.len(), b.len()) as i64);
        return Ok(());
    }
    let (common, matches) = table.walk_back(a, b);
    if !want_idx {
        out.bulk(&common);
        return Ok(());
    }
    let shown: Vec<&Match> = matches
        .iter()
        .filter(|m| m.len() >= min_match_len)
        .collect();
    out.map(2);
    out.bulk(b"matches");
    out.array(shown.len());
    for m in shown {
        out.array(2 + usize::from(with_match_len));
        for (start, end) in [(m.a_start, m.a_end), (m.b_start, m.b_end)] {
            out.array(2);
            out.integer(start as i64);
            out.integer(end as i64);
        }
        if with_match_len {
            out.integer(m.len() as i64);
        }
    }
    out.bulk(b"len");
    out.integer(common.len() as i64);
    Ok(())
}

/// `cell(i, j)` is the LCS length of `a[..i]` and `b[..j]`.
struct LcsTable {
    width: usize,
    cells: Vec<u32>,
}

impl LcsTable {
    fn build(a: &[u8], b: &[u8]) -> LcsTable {
        let width = b.len() + 1;
        let mut cells = vec![0u32; (a.len() + 1) * width];
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                cells[i * width + j] = if a[i - 1] == b[j - 1] {
                    cells[(i - 1) * width + j - 1] + 1
                } else {
                    cells[(i - 1) * width + j].max(cells[i * width + j - 1])
                };
            }
        }
        LcsTable { width, cells }
    }

    fn get(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    /// Walks from the end of both strings as Redis does (on a tie, it drops a byte of `b`):
    /// the common subsequence, and its runs of contiguous matches, last run first.
    fn walk_back(&self, a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<Match>) {
        let mut common = Vec::with_capacity(self.get(a.len(), b.len()) as usize);
        let mut matches = Vec::new();
        let mut current: Option<Match> = None;
        let (mut i, mut j) = (a.len(), b.len());
        while i > 0 && j > 0 {
            if a[i - 1] == b[j - 1] {
                common.push(a[i - 1]);
                match &mut current {
                    // Walking backwards, a match right before the run extends it.
                    Some(run) if run.a_start == i && run.b_start == j => {
                        run.a_start -= 1;
                        run.b_start -= 1;
                    }
                    _ => {
                        matches.extend(current.take());
                        current = Some(Match {
                            a_start: i - 1,
                            a_end: i - 1,
                            b_start: j - 1,
                            b_end: j - 1,
                        });
                    }
                }
                i -= 1;
                j -= 1;
            } else {
                matches.extend(current.take());
                if self.get(i - 1, j) > self.get(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
            }
        }
        matches.extend(current);
        common.reverse();
        (common, matches)
    }
}
