//! The session file format: what clients send, one step per line.
//!
//! ```text
//! # a comment
//! SET k "two words"        client 1 sends a command and reads one reply
//! @2 GET k                 client 2 does (clients connect on first use)
//! @2 !read                 client 2 reads one more reply without sending (pub/sub messages,
//!                          the second confirmation of `SUBSCRIBE a b`)
//! !pipeline                the commands up to !end go out in one write, then every reply is
//! INCR n                   read (`@2 !pipeline` for another client)
//! GET n
//! !repeat 3000 INCR n      (inside !pipeline) the same command 3000 times
//! !end
//! @2 !send BLPOP q 10      client 2 sends without reading (its reply comes with !read)
//! !raw "PING\r\n"          client 1 sends these bytes as they are and reads nothing (inline
//!                          commands, malformed requests; replies come with !read)
//! !unordered SMEMBERS s    client 1 sends a command whose reply is in an order Redis does
//!                          not define (KEYS, SMEMBERS, COMMAND): compared with the
//!                          elements of every array, set and map sorted, at any depth
//! !blocked 1               waits until the server (every node behind the proxy) has this
//!                          many clients blocked
//! ```
//!
//! A connection the server closes (QUIT, a protocol error) reads as the reply `(closed)`;
//! the client's next step connects again.
//!
//! Words are split on whitespace; a double-quoted word may hold spaces and the escapes `\"`,
//! `\\`, `\n`, `\r`, `\t` and `\xHH`.

/// A command's words.
pub type Command = Vec<Vec<u8>>;

/// One thing a client does.
#[derive(Debug, Clone)]
pub enum Step {
    /// Sends one command (or several in one write) and reads one reply per command.
    Send {
        client: usize,
        commands: Vec<Command>,
        /// The replies' aggregates are compared in any order.
        unordered: bool,
    },
    /// Sends one command and reads nothing (a blocking command, read later with `Read`).
    SendOnly { client: usize, command: Command },
    /// Sends bytes as they are and reads nothing.
    Raw { client: usize, bytes: Vec<u8> },
    /// Reads one reply the client did not ask for.
    Read { client: usize },
    /// Waits until this many clients are blocked.
    Blocked(usize),
}

/// A step with the line it came from, for messages.
#[derive(Debug, Clone)]
pub struct Line {
    pub number: usize,
    pub text: String,
    pub step: Step,
}

/// Parses a session file; an error names the line.
pub fn parse(source: &str) -> Result<Vec<Line>, String> {
    let mut lines = Vec::new();
    // The open !pipeline block: its first line, its client and the commands so far.
    let mut pipeline: Option<Line> = None;
    for (index, raw) in source.lines().enumerate() {
        let number = index + 1;
        let text = raw.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let (client, rest) = split_client(text).map_err(|e| format!("line {number}: {e}"))?;
        let words = words(rest).map_err(|e| format!("line {number}: {e}"))?;
        let Some(first) = words.first() else {
            return Err(format!("line {number}: a client and no command"));
        };
        if let Some(open) = pipeline.as_mut() {
            if first.as_slice() == b"!end" {
                if let Some(done) = pipeline.take() {
                    lines.push(done);
                }
            } else if first.as_slice() == b"!repeat" {
                let count = repeat_count(&words, number)?;
                if let Step::Send { commands, .. } = &mut open.step {
                    commands.extend(std::iter::repeat_n(words[2..].to_vec(), count));
                }
            } else if first.starts_with(b"!") || text.starts_with('@') {
                return Err(format!(
                    "line {number}: only commands of the pipeline's client inside !pipeline"
                ));
            } else if let Step::Send { commands, .. } = &mut open.step {
                commands.push(words);
            }
            continue;
        }
        let step = match first.as_slice() {
            b"!pipeline" => {
                let step = Step::Send {
                    client,
                    commands: Vec::new(),
                    unordered: false,
                };
                pipeline = Some(Line {
                    number,
                    text: text.to_string(),
                    step,
                });
                continue;
            }
            b"!read" => Step::Read { client },
            b"!unordered" => Step::Send {
                client,
                commands: vec![words[1..].to_vec()],
                unordered: true,
            },
            b"!send" => Step::SendOnly {
                client,
                command: words[1..].to_vec(),
            },
            b"!raw" => Step::Raw {
                client,
                bytes: words[1..].concat(),
            },
            b"!blocked" => {
                let count = words
                    .get(1)
                    .and_then(|w| std::str::from_utf8(w).ok())
                    .and_then(|w| w.parse().ok())
                    .ok_or_else(|| format!("line {number}: !blocked needs a count"))?;
                Step::Blocked(count)
            }
            directive if directive.starts_with(b"!") => {
                return Err(format!("line {number}: unknown directive {text}"));
            }
            _ => Step::Send {
                client,
                commands: vec![words],
                unordered: false,
            },
        };
        lines.push(Line {
            number,
            text: text.to_string(),
            step,
        });
    }
    if let Some(open) = pipeline {
        return Err(format!("line {}: !pipeline without !end", open.number));
    }
    Ok(lines)
}

/// The count of `!repeat N command...`, which needs a command after it.
fn repeat_count(words: &[Vec<u8>], number: usize) -> Result<usize, String> {
    let count = words
        .get(1)
        .and_then(|w| std::str::from_utf8(w).ok())
        .and_then(|w| w.parse::<usize>().ok())
        .filter(|n| (1..=100_000).contains(n));
    match count {
        Some(count) if words.len() > 2 => Ok(count),
        _ => Err(format!(
            "line {number}: !repeat needs a count (1 to 100000) and a command"
        )),
    }
}

/// `@N rest` names client N; anything else is client 1.
fn split_client(text: &str) -> Result<(usize, &str), String> {
    let Some(tagged) = text.strip_prefix('@') else {
        return Ok((1, text));
    };
    let (number, rest) = tagged
        .split_once(char::is_whitespace)
        .unwrap_or((tagged, ""));
    match number.parse::<usize>() {
        Ok(n) if (1..=16).contains(&n) => Ok((n, rest.trim_start())),
        _ => Err(format!("bad client @{number} (1 to 16)")),
    }
}

/// Splits a line into words, with double quotes and escapes.
fn words(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            return Ok(out);
        };
        let mut word = Vec::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("unterminated quote".into()),
                    Some('"') => break,
                    Some('\\') => word.push(escape(&mut chars)?),
                    Some(c) => push_char(&mut word, c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return Err("a closing quote must end the word".into());
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                push_char(&mut word, c);
            }
        }
        out.push(word);
    }
}

fn push_char(word: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    word.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

fn escape(chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<u8, String> {
    match chars.next() {
        Some('n') => Ok(b'\n'),
        Some('r') => Ok(b'\r'),
        Some('t') => Ok(b'\t'),
        Some('\\') => Ok(b'\\'),
        Some('"') => Ok(b'"'),
        Some('x') => {
            let hex: String = chars.by_ref().take(2).collect();
            u8::from_str_radix(&hex, 16).map_err(|_| format!("bad escape \\x{hex}"))
        }
        other => Err(format!("bad escape \\{}", other.unwrap_or(' '))),
    }
}
