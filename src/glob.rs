//! Glob-style pattern matching as Redis 7.0's `stringmatchlen` does it (KEYS, SCAN MATCH,
//! CONFIG GET, PSUBSCRIBE).
//!
//! Syntax:
//! - `*` matches any run of bytes, `?` exactly one byte.
//! - `[abc]` one of the listed bytes, `[a-z]` a range (ends in either order), `[^...]` the
//!   complement; `\x` inside a class is a literal `x`. An unterminated class runs to the end
//!   of the pattern.
//! - `\x` outside a class matches `x` literally; a trailing lone `\` matches a backslash.
//! - `nocase` folds ASCII letters only (C's `tolower` in the C locale).
//!
//! Redis's quirks are reproduced on purpose, so the node and the proxy agree with a real
//! server byte for byte: an empty subject matches only the empty pattern (callers treat a
//! lone `*` as "everything" before calling), range ends are compared as *signed* C chars,
//! and a class reading past the pattern sees the C string terminator (a 0 byte).
//!
//! Redis matches recursively and, since 7.0.9, stops retrying an outer `*` as soon as an
//! inner `*` has tried every position (a longer match for the outer star could only start the
//! rest later, which already failed). That bound keeps the work at O(pattern × subject)
//! instead of exponential. The same search is done here without recursion, remembering only
//! the innermost `*`, so a hostile pattern cannot overflow the stack either.
//!
//! Redis also stops at a nesting of more than [`MAX_STAR_NESTING`] recursive calls (one per
//! `*` the match has entered): a pattern that needs more stars than that, with subject left
//! to match, does not match. The same count is kept here so results agree.

/// Redis's `stringmatchlen_impl` gives up on calls nested deeper than this.
const MAX_STAR_NESTING: usize = 1000;

/// Whether `text` matches `pattern`. `nocase` compares ASCII letters case-insensitively.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    Matcher {
        pattern,
        text,
        nocase,
    }
    .run()
}

struct Matcher<'a> {
    pattern: &'a [u8],
    text: &'a [u8],
    nocase: bool,
}

/// How one attempt from a given pattern/subject position ended.
enum Attempt {
    /// The whole subject is matched.
    Matched,
    /// This attempt failed; the innermost `*` may try its next position.
    Failed,
    /// The match entered more than [`MAX_STAR_NESTING`] stars: no match at all.
    TooDeep,
}

/// The innermost `*` entered so far.
#[derive(Clone, Copy)]
struct Star {
    /// Where the pattern resumes after it.
    resume: usize,
    /// The subject position its current attempt started at.
    start: usize,
    /// How many stars the match has entered, this one included.
    nesting: usize,
}

/// C's `tolower` on a (signed) `char` value in the C locale.
fn c_tolower(c: i32) -> i32 {
    if (i32::from(b'A')..=i32::from(b'Z')).contains(&c) {
        c + 32
    } else {
        c
    }
}

/// A byte as C's signed `char`, widened to `int` (what Redis compares in ranges).
fn signed(b: u8) -> i32 {
    i32::from(b as i8)
}

