//! Reading settings from the command line and from redis.conf files, as redis-server does.
//!
//! `storage-node [config-file | -] [--name value ...] [-]`: the file is read first, then
//! standard input if `-` is given, then the options, which are more lines of the same
//! file: `--name` starts a line and the arguments after it are its values (a value may
//! itself start with `--`: `--requirepass --x`). `--save` directly followed by another
//! option or at the end means `save ""`, and `"--port 6380"` in one argument is one line,
//! both as in Redis 7.0.
//!
//! Besides the settings of [`params`], a file may hold the directives that are not
//! settings: `include` (files, wildcards allowed, read in place), `rename-command`
//! (honoured: see [`Config::renamed_commands`]), and `loadmodule` and `user`, which stop
//! the start with a clear error: the node has no modules and no ACL users, and starting
//! without what they ask for would run a different server than the file describes.

use std::path::{Path, PathBuf};

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

/// The configuration read from standard input (`-`), kept so that `daemonize` can hand
/// it to the daemon, whose own standard input is /dev/null.
static STDIN_CONFIG: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What `-` read from standard input, if it was given.
pub fn stdin_config() -> Option<&'static str> {
    STDIN_CONFIG.get().map(String::as_str)
}

/// How deep `include` may nest: deeper is a file that includes itself.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Parses `storage-node [config-file] [--name value ...]`, as redis-server does.
pub fn parse_args(args: &[String]) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    let mut rest = args;
    if let Some(first) = rest.first().filter(|a| !a.starts_with('-')) {
        apply_path(&mut config, Path::new(first), 0)?;
        config.config_file = Some(std::fs::canonicalize(first).unwrap_or_else(|_| first.into()));
        rest = &rest[1..];
    }
    let (lines, from_stdin) = option_lines(args.len(), rest)?;
    if from_stdin {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| ConfigError(format!("cannot read the configuration from stdin: {e}")))?;
        apply_text(&mut config, &text, "stdin", 0)?;
        let _ = STDIN_CONFIG.set(text);
    }
    for words in lines {
        let name = words.first().cloned().unwrap_or_default();
        apply_directive(&mut config, &words, 0)
            .map_err(|e| ConfigError(format!("--{name}: {e}")))?;
    }
    Ok(config)
}

/// The command line's options as config lines, and whether `-` asked for standard input.
/// `argc` counts every argument, `rest` is what follows the config file.
fn option_lines(argc: usize, rest: &[String]) -> Result<(Vec<Vec<String>>, bool), ConfigError> {
    let first_index = argc - rest.len();
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut from_stdin = false;
    // Whether the last option name still waits for its first value.
    let mut value_due = false;
    for (i, arg) in rest.iter().enumerate() {
        let index = first_index + i;
        let next_is_option = rest.get(i + 1).is_some_and(|n| n.starts_with("--"));
        let is_last = i + 1 == rest.len();
        if arg == "-" && (index == 0 || index + 1 == argc) {
            from_stdin = true;
        } else if !value_due && arg.starts_with("--") {
            let mut words = split_words(&arg[2..])
                .ok_or_else(|| ConfigError(format!("{arg}: unbalanced quotes")))?;
            if words.is_empty() {
                return Err(ConfigError(format!("'{arg}': no option name")));
            }
            value_due = words.len() == 1;
            if value_due && words[0].eq_ignore_ascii_case("save") && (next_is_option || is_last) {
                words.push(String::new());
                value_due = false;
            }
            lines.push(words);
        } else {
            match lines.last_mut() {
                Some(line) => line.push(arg.clone()),
                None => return Err(ConfigError(format!("unexpected argument '{arg}'"))),
            }
            value_due = false;
        }
    }
    Ok((lines, from_stdin))
}

/// Applies a redis.conf-style text: one `name value...` per line, `#` comments, quoted
/// values allowed.
pub fn apply_file(config: &mut Config, text: &str) -> Result<(), ConfigError> {
    apply_text(config, text, "config file", 0)
}

fn apply_path(config: &mut Config, path: &Path, depth: usize) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("cannot read config file '{}': {e}", path.display())))?;
    apply_text(config, &text, &path.display().to_string(), depth)
}

