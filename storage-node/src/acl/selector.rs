//! A selector: one set of permissions (commands, keys, channels). Every user has a root
//! selector, changed by the rules given outside parentheses, and may have more, each
//! written `(rule rule ...)`; a command is allowed when any selector allows it all.
//!
//! Commands are a bit per command and subcommand (the command table's ids), as in Redis,
//! so `+@read -get` and `-@all +@read -get` are the same permissions; describing them back
//! (ACL LIST, GETUSER, SAVE) reconstructs rules from the bits the way Redis 7.0 does:
//! `+@all` or `-@all`, then the categories that fit best, then single commands.

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};
use slotproxy::glob::glob_match;

use super::categories;
use super::{Denial, Reason, RuleError};

/// `~pattern` (read and write), `%R~pattern`, `%W~pattern`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub read: bool,
    pub write: bool,
    pub pattern: Vec<u8>,
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match (self.read, self.write) {
            (true, false) => b"%R~",
            (false, true) => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

#[derive(Clone, Debug)]
pub struct Selector {
    pub all_keys: bool,
    pub all_channels: bool,
    /// Every command, and the ones a module could add later: `+@all` until a command is
    /// taken away.
    all_commands: bool,
    /// Set by `+@all` and cleared only by `-@all`: the rules start from `+@all` when
    /// described (Redis's reserved "future commands" bit).
    future_commands: bool,
    allowed: Vec<u64>,
    /// `+select|0`: first arguments allowed of a command whose bit is clear, by spec id.
    first_args: Vec<(usize, Vec<Vec<u8>>)>,
    pub keys: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
}

fn words() -> usize {
    CommandTable::get().spec_count().div_ceil(64)
}

impl Selector {
    /// No permissions; channels all or none as `acl-pubsub-default` says.
    pub fn new(all_channels: bool) -> Selector {
        Selector {
            all_keys: false,
            all_channels,
            all_commands: false,
            future_commands: false,
            allowed: vec![0; words()],
            first_args: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// A selector from `(rule rule ...)`, its rules split as Redis splits arguments.
    pub fn from_group(group: &[u8], all_channels: bool) -> Result<Selector, RuleError> {
        let inner = &group[1..group.len() - 1];
        let rules = slotproxy::resp::split_inline_args(inner).ok_or(RuleError::Syntax)?;
        let mut selector = Selector::new(all_channels);
        for rule in &rules {
            selector.apply(rule)?;
        }
        Ok(selector)
    }

    /// `+@all` (or `allcommands`) with nothing taken away since.
    pub fn allows_all_commands(&self) -> bool {
        self.all_commands
    }

    fn bit(&self, id: usize) -> bool {
        self.allowed
            .get(id / 64)
            .is_some_and(|word| word & (1 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(word) = self.allowed.get_mut(id / 64) {
            if on {
                *word |= 1 << (id % 64);
            } else {
                *word &= !(1 << (id % 64));
                self.all_commands = false;
            }
        }
    }

    /// Allows or denies a command, and with a container all its subcommands.
    fn change_command(&mut self, spec: &CommandSpec, allow: bool) {
        self.set_bit(spec.id, allow);
        self.first_args.retain(|(id, _)| *id != spec.id);
        for sub in &spec.subcommands {
            self.set_bit(sub.id, allow);
        }
    }

    fn change_category(&mut self, bit: u32, allow: bool) {
        for command in CommandTable::get().commands() {
            if categories::mask(command) & bit != 0 {
                self.change_command(command, allow);
            }
            for sub in &command.subcommands {
                if categories::mask(sub) & bit != 0 {
                    self.change_command(sub, allow);
                }
            }
        }
    }

    fn set_all_commands(&mut self, allow: bool) {
        self.allowed.fill(if allow { u64::MAX } else { 0 });
        self.all_commands = allow;
        self.future_commands = allow;
        self.first_args.clear();
    }

    /// Applies one rule about commands, keys or channels.
    pub fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        let is = |word: &str| rule.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || rule == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || rule == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all_commands(false);
        } else if rule.first().is_some_and(|&c| c == b'~' || c == b'%') {
            self.add_key_pattern(rule)?;
        } else if let Some(pattern) = rule.strip_prefix(b"&") {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAll);
            }
            check_no_spaces(pattern)?;
            if !self.channels.iter().any(|c| c == pattern) {
                self.channels.push(pattern.to_vec());
            }
        } else if let Some(category) = rule.strip_prefix(b"+@") {
            let bit = categories::by_name(category).ok_or(RuleError::UnknownName)?;
            self.change_category(bit, true);
        } else if let Some(category) = rule.strip_prefix(b"-@") {
            let bit = categories::by_name(category).ok_or(RuleError::UnknownName)?;
            self.change_category(bit, false);
        } else if let Some(name) = rule.strip_prefix(b"+") {
            self.allow_command(name)?;
        } else if let Some(name) = rule.strip_prefix(b"-") {
            let spec = lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_command(spec, false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let (read, write, pattern) = if rule[0] == b'%' {
            let (mut read, mut write) = (false, false);
            let mut offset = 1;
            loop {
                match rule.get(offset) {
                    Some(b'R' | b'r') if !read => read = true,
                    Some(b'W' | b'w') if !write => write = true,
                    Some(b'~') => {
                        offset += 1;
                        break;
                    }
                    // `%R` with no `~` is a pattern of nothing, as Redis reads it.
                    None => break,
                    Some(_) => return Err(RuleError::Syntax),
                }
                offset += 1;
            }
            (read, write, &rule[offset.min(rule.len())..])
        } else {
            (true, true, &rule[1..])
        };
        check_no_spaces(pattern)?;
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(existing) => {
                existing.read |= read;
                existing.write |= write;
            }
            None => self.keys.push(KeyPattern {
                read,
                write,
                pattern: pattern.to_vec(),
            }),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+cmd`, `+container|sub`, or `+cmd|first-arg` for a command without subcommands.
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let spec = lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_command(spec, true);
            return Ok(());
        };
        let (command, first_arg) = (&name[..bar], &name[bar + 1..]);
        let spec = lookup(command).ok_or(RuleError::UnknownName)?;
        if spec.name.contains('|') {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if first_arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !spec.subcommands.is_empty() {
            let sub = lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_command(sub, true);
            return Ok(());
        }
        let id = spec.id;
        let position = match self.first_args.iter().position(|(i, _)| *i == id) {
            Some(position) => position,
            None => {
                self.first_args.push((id, Vec::new()));
                self.first_args.len() - 1
            }
        };
        let args = &mut self.first_args[position].1;
        if !args.iter().any(|a| a.eq_ignore_ascii_case(first_arg)) {
            args.push(first_arg.to_vec());
        }
        Ok(())
    }

    /// Whether this selector lets `args` run as `spec`; the argument to blame otherwise.
    pub fn check(&self, spec: &CommandSpec, args: &[Bytes]) -> Result<(), Denial> {
        if !self.all_commands && !spec.flags.contains(CommandFlags::NO_AUTH) && !self.bit(spec.id) {
            let at = if spec.name.contains('|') { 2 } else { 1 };
            let allowed_first = args.get(at).is_some_and(|arg| {
                self.first_args
                    .iter()
                    .find(|(id, _)| *id == spec.id)
                    .is_some_and(|(_, firsts)| firsts.iter().any(|f| f.eq_ignore_ascii_case(arg)))
            });
            if !allowed_first {
                return Err(Denial::new(Reason::Command, 0));
            }
        }
        if !self.all_keys && spec.has_keys() {
            for (index, flags) in spec.keys_and_flags(args).unwrap_or_default() {
                let read = flags.contains(&"access");
                let write = flags
                    .iter()
                    .any(|f| matches!(*f, "insert" | "delete" | "update"));
                if !self.key_allowed(&args[index], read, write) {
                    return Err(Denial::new(Reason::Key, index));
                }
            }
        }
        if !self.all_channels {
            let (channels, literal) = match spec.name.as_str() {
                "publish" | "spublish" => (1..args.len().min(2), false),
                "subscribe" | "ssubscribe" => (1..args.len(), false),
                "psubscribe" => (1..args.len(), true),
                _ => (0..0, false),
            };
            for index in channels {
                if !self.channel_allowed(&args[index], literal) {
                    return Err(Denial::new(Reason::Channel, index));
                }
            }
        }
        Ok(())
    }

    fn key_allowed(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.all_keys
            || self.keys.iter().any(|p| {
                (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, key, false)
            })
    }

    /// A channel (or, `literal`, a PSUBSCRIBE pattern, which must be listed as it is).
    pub fn channel_allowed(&self, channel: &[u8], literal: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|pattern| {
                if literal {
                    pattern == channel
                } else {
                    glob_match(pattern, channel, false)
                }
            })
    }

    /// Keys and channels, then command rules, as ACL LIST shows a selector.
    pub fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.all_keys {
            out.extend_from_slice(b"~* ");
        } else {
            for pattern in &self.keys {
                pattern.describe(&mut out);
                out.push(b' ');
            }
        }
        if self.all_channels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for channel in &self.channels {
                out.push(b'&');
                out.extend_from_slice(channel);
                out.push(b' ');
            }
        }
        out.extend_from_slice(self.describe_commands().as_bytes());
        out
    }

    /// The key patterns as ACL GETUSER shows them.
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        join_words(self.keys.iter().map(|pattern| {
            let mut word = Vec::new();
            pattern.describe(&mut word);
            word
        }))
    }

    /// The channel patterns as ACL GETUSER shows them.
    pub fn describe_channels(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        join_words(
            self.channels
                .iter()
                .map(|channel| [b"&", &channel[..]].concat()),
        )
    }

    /// The command rules: `+@all` or `-@all`, then the categories that fit the bits best
    /// (each at most once, the one with fewest differences first), then single commands
    /// and first arguments until the rules give exactly these bits.
    pub fn describe_commands(&self) -> String {
        let additive = !self.future_commands;
        let mut rules = vec![if additive { "-@all" } else { "+@all" }.to_string()];
        let mut rebuilt = Selector::new(false);
        rebuilt.set_all_commands(!additive);
        let mut remaining = self.clone();
        let mut applied = [false; categories::CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (usize::MAX, 0);
            for (i, _) in categories::CATEGORIES.iter().enumerate() {
                if applied[i] {
                    continue;
                }
                let (on, off) = remaining.count_category(1 << i);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(i);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(best) = best else { break };
            rebuilt.change_category(1 << best, additive);
            remaining.change_category(1 << best, !additive);
            let sign = if additive { "+@" } else { "-@" };
            rules.push(format!("{sign}{}", categories::CATEGORIES[best]));
            applied[best] = true;
        }
        for command in CommandTable::get().commands() {
            self.describe_difference(command, &mut rebuilt, &mut rules);
            for sub in &command.subcommands {
                self.describe_difference(sub, &mut rebuilt, &mut rules);
            }
            if !self.bit(command.id) {
                if let Some((_, firsts)) = self.first_args.iter().find(|(id, _)| *id == command.id)
                {
                    for first in firsts {
                        let first = String::from_utf8_lossy(first);
                        rules.push(format!("+{}|{first}", command.name));
                    }
                }
            }
        }
        debug_assert_eq!(rebuilt.allowed, self.allowed);
        rules.join(" ")
    }

    fn describe_difference(
        &self,
        spec: &CommandSpec,
        rebuilt: &mut Selector,
        rules: &mut Vec<String>,
    ) {
        let mine = self.bit(spec.id);
        if mine != rebuilt.bit(spec.id) {
            rules.push(format!("{}{}", if mine { '+' } else { '-' }, spec.name));
            rebuilt.change_command(spec, mine);
        }
    }

    /// Commands (and subcommands) of a category this selector allows and denies.
    fn count_category(&self, bit: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for spec in CommandTable::get().all_specs() {
            if categories::mask(spec) & bit != 0 {
                if self.bit(spec.id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }
}

/// Words separated by single blanks.
fn join_words(words: impl Iterator<Item = Vec<u8>>) -> Vec<u8> {
    words.collect::<Vec<_>>().join(&b' ')
}

/// A command or `container|sub` from the command table, whatever its renamed name.
fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    if name.iter().filter(|&&b| b == b'|').count() > 1 {
        return None;
    }
    CommandTable::get().by_full_name(name)
}

/// Usernames and patterns may not hold blanks or NUL bytes (Redis's `ACLStringHasSpaces`).
pub fn check_no_spaces(text: &[u8]) -> Result<(), RuleError> {
    if has_spaces(text) {
        Err(RuleError::Syntax)
    } else {
        Ok(())
    }
}

pub fn has_spaces(text: &[u8]) -> bool {
    text.iter()
        .any(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0))
}
