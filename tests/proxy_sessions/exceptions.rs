//! The documented differences between slotproxy and one Redis 7.0 server, read from
//! `tests/proxy_sessions/EXCEPTIONS`. One entry a line:
//!
//! ```text
//! session | backend | command | why
//! ```
//!
//! `backend` is `redis-cluster`, `storage-nodes` or `any`; `command` is the first words of
//! the command line whose reply may differ (case-insensitive), `!read` for a reply read with
//! `!read`, or `*` for every command of the session (a backend without a whole feature). An
//! entry that allows a difference which no longer happens fails the run too: the list stays
//! true. A command written `?WORDS` marks a race: the reply differs in some runs only, so
//! the entry is not required to be used.

use std::cell::Cell;

pub struct Exception {
    pub session: String,
    pub backend: String,
    pub command: Vec<String>,
    pub reason: String,
    /// A race: the difference shows in some runs only.
    pub sometimes: bool,
    /// Whether a difference used this entry during the run.
    pub used: Cell<bool>,
}

pub fn parse(source: &str) -> Result<Vec<Exception>, String> {
    let mut out = Vec::new();
    for (index, line) in source.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.splitn(4, '|').map(str::trim).collect();
        let [session, backend, command, reason] = fields[..] else {
            return Err(format!("EXCEPTIONS line {}: needs 4 fields", index + 1));
        };
        if !matches!(backend, "redis-cluster" | "storage-nodes" | "any") {
            return Err(format!("EXCEPTIONS line {}: backend {backend}?", index + 1));
        }
        if reason.is_empty() || command.is_empty() {
            return Err(format!(
                "EXCEPTIONS line {}: a command and a reason",
                index + 1
            ));
        }
        let (sometimes, command) = match command.strip_prefix('?') {
            Some(rest) => (true, rest),
            None => (false, command),
        };
        out.push(Exception {
            session: session.to_string(),
            backend: backend.to_string(),
            command: command
                .split_whitespace()
                .map(str::to_ascii_lowercase)
                .collect(),
            reason: reason.to_string(),
            sometimes,
            used: Cell::new(false),
        });
    }
    Ok(out)
}

/// The entry allowing `args`' reply to differ in `session` on `backend`, if any.
pub fn find<'a>(
    exceptions: &'a [Exception],
    session: &str,
    backend: &str,
    args: &[Vec<u8>],
) -> Option<&'a Exception> {
    exceptions.iter().find(|e| {
        e.session == session
            && (e.backend == "any" || e.backend == backend)
            && (e.command == ["*"] || matches_words(&e.command, args))
    })
}

fn matches_words(words: &[String], args: &[Vec<u8>]) -> bool {
    words.len() <= args.len()
        && words
            .iter()
            .zip(args)
            .all(|(word, arg)| word.as_bytes().eq_ignore_ascii_case(arg))
}
