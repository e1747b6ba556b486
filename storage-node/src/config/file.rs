//! Reading settings from the command line and from redis.conf-style files.

use super::{params, Config};

/// A setting that could not be applied; the message names the setting and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Parses `storage-node [config-file] [--name value ...]`, as redis-server does: the file is
/// read first, then the flags override it.
pub fn parse_args(args: &[String]) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    let mut rest = args;
    if let Some(first) = rest.first() {
        if !first.starts_with("--") {
            let text = std::fs::read_to_string(first)
                .map_err(|e| ConfigError(format!("cannot read config file '{first}': {e}")))?;
            apply_file(&mut config, &text)?;
            config.config_file =
                Some(std::fs::canonicalize(first).unwrap_or_else(|_| first.into()));
            rest = &rest[1..];
        }
    }
    let mut i = 0;
    while i < rest.len() {
        let Some(name) = rest[i].strip_prefix("--") else {
            return Err(ConfigError(format!("unexpected argument '{}'", rest[i])));
        };
        let mut values = Vec::new();
        i += 1;
        while i < rest.len() && !rest[i].starts_with("--") {
            values.push(rest[i].clone());
            i += 1;
        }
        params::apply(&mut config, name, &values)
            .map_err(|e| ConfigError(format!("--{name}: {e}")))?;
    }
    Ok(config)
}

/// Applies a redis.conf-style text: one `name value...` per line, `#` comments, quoted
/// values allowed.
pub fn apply_file(config: &mut Config, text: &str) -> Result<(), ConfigError> {
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = split_words(line)
            .ok_or_else(|| ConfigError(format!("line {}: unbalanced quotes", number + 1)))?;
        let Some((name, values)) = words.split_first() else {
            continue;
        };
        params::apply(config, name, values)
            .map_err(|e| ConfigError(format!("line {}: '{name}': {e}", number + 1)))?;
    }
    Ok(())
}

pub(super) fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Some(words);
        };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            loop {
                match chars.next()? {
                    c if c == first => break,
                    '\\' if first == '"' => word.push(chars.next()?),
                    c => word.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        words.push(word);
    }
}