fn apply_text(
    config: &mut Config,
    text: &str,
    source: &str,
    depth: usize,
) -> Result<(), ConfigError> {
    for (number, line) in text.lines().enumerate() {
        let at = |e: String| {
            ConfigError(format!(
                "{source}, line {}: '{}': {e}",
                number + 1,
                line.trim()
            ))
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = split_words(line)
            .ok_or_else(|| at("Unbalanced quotes in configuration line".into()))?;
        if words.is_empty() {
            continue;
        }
        match apply_directive(config, &words, depth) {
            Ok(()) => {}
            // An error inside an included file already says where it is.
            Err(e) if words[0].eq_ignore_ascii_case("include") => return Err(ConfigError(e)),
            Err(e) => return Err(at(e)),
        }
    }
    Ok(())
}

/// One line of configuration: a directive that is not a setting, or a setting.
fn apply_directive(config: &mut Config, words: &[String], depth: usize) -> Result<(), String> {
    let (name, values) = words.split_first().ok_or("empty directive")?;
    match name.to_ascii_lowercase().as_str() {
        "include" => {
            let [path] = values else {
                return Err("wrong number of arguments".into());
            };
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(format!(
                    "include nested deeper than {MAX_INCLUDE_DEPTH} files (does a file include itself?)"
                ));
            }
            for file in include_paths(path)? {
                apply_path(config, &file, depth + 1).map_err(|e| e.0)?;
            }
            Ok(())
        }
        "rename-command" => {
            let [from, to] = values else {
                return Err("wrong number of arguments".into());
            };
            config.rename_command(from, to)
        }
        "loadmodule" => Err(format!(
            "modules are not supported by this node: cannot load '{}'",
            values.first().map_or("", String::as_str)
        )),
        "user" => super::acl::add_user_line(&mut config.acl, values),
        // Several `save` lines add up (the first replaces the defaults; `save ""` empties
        // the list), where CONFIG SET save replaces it.
        "save" => {
            let before = std::mem::take(&mut config.save);
            if let Err(e) = params::apply(config, name, values) {
                config.save = before;
                return Err(e);
            }
            let empties = values.len() == 1 && values[0].is_empty();
            if config.save_lines_read && !empties {
                let added = std::mem::replace(&mut config.save, before);
                config.save.extend(added);
            }
            config.save_lines_read = true;
            Ok(())
        }
        _ => params::apply(config, name, values),
    }
}