impl Matcher<'_> {
    /// The pattern byte at `i`, or the C string terminator past the end.
    fn at(&self, i: usize) -> u8 {
        self.pattern.get(i).copied().unwrap_or(0)
    }

    fn same(&self, a: u8, b: u8) -> bool {
        if self.nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    }

    fn run(&self) -> bool {
        let mut star: Option<Star> = None;
        let (mut p, mut s) = (0, 0);
        loop {
            match self.attempt(&mut p, &mut s, &mut star) {
                Attempt::Matched => return true,
                Attempt::TooDeep => return false,
                Attempt::Failed => match star {
                    // The star tries the next position while subject bytes remain.
                    Some(Star {
                        resume,
                        start,
                        nesting,
                    }) if start + 1 < self.text.len() => {
                        star = Some(Star {
                            resume,
                            start: start + 1,
                            nesting,
                        });
                        p = resume;
                        s = start + 1;
                    }
                    _ => return false,
                },
            }
        }
    }

    /// Matches from `p`/`s` until the pattern or the subject runs out, or a byte fails.
    fn attempt(&self, p: &mut usize, s: &mut usize, star: &mut Option<Star>) -> Attempt {
        let plen = self.pattern.len();
        let text = self.text;
        while *p < plen && *s < text.len() {
            match self.at(*p) {
                b'*' => {
                    while self.at(*p + 1) == b'*' {
                        *p += 1;
                    }
                    if plen - *p == 1 {
                        return Attempt::Matched;
                    }
                    // Redis recurses here, one level deeper than for the previous star.
                    let nesting = star.as_ref().map_or(0, |outer| outer.nesting) + 1;
                    if nesting > MAX_STAR_NESTING {
                        return Attempt::TooDeep;
                    }
                    // Earlier stars are never retried once this one is reached.
                    *star = Some(Star {
                        resume: *p + 1,
                        start: *s,
                        nesting,
                    });
                    *p += 1;
                    continue;
                }
                b'?' => *s += 1,
                b'[' => {
                    if !self.class(p, text[*s]) {
                        return Attempt::Failed;
                    }
                    *s += 1;
                }
                _ => {
                    if self.at(*p) == b'\\' && plen - *p >= 2 {
                        *p += 1;
                    }
                    if !self.same(self.at(*p), text[*s]) {
                        return Attempt::Failed;
                    }
                    *s += 1;
                }
            }
            *p += 1;
            if *s == text.len() {
                while self.at(*p) == b'*' {
                    *p += 1;
                }
                break;
            }
        }
        if *p == plen && *s == text.len() {
            Attempt::Matched
        } else {
            Attempt::Failed
        }
    }

    /// Matches one byte against the class opening at `*p` (on its `[`). Leaves `*p` on the
    /// class's last byte (its `]`, or the pattern's last byte when unterminated).
    fn class(&self, p: &mut usize, c: u8) -> bool {
        let plen = self.pattern.len();
        *p += 1;
        let negated = self.at(*p) == b'^';
        if negated {
            *p += 1;
        }
        let mut matched = false;
        loop {
            if self.at(*p) == b'\\' && plen - *p >= 2 {
                *p += 1;
                if self.at(*p) == c {
                    matched = true;
                }
            } else if self.at(*p) == b']' {
                break;
            } else if *p == plen {
                // Unterminated: step back onto the last byte, as Redis does.
                *p -= 1;
                break;
            } else if plen - *p >= 3 && self.at(*p + 1) == b'-' {
                let (mut start, mut end) = (signed(self.at(*p)), signed(self.at(*p + 2)));
                let mut byte = signed(c);
                if start > end {
                    std::mem::swap(&mut start, &mut end);
                }
                if self.nocase {
                    start = c_tolower(start);
                    end = c_tolower(end);
                    byte = c_tolower(byte);
                }
                *p += 2;
                if (start..=end).contains(&byte) {
                    matched = true;
                }
            } else if self.same(self.at(*p), c) {
                matched = true;
            }
            *p += 1;
        }
        matched != negated
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    fn m(pattern: &str, text: &str) -> bool {
        glob_match(pattern.as_bytes(), text.as_bytes(), false)
    }

    #[test]
    fn literals_and_wildcards() {
        assert!(m("hello", "hello"));
        assert!(!m("hello", "hell"));
        assert!(!m("hell", "hello"));
        assert!(m("h?llo", "hallo"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("*", "x"));
        assert!(m("**", "abc"));
        assert!(m("a*", "a"));
        assert!(m("a**", "a"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(!m("*a*b*", "xxbxxaxx"));
        assert!(m("*.txt", "notes.txt"));
        assert!(!m("*.txt", "notes.txt.bak"));
    }

    #[test]
    fn empty_subject_matches_only_the_empty_pattern() {
        assert!(m("", ""));
        assert!(!m("*", ""));
        assert!(!m("?", ""));
        assert!(!m("", "a"));
    }

    #[test]
    fn classes_ranges_and_negation() {
        assert!(m("h[ae]llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(!m("h[a-b]llo", "hcllo"));
        // Reversed ends are swapped.
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("[0-9][0-9]", "42"));
        assert!(!m("[^0-9]", "4"));
        // `[a-]`: the `]` is taken as the range's end (']'..='a' once swapped), and the
        // class is then unterminated.
        assert!(!m("[a-]", "-"));
        assert!(m("[a-]", "_"));
        assert!(!m("[a-]", "b"));
        // Escapes inside a class.
        assert!(m("[\\]]", "]"));
        assert!(m("[\\-]", "-"));
        assert!(!m("[\\-]", "a"));
    }

    #[test]
    fn unterminated_classes_run_to_the_end() {
        assert!(m("[abc", "b"));
        assert!(!m("[abc", "d"));
        assert!(!m("[", "a"));
        // `[^` with nothing after it negates an empty class: any byte.
        assert!(m("[^", "z"));
        // An empty unterminated class matches nothing.
        assert!(!m("a[", "a["));
        assert!(!m("a[", "ab"));
    }

    #[test]
    fn escapes() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("a\\?", "a?"));
        assert!(!m("a\\?", "ab"));
        assert!(m("\\[a]", "[a]"));
        // A trailing backslash matches itself.
        assert!(m("a\\", "a\\"));
    }

    #[test]
    fn nocase_folds_ascii_letters_only() {
        assert!(glob_match(b"HeLLo", b"hello", true));
        assert!(!glob_match(b"HeLLo", b"hello", false));
        assert!(glob_match(b"[A-C]x", b"bX", true));
        assert!(glob_match(b"[abc]", b"B", true));
        assert!(!glob_match(b"\xc3", b"\xe3", true));
    }

    #[test]
    fn range_ends_compare_as_signed_chars() {
        // 0xff is -1 as a C char, so `[a-\xff]` is the range -1..='a'.
        assert!(glob_match(b"[a-\xff]", b"\xff", false));
        assert!(glob_match(b"[a-\xff]", b"0", false));
        assert!(!glob_match(b"[a-\xff]", b"\x80", false));
        assert!(!glob_match(b"[a-\xff]", b"b", false));
    }

    #[test]
    fn binary_bytes_and_nul() {
        assert!(glob_match(b"a\0*", b"a\0bc", false));
        assert!(glob_match(b"?\0", b"x\0", false));
        assert!(glob_match(b"[\0]", b"\0", false));
    }

    #[test]
    fn pathological_patterns_finish() {
        // Exponential without the "skip longer matches" rule (Redis CVE-2022-36021).
        let pattern = format!("{}b", "a*".repeat(40));
        let text = "a".repeat(10_000);
        assert!(!m(&pattern, &text));
        // Deep patterns must not overflow the stack.
        let deep = "*a".repeat(200_000);
        assert!(!m(&deep, "aaaa"));
    }

    #[test]
    fn more_than_a_thousand_stars_entered_never_match() {
        // What redis-server 7.0.15 answers to KEYS with these patterns, for a key of 2000 `a`.
        let text = "a".repeat(2000);
        assert!(m(&"*a".repeat(1000), &text));
        assert!(!m(&"*a".repeat(1001), &text));
        assert!(m(&format!("{}*", "*a".repeat(1000)), &text));
        assert!(!m(&format!("{}*", "*a".repeat(1001)), &text));
        // The 1001st star may end the pattern: Redis matches before nesting deeper.
        assert!(m(&"a*".repeat(1001), &text));
        assert!(!m(&"a*".repeat(1002), &text));
        // Consecutive stars are one.
        assert!(m(&"**a".repeat(1000), &text));
        // Stars the match never reaches do not count.
        assert!(!m(&"*b".repeat(5000), &text));
        assert!(m(&format!("*{}", "a".repeat(1999)), &text));
    }
}
