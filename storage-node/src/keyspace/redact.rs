//! Secrets a command carries, hidden from the slow log and MONITOR as Redis 7.0's
//! `redactClientCommandArgument` hides them: each password (and ACL user name next to it)
//! becomes `(redacted)`.
//!
//! - `AUTH [user] password`: every argument;
//! - `HELLO ... AUTH user password ...`: the two after `AUTH`;
//! - `MIGRATE ... AUTH password` / `AUTH2 user password`;
//! - `CONFIG SET`: the values of `requirepass`, `masterauth` and `masteruser`.

use std::borrow::Cow;

use bytes::Bytes;

const REDACTED: &str = "(redacted)";

/// `args` as the slow log shows them. `name` is the command's table name
/// (`config|set` for a subcommand).
pub fn redacted<'a>(name: &str, args: &'a [Bytes]) -> Cow<'a, [Bytes]> {
    let hidden: Vec<usize> = match name {
        // Redis redacts only once the syntax is known to be right.
        "auth" if args.len() <= 3 => (1..args.len()).collect(),
        "hello" => hello_secrets(args),
        "migrate" => migrate_secrets(args),
        "config|set" if args.len().is_multiple_of(2) => (2..args.len())
            .step_by(2)
            .filter(|&i| is_sensitive_setting(&args[i]))
            .map(|i| i + 1)
            .collect(),
        _ => Vec::new(),
    };
    if hidden.is_empty() {
        return Cow::Borrowed(args);
    }
    let mut out = args.to_vec();
    for i in hidden {
        if let Some(arg) = out.get_mut(i) {
            *arg = Bytes::from_static(REDACTED.as_bytes());
        }
    }
    Cow::Owned(out)
}

fn is_sensitive_setting(name: &[u8]) -> bool {
    ["requirepass", "masterauth", "masteruser"]
        .iter()
        .any(|s| name.eq_ignore_ascii_case(s.as_bytes()))
}

/// HELLO's options are read in order and reading stops at the first bad one.
fn hello_secrets(args: &[Bytes]) -> Vec<usize> {
    let mut hidden = Vec::new();
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i - 1;
        if args[i].eq_ignore_ascii_case(b"auth") && more >= 2 {
            hidden.extend([i + 1, i + 2]);
            i += 3;
        } else if args[i].eq_ignore_ascii_case(b"setname") && more >= 1 {
            i += 2;
        } else {
            break;
        }
    }
    hidden
}

/// MIGRATE's options start after its five fixed arguments and end at KEYS.
fn migrate_secrets(args: &[Bytes]) -> Vec<usize> {
    let mut hidden = Vec::new();
    let mut i = 6;
    while i < args.len() {
        let more = args.len() - i - 1;
        let option = &args[i];
        if option.eq_ignore_ascii_case(b"copy") || option.eq_ignore_ascii_case(b"replace") {
            i += 1;
        } else if option.eq_ignore_ascii_case(b"auth") && more >= 1 {
            hidden.push(i + 1);
            i += 2;
        } else if option.eq_ignore_ascii_case(b"auth2") && more >= 2 {
            hidden.extend([i + 1, i + 2]);
            i += 3;
        } else {
            break;
        }
    }
    hidden
}
