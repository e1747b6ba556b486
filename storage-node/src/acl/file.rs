//! The ACL file (`aclfile`): one `user <name> <rule> ...` line per user, loaded at start
//! and by ACL LOAD, written by ACL SAVE.
//!
//! Loading is all or nothing, as in Redis: every line is checked, every problem is
//! reported in one message, and the users change only if there was none. A file without a
//! `default` user gets Redis's default one (on, no password, everything allowed).

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;

use super::selector::has_spaces;
use super::user::{merge_selector_arguments, User};

/// Reads users from `path`. `Err` is the message ACL LOAD answers (and startup logs).
pub fn load(path: &Path, all_channels: bool) -> Result<BTreeMap<Vec<u8>, User>, String> {
    let name = path.display();
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{name}': {}",
            os_error_text(&e)
        )
    })?;
    let mut users = BTreeMap::new();
    let mut errors = String::new();
    for (number, line) in text.split(|&b| b == b'\n').enumerate() {
        let line_number = number + 1;
        let line = trim(line, b" \t\r\n");
        if line.is_empty() {
            continue;
        }
        // Words are separated by single blanks (two blanks give an empty rule, a no-op).
        let words: Vec<Bytes> = line
            .split(|&b| b == b' ')
            .map(Bytes::copy_from_slice)
            .collect();
        if words.len() < 2 || words[0].as_ref() != b"user" {
            errors += &format!(
                "{name}:{line_number} should start with user keyword followed by the username. "
            );
            continue;
        }
        let username = &words[1];
        if has_spaces(username) {
            errors += &format!(
                "'{name}:{line_number}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(username)
            );
            continue;
        }
        if users.contains_key(username.as_ref()) {
            errors += &format!(
                "WARNING: Duplicate user '{}' found on line {line_number}. ",
                String::from_utf8_lossy(username)
            );
            continue;
        }
        let mut user = User::new(username, all_channels);
        match merge_selector_arguments(&words[2..]) {
            Ok(rules) => {
                for rule in rules {
                    let rule = trim(&rule, b"\t\r\n");
                    if let Err(e) = user.apply(rule, all_channels) {
                        errors += &format!(
                            "{name}:{line_number}: Error in applying operation '{}': {}. ",
                            String::from_utf8_lossy(rule),
                            e.message()
                        );
                    }
                }
            }
            Err(_) => {
                errors +=
                    &format!("{name}:{line_number}: Unmatched parenthesis in selector definition.");
            }
        }
        users.insert(username.to_vec(), user);
    }
    if !errors.is_empty() {
        errors += "WARNING: ACL errors detected, no change to the previously active ACL rules \
                   was performed";
        return Err(errors);
    }
    users
        .entry(b"default".to_vec())
        .or_insert_with(User::default_user);
    Ok(users)
}

/// A user as one `user <name> <rules>` line (no newline): ACL LIST's entries, the ACL
/// file's lines and CONFIG REWRITE's `user` lines.
pub fn user_line(user: &User) -> Vec<u8> {
    [b"user ", &user.name[..], b" ", &user.describe()].concat()
}

/// Writes every user to `path` (through a temporary file renamed over it).
pub fn save(path: &Path, users: &BTreeMap<Vec<u8>, User>) -> std::io::Result<()> {
    let mut text = Vec::new();
    for user in users.values() {
        text.extend_from_slice(&user_line(user));
        text.push(b'\n');
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        crate::keyspace::unix_time_ms()
    ));
    let temporary = std::path::PathBuf::from(temporary);
    let written =
        std::fs::write(&temporary, &text).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// The C library's text for an error (`strerror`), as Redis quotes it: Rust's display adds
/// ` (os error N)`.
fn os_error_text(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

fn trim<'a>(mut text: &'a [u8], blanks: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = text {
        if !blanks.contains(first) {
            break;
        }
        text = rest;
    }
    while let [rest @ .., last] = text {
        if !blanks.contains(last) {
            break;
        }
        text = rest;
    }
    text
}
