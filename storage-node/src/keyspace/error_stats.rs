//! INFO `errorstats`: error replies counted by their code, the first word of the message
//! (`ERR`, `WRONGTYPE`, `NOSCRIPT`, ...), as Redis's `incrementErrorCount` counts them.
//! Kept beside the keyspace because every command that answers an error holds its lock.

use std::collections::BTreeMap;

/// Redis tracks at most this many distinct codes; later new codes are not counted, so a
/// client inventing codes cannot grow the table without bound.
const MAX_CODES: usize = 128;

/// Only the first this many bytes are searched for the end of the code, as in Redis.
const CODE_SEARCH: usize = 32;

#[derive(Default, Debug)]
pub struct ErrorStats {
    /// By code, in the byte order INFO lists them (Redis walks a radix tree).
    counts: BTreeMap<String, u64>,
}

impl ErrorStats {
    /// Counts one error reply with this message (without the leading `-`).
    pub fn count(&mut self, message: &str) {
        let head = &message.as_bytes()[..message.len().min(CODE_SEARCH)];
        let code = match head.iter().position(|&b| b == b' ') {
            Some(end) => &message[..end],
            None => "ERR",
        };
        if let Some(n) = self.counts.get_mut(code) {
            *n += 1;
        } else if self.counts.len() < MAX_CODES {
            self.counts.insert(code.to_string(), 1);
        }
    }

    /// Forgets every count (CONFIG RESETSTAT).
    pub fn reset(&mut self) {
        self.counts.clear();
    }

    /// Codes and counts, in INFO's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts.iter().map(|(code, n)| (code.as_str(), *n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_first_word_or_err() {
        let mut stats = ErrorStats::default();
        stats.count("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.count("ERR syntax error");
        stats.count("NOSPACEHERE");
        let counts: Vec<(&str, u64)> = stats.iter().collect();
        assert_eq!(counts, vec![("ERR", 2), ("WRONGTYPE", 1)]);
    }
}