/// The files an `include` names: the path itself, or with wildcards (`*`, `?`, `[...]`) in
/// its file name, the matching files in alphabetical order (none is no error, as in Redis).
fn include_paths(path: &str) -> Result<Vec<PathBuf>, String> {
    let path = Path::new(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?', '[']) {
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            slotproxy::glob::glob_match(
                name.as_bytes(),
                e.file_name().to_string_lossy().as_bytes(),
                false,
            )
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}

/// Splits a config line into words as Redis's `sdssplitargs` does: blanks separate words;
/// `"..."` allows `\n`-style escapes and `\xHH`, `'...'` only `\'`; a closing quote must be
/// followed by a blank or the end. `None` for unbalanced quotes.
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
            // Bytes: `\xHH` escapes may spell a UTF-8 character byte by byte (CONFIG REWRITE
            // writes non-ASCII that way, as Redis does).
            let mut bytes = Vec::new();
            loop {
                match chars.next()? {
                    c if c == first => break,
                    '\\' if first == '"' => unescape(&mut chars, &mut bytes)?,
                    '\\' if first == '\'' && chars.peek() == Some(&'\'') => {
                        chars.next();
                        bytes.push(b'\'');
                    }
                    c => push_char(&mut bytes, c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return None;
            }
            word = String::from_utf8_lossy(&bytes).into_owned();
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

fn push_char(bytes: &mut Vec<u8>, c: char) {
    bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
}

/// Appends what a `\` inside double quotes stands for (with the characters after it).
fn unescape(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    bytes: &mut Vec<u8>,
) -> Option<()> {
    let c = match chars.next()? {
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'b' => '\u{8}',
        'a' => '\u{7}',
        'x' => {
            let mut hex = chars.clone();
            let digits = (
                hex.next().and_then(|h| h.to_digit(16)),
                hex.next().and_then(|l| l.to_digit(16)),
            );
            let (Some(high), Some(low)) = digits else {
                push_char(bytes, 'x');
                return Some(());
            };
            chars.next();
            chars.next();
            bytes.push((high * 16 + low) as u8);
            return Some(());
        }
        other => other,
    };
    push_char(bytes, c);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// What redis-server 7.0 shows in `CONFIG GET save` after the same file and options.
    #[test]
    fn save_lines_add_up_as_in_redis() {
        let dir = std::env::temp_dir().join(format!("save-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("redis.conf");
        std::fs::write(&file, "save 100 1\nsave 200 2\n").unwrap();
        let path = file.display().to_string();
        let config = parse_args(&strings(&[&path, "--save", "300 3"])).unwrap();
        assert_eq!(config.save, vec![(100, 1), (200, 2), (300, 3)]);
        let config = parse_args(&strings(&["--save", "", "--save", "50 5"])).unwrap();
        assert_eq!(config.save, vec![(50, 5)]);
        let config = parse_args(&strings(&["--save", "50 5", "--save", ""])).unwrap();
        assert_eq!(config.save, vec![]);
        let config = parse_args(&strings(&["--port", "7000"])).unwrap();
        assert_eq!(config.save, Config::default().save);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn command_line_reads_like_redis_server() {
        let args = strings(&[
            "--save",
            "--port",
            "7000",
            "--requirepass",
            "--x",
            "--bind",
            "a",
            "b",
        ]);
        let (lines, stdin) = option_lines(args.len(), &args).unwrap();
        assert!(!stdin);
        assert_eq!(
            lines,
            vec![
                strings(&["save", ""]),
                strings(&["port", "7000"]),
                strings(&["requirepass", "--x"]),
                strings(&["bind", "a", "b"]),
            ]
        );
        let args = strings(&["--port 7001", "-", "--save"]);
        let (lines, stdin) = option_lines(args.len() + 1, &args[..]).unwrap();
        assert!(!stdin, "'-' in the middle is a value, as in Redis");
        assert_eq!(
            lines,
            vec![strings(&["port", "7001", "-"]), strings(&["save", ""])]
        );
        let args = strings(&["--port", "7002", "-"]);
        let (_, stdin) = option_lines(args.len(), &args).unwrap();
        assert!(stdin);
    }

    #[test]
    fn quoting_follows_sdssplitargs() {
        assert_eq!(
            split_words(r#"a "b c" 'd\'e' "\x41\n""#).unwrap(),
            strings(&["a", "b c", "d'e", "A\n"])
        );
        assert_eq!(
            split_words(r#""caf\xc3\xa9" "\xzz""#).unwrap(),
            strings(&["café", "xzz"])
        );
        assert_eq!(split_words(r#"a "b"c"#), None);
        assert_eq!(split_words(r#"a "b"#), None);
    }

    #[test]
    fn modules_stop_the_start_and_user_lines_are_kept_for_it() {
        let mut config = Config::default();
        let err = apply_file(&mut config, "loadmodule /x.so\n").unwrap_err();
        assert!(err.0.contains("modules are not supported"), "{err}");
        apply_file(&mut config, "user bob on >pw ~* (+get ~g*) +@all\n").expect("a valid user");
        let rules: Vec<&[u8]> = config.acl.users[0].iter().map(Vec::as_slice).collect();
        let expected: [&[u8]; 6] = [b"bob", b"on", b">pw", b"~*", b"(+get ~g*)", b"+@all"];
        assert_eq!(rules, expected);
        let err = apply_file(&mut config, "user bob on\n").unwrap_err();
        assert!(err.0.contains("Duplicate user found"), "{err}");
        let err = apply_file(&mut config, "user carol on badrule\n").unwrap_err();
        assert!(
            err.0.contains("Error in user declaration: Syntax error"),
            "{err}"
        );
    }
}
