//! The AOF manifest: which files of the AOF directory make up the log, in Redis 7.0's
//! format (`appendonly.aof.manifest`, one line per file):
//!
//! ```text
//! file appendonly.aof.1.base.rdb seq 1 type b
//! file appendonly.aof.1.incr.aof seq 1 type i
//! ```
//!
//! `type b` is the base (an RDB file or an AOF), `i` an incremental file appended to after
//! it, `h` a file a rewrite replaced, deleted once the new manifest is on disk. Lines
//! starting with `#` are comments. Loading replays the base, then the incremental files in
//! manifest order.

use std::fmt::Write as _;

/// Redis refuses longer manifest lines.
const MAX_LINE: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Base,
    Incr,
    History,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::Incr => 'i',
            Kind::History => 'h',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    pub name: String,
    pub seq: u64,
    pub kind: Kind,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileEntry>,
    pub incrs: Vec<FileEntry>,
    pub history: Vec<FileEntry>,
}

impl Manifest {
    /// The manifest's text, as Redis writes it.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let all = self.base.iter().chain(&self.history).chain(&self.incrs);
        for entry in all {
            let _ = writeln!(
                text,
                "file {} seq {} type {}",
                entry.name,
                entry.seq,
                entry.kind.letter()
            );
        }
        text
    }

    /// Reads a manifest; the error says what is wrong, in Redis's words where it has them.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut manifest = Manifest::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.len() > MAX_LINE {
                return Err("The AOF manifest file contains too long line".into());
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if !words.len().is_multiple_of(2) {
                return Err("Invalid AOF manifest file format".into());
            }
            let (mut name, mut seq, mut kind) = (None, None, None);
            for pair in words.chunks(2) {
                match pair[0] {
                    "file" => name = Some(pair[1].trim_matches('"').to_string()),
                    "seq" => seq = pair[1].parse::<u64>().ok(),
                    "type" => {
                        kind = match pair[1] {
                            "b" => Some(Kind::Base),
                            "i" => Some(Kind::Incr),
                            "h" => Some(Kind::History),
                            _ => None,
                        }
                    }
                    // Redis ignores keys it does not know (room for later versions).
                    _ => {}
                }
            }
            let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
                return Err("Invalid AOF manifest file format".into());
            };
            if name.contains('/') {
                return Err(format!("Invalid AOF file name '{name}' in the manifest"));
            }
            let entry = FileEntry { name, seq, kind };
            match kind {
                Kind::Base if manifest.base.is_some() => {
                    return Err("Found duplicate base file information".into())
                }
                Kind::Base => manifest.base = Some(entry),
                Kind::Incr => {
                    if manifest.incrs.last().is_some_and(|last| last.seq >= seq) {
                        return Err("Found a non-monotonic sequence number".into());
                    }
                    manifest.incrs.push(entry)
                }
                Kind::History => manifest.history.push(entry),
            }
        }
        if manifest.base.is_none() && manifest.incrs.is_empty() {
            return Err("Found an empty AOF manifest".into());
        }
        Ok(manifest)
    }

    pub fn next_base_seq(&self) -> u64 {
        self.base.as_ref().map_or(0, |b| b.seq) + 1
    }

    pub fn next_incr_seq(&self) -> u64 {
        self.incrs.last().map_or(0, |i| i.seq) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_redis_writes_and_writes_it_back() {
        let text = "file appendonly.aof.1.base.rdb seq 1 type b\n\
                    file appendonly.aof.1.incr.aof seq 1 type i\n\
                    file appendonly.aof.2.incr.aof seq 2 type i\n";
        let manifest = Manifest::parse(text).unwrap();
        assert_eq!(manifest.incrs.len(), 2);
        assert_eq!(manifest.next_base_seq(), 2);
        assert_eq!(manifest.next_incr_seq(), 3);
        assert_eq!(manifest.render(), text);
    }

    #[test]
    fn refuses_what_redis_refuses() {
        assert!(Manifest::parse("").is_err());
        assert!(Manifest::parse("file a seq 1").is_err());
        assert!(Manifest::parse("file a seq x type i").is_err());
        assert!(Manifest::parse("file a seq 2 type i\nfile b seq 1 type i").is_err());
        assert!(Manifest::parse("file a seq 1 type b\nfile b seq 2 type b").is_err());
    }
}
