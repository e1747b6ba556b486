//! A user: whether it may log in, its password hashes, and its selectors (the root one
//! first). Rules change it one at a time, as `ACL SETUSER`, a `user` line of redis.conf or
//! of the ACL file give them.

use bytes::Bytes;
use slotproxy::cluster::CommandSpec;

use super::selector::Selector;
use super::sha256::hex_digest;
use super::{Denial, Reason, RuleError};

#[derive(Clone, Debug)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    /// `skip-sanitize-payload` / `sanitize-payload` (neither until one is given). The node
    /// checks every RESTORE payload fully whichever is set: skipping is only a permission.
    sanitize: Option<bool>,
    /// Hex SHA-256 of each password, in the order they were added.
    pub passwords: Vec<String>,
    /// The root selector first, then those given in parentheses.
    pub selectors: Vec<Selector>,
}

impl User {
    /// A new user: off, no passwords, no permissions (channels per `acl-pubsub-default`).
    pub fn new(name: &[u8], all_channels: bool) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
        }
    }

    /// Redis's `default` user: on, no password, everything allowed.
    pub fn default_user() -> User {
        let mut user = User::new(b"default", false);
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            // These rules are Redis's own and always valid.
            let _ = user.apply(rule.as_bytes(), false);
        }
        user
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    /// Applies one rule. `all_channels` is `acl-pubsub-default` for new selectors and
    /// `reset`.
    pub fn apply(&mut self, rule: &[u8], all_channels: bool) -> Result<(), RuleError> {
        let is = |word: &str| rule.eq_ignore_ascii_case(word.as_bytes());
        if rule.is_empty() {
            return Ok(());
        }
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Some(false);
        } else if is("sanitize-payload") {
            self.sanitize = Some(true);
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if let Some(password) = rule.strip_prefix(b">") {
            self.add_password(hex_digest(password));
        } else if let Some(hash) = rule.strip_prefix(b"#") {
            self.add_password(checked_hash(hash)?);
        } else if let Some(password) = rule.strip_prefix(b"<") {
            self.remove_password(&hex_digest(password))?;
        } else if let Some(hash) = rule.strip_prefix(b"!") {
            self.remove_password(&checked_hash(hash)?)?;
        } else if rule.len() >= 2 && rule[0] == b'(' && rule[rule.len() - 1] == b')' {
            let selector = Selector::from_group(rule, all_channels)?;
            self.selectors.push(selector);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.nopass = false;
            self.passwords.clear();
            self.enabled = false;
            self.sanitize = Some(true);
            self.selectors.truncate(1);
            let root = &mut self.selectors[0];
            for rule in ["resetkeys", "resetchannels", "-@all"] {
                root.apply(rule.as_bytes())?;
            }
            if all_channels {
                root.apply(b"allchannels")?;
            }
        } else {
            self.selectors[0].apply(rule)?;
        }
        Ok(())
    }

    fn add_password(&mut self, hash: String) {
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
        self.nopass = false;
    }

    fn remove_password(&mut self, hash: &str) -> Result<(), RuleError> {
        let position = self
            .passwords
            .iter()
            .position(|p| p == hash)
            .ok_or(RuleError::NoSuchPassword)?;
        self.passwords.remove(position);
        Ok(())
    }

    /// Whether `password` logs this user in (an enabled user, and `nopass` or one of its
    /// passwords). Hashes are compared in full whatever differs, so the time taken says
    /// nothing about how close a guess was.
    pub fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hashed = hex_digest(password);
        self.passwords.iter().fold(false, |found, stored| {
            let differs = stored
                .bytes()
                .zip(hashed.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            found | (differs == 0 && stored.len() == hashed.len())
        })
    }

    /// Whether every selector is needed: the root one allows everything (the default user
    /// as it starts), so no check need look at the arguments.
    pub fn allows_everything(&self) -> bool {
        let root = self.root();
        root.all_keys && root.all_channels && root.allows_all_commands()
    }

    /// Checks a command against every selector: allowed if one allows it; otherwise the
    /// most telling refusal (a key or channel over the command itself, the later argument
    /// among equals), as Redis's `ACLCheckAllUserCommandPerm` picks it.
    pub fn check(&self, spec: &CommandSpec, args: &[Bytes]) -> Result<(), Denial> {
        let mut worst = Denial::new(Reason::Command, 0);
        for selector in &self.selectors {
            match selector.check(spec, args) {
                Ok(()) => return Ok(()),
                Err(denial) => {
                    if denial.reason > worst.reason
                        || (denial.reason == worst.reason && denial.position > worst.position)
                    {
                        worst = denial;
                    }
                }
            }
        }
        Err(worst)
    }

    /// The flags as ACL LIST and GETUSER name them, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Some(false) => flags.push("skip-sanitize-payload"),
            Some(true) => flags.push("sanitize-payload"),
            None => {}
        }
        flags
    }

    /// The user's rules in the form `ACL SETUSER` takes (ACL LIST, the ACL file).
    pub fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for flag in self.flags() {
            out.extend_from_slice(flag.as_bytes());
            out.push(b' ');
        }
        for password in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(password.as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(&self.root().describe());
        for selector in &self.selectors[1..] {
            out.extend_from_slice(b" (");
            out.extend_from_slice(&selector.describe());
            out.push(b')');
        }
        out
    }
}

/// A `#hash` or `!hash`: 64 lower-case hex digits.
fn checked_hash(hash: &[u8]) -> Result<String, RuleError> {
    let valid = hash.len() == 64 && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return Err(RuleError::BadHash);
    }
    Ok(String::from_utf8_lossy(hash).into_owned())
}

/// Joins rules a client split over several arguments back into selectors: from an
/// argument that opens `(` without closing it up to the one that ends with `)`, joined by
/// blanks, as Redis's `ACLMergeSelectorArguments` does. `Err` holds the index of a
/// selector that never closes.
pub fn merge_selector_arguments(rules: &[Bytes]) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, rule) in rules.iter().enumerate() {
        let closes = rule.last() == Some(&b')');
        if let Some((_, group)) = open.as_mut() {
            group.push(b' ');
            group.extend_from_slice(rule);
            if closes {
                if let Some((_, group)) = open.take() {
                    merged.push(group);
                }
            }
            continue;
        }
        if rule.first() == Some(&b'(') && !closes {
            open = Some((i, rule.to_vec()));
            continue;
        }
        merged.push(rule.to_vec());
    }
    match open {
        Some((start, _)) => Err(start),
        None => Ok(merged),
    }
}
