//! Glob-style pattern matching as Redis's `stringmatchlen` does it (KEYS, SCAN MATCH,
//! CONFIG GET, PSUBSCRIBE): `*`, `?`, `[abc]`, `[^a-z]`, `\\x` escapes.

/// Whether `text` matches `pattern`. `nocase` compares ASCII letters case-insensitively.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    // Placeholder until the keys work lands: exact match and a lone `*` only.
    let _ = nocase;
    pattern == b"*" || pattern == text
}
