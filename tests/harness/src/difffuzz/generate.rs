//! Builds commands from the command table: the argument tree of each command's docs
//! (`COMMAND DOCS`: tokens, optional and repeated parts, one-of choices, argument types)
//! decides the shape, the [`alphabet`](super::alphabet) fills in hostile values, and a few
//! random mutations (an argument dropped, added or replaced) step outside the grammar.

use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};
use slotproxy::resp::Frame;

use super::alphabet;
use super::policy;
use super::prepare::KEYS;
use super::rng::Rng;

/// One command: its table name and its arguments (the command words included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    /// The table name of the command an ARGV-driven script body runs, if any.
    pub inner: Option<String>,
    pub args: Vec<Vec<u8>>,
}

impl Step {
    /// The step as readable text (long arguments abbreviated), for reports.
    pub fn show(&self) -> String {
        self.args
            .iter()
            .map(|a| show_arg(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// An argument as text: quoted, escaped, and long ones cut down to their length.
pub fn show_arg(arg: &[u8]) -> String {
    if arg.len() > 64 {
        return format!("<{} bytes>", arg.len());
    }
    format!("{:?}", String::from_utf8_lossy(arg))
}

/// How deep the ARGV-driven scripts nest generated commands (a script's command may itself
/// be EVAL, which Redis refuses from a script, but the generator stops here anyway).
const MAX_NESTING: usize = 2;

/// Generates commands from a seed.
pub struct Generator {
    rng: Rng,
    pool: Vec<&'static CommandSpec>,
    scripts: Vec<&'static str>,
    libraries: Vec<&'static str>,
}

impl Generator {
    /// A generator over every command in the table that `policy` does not exclude, and
    /// every script of the alphabet but those in `skip_scripts`.
    pub fn new(seed: u64, through_proxy: bool, skip_scripts: &[String]) -> Generator {
        let pool = CommandTable::get()
            .all_specs()
            .filter(|spec| policy::exclusion(&spec.name, through_proxy).is_none())
            .collect();
        let keep = |(name, body): &(&str, &'static str)| {
            (!skip_scripts.iter().any(|s| s == name)).then_some(*body)
        };
        Generator {
            rng: Rng::new(seed),
            pool,
            scripts: alphabet::SCRIPTS.iter().filter_map(keep).collect(),
            libraries: alphabet::LIBRARIES.iter().filter_map(keep).collect(),
        }
    }

    /// How many commands and subcommands may be drawn.
    pub fn pool_size(&self) -> usize {
        self.pool.len()
    }

    /// A sequence of `len` commands.
    pub fn case(&mut self, len: usize) -> Vec<Step> {
        (0..len).map(|_| self.step(0)).collect()
    }

    fn step(&mut self, nesting: usize) -> Step {
        let spec = *self.rng.pick(&self.pool);
        let mut args = command_words(spec);
        let mut inner = None;
        match spec.name.as_str() {
            "eval" | "eval_ro" | "evalsha" | "evalsha_ro" | "fcall" | "fcall_ro" => {
                inner = self.script_call(spec, nesting, &mut args)
            }
            _ => {
                if let Some(arguments) = doc_arguments(spec) {
                    for argument in &arguments {
                        self.argument(spec, argument, &mut args);
                    }
                } else {
                    let extra = self.rng.below(3);
                    for _ in 0..extra {
                        args.push(self.any_value());
                    }
                }
            }
        }
        // A script's generated command was already mutated (or kept tame) on its own.
        if inner.is_none() {
            self.mutate(spec, &mut args);
        }
        Step {
            name: spec.name.clone(),
            inner,
            args,
        }
    }

    /// EVAL-like commands: a body (or a sha / function name), a numkeys that is usually
    /// right, keys, and arguments that are often a whole generated command for the
    /// ARGV-driven bodies to run.
    /// Returns the name of the generated command passed as arguments, if there is one.
    fn script_call(
        &mut self,
        spec: &CommandSpec,
        nesting: usize,
        args: &mut Vec<Vec<u8>>,
    ) -> Option<String> {
        let body: Vec<u8> = match spec.name.as_str() {
            "eval" | "eval_ro" => self.rng.pick(&self.scripts).as_bytes().to_vec(),
            "evalsha" | "evalsha_ro" => self.sha(),
            _ => self.rng.pick(&["f", "", "nosuch"]).as_bytes().to_vec(),
        };
        args.push(body);
        let keys: Vec<Vec<u8>> = (0..self.rng.below(3)).map(|_| self.key()).collect();
        let numkeys = if self.rng.chance(80) {
            keys.len().to_string().into_bytes()
        } else {
            self.rng.pick(alphabet::INTEGERS).as_bytes().to_vec()
        };
        args.push(numkeys);
        args.extend(keys);
        if nesting < MAX_NESTING && self.rng.chance(70) {
            let inner = self.step(nesting + 1);
            args.extend(inner.args);
            return Some(inner.name);
        }
        for _ in 0..self.rng.below(3) {
            let value = self.any_value();
            args.push(value);
        }
        None
    }

    fn sha(&mut self) -> Vec<u8> {
        // The sha1 of `return 1` (loaded by nobody unless SCRIPT LOAD ran it) and shapes
        // that are not a sha at all.
        let shas = [
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
            "ffffffffffffffffffffffffffffffffffffffff",
            "",
            "abc",
        ];
        self.rng.pick(&shas).as_bytes().to_vec()
    }

    /// One docs argument (and its sub-arguments), appended to `out`.
    fn argument(&mut self, spec: &CommandSpec, argument: &Frame, out: &mut Vec<Vec<u8>>) {
        let flags = text_list(argument.map_get("flags"));
        let has = |f: &str| flags.iter().any(|x| x == f);
        if has("optional") && self.rng.chance(50) {
            return;
        }
        let repeats = if has("multiple") {
            1 + self.rng.below(3)
        } else {
            1
        };
        let token = argument.map_get("token").and_then(Frame::as_bytes);
        let kind = text(argument.map_get("type"));
        let name = text(argument.map_get("name"));
        for repeat in 0..repeats {
            if let Some(token) = token {
                if repeat == 0 || has("multiple_token") {
                    out.push(token.to_vec());
                }
            }
            match kind.as_str() {
                "pure-token" => {}
                "oneof" => {
                    let children = sub_arguments(argument);
                    if !children.is_empty() {
                        let child = self.rng.pick(children);
                        self.argument(spec, child, out);
                    }
                }
                "block" => {
                    for child in sub_arguments(argument) {
                        self.argument(spec, child, out);
                    }
                }
                "key" => out.push(self.key()),
                _ => out.push(self.value(spec, &kind, &name)),
            }
        }
    }

    /// A value for an argument of type `kind` named `name` of command `spec`.
    fn value(&mut self, spec: &CommandSpec, kind: &str, name: &str) -> Vec<u8> {
        let command = spec.name.as_str();
        let blocking = spec.flags.contains(CommandFlags::BLOCKING)
            || matches!(command, "xread" | "xreadgroup" | "wait");
        let list: &[&str] = match (kind, name) {
            _ if blocking && command == "wait" && name == "timeout" => alphabet::BLOCK_MILLISECONDS,
            _ if blocking && name == "timeout" => alphabet::BLOCK_SECONDS,
            _ if blocking && name == "milliseconds" => alphabet::BLOCK_MILLISECONDS,
            _ if name == "count"
                && matches!(command, "srandmember" | "zrandmember" | "hrandfield") =>
            {
                alphabet::RANDOM_COUNTS
            }
            ("unix-time", _) => alphabet::TIMES,
            (_, "seconds" | "milliseconds" | "ttl" | "unix-time-seconds")
            | (_, "unix-time-milliseconds") => alphabet::TIMES,
            ("pattern", _) => alphabet::PATTERNS,
            ("integer", _) => alphabet::INTEGERS,
            ("double", _) => alphabet::DOUBLES,
            (_, "function-code") => return self.rng.pick(&self.libraries).as_bytes().to_vec(),
            (_, "script") => return self.rng.pick(&self.scripts).as_bytes().to_vec(),
            (_, "sha1") => return self.sha(),
            _ if is_stream_command(spec) && self.rng.chance(70) => alphabet::STREAM_IDS,
            _ => return self.any_string(),
        };
        self.rng.pick(list).as_bytes().to_vec()
    }

    fn key(&mut self) -> Vec<u8> {
        self.rng.pick(KEYS).as_bytes().to_vec()
    }

    fn any_string(&mut self) -> Vec<u8> {
        let strings = alphabet::strings();
        // The 1 MB string is the last element; keep it rarer than the others so that cases
        // stay cheap (it is still drawn about once every few cases).
        let pick = *self.rng.pick(&strings[..strings.len() - 1]);
        if self.rng.chance(3) {
            alphabet::megabyte().to_vec()
        } else {
            pick.to_vec()
        }
    }

    /// A value of any kind (for commands without docs and for mutations).
    fn any_value(&mut self) -> Vec<u8> {
        let lists: [&[&str]; 5] = [
            alphabet::INTEGERS,
            alphabet::DOUBLES,
            alphabet::STREAM_IDS,
            alphabet::PATTERNS,
            KEYS,
        ];
        if self.rng.chance(30) {
            return self.any_string();
        }
        let list = *self.rng.pick(&lists);
        self.rng.pick(list).as_bytes().to_vec()
    }

    /// Steps outside the grammar now and then: drop, add or replace an argument after the
    /// command words.
    fn mutate(&mut self, spec: &CommandSpec, args: &mut Vec<Vec<u8>>) {
        if is_tame_only(spec) {
            return;
        }
        let fixed = command_words(spec).len();
        let roll = self.rng.below(100);
        if roll < 8 && args.len() > fixed {
            let at = fixed + self.rng.below(args.len() - fixed);
            args.remove(at);
        } else if roll < 16 {
            let value = self.mutation_value();
            args.push(value);
        } else if roll < 22 && args.len() > fixed {
            let at = fixed + self.rng.below(args.len() - fixed);
            args[at] = self.mutation_value();
        }
    }

    /// Like [`any_value`](Self::any_value) but never a small positive number: dropped into
    /// an expiry argument (`PEXPIRE k 1`), it would make a key expire between the two
    /// servers' steps.
    fn mutation_value(&mut self) -> Vec<u8> {
        for _ in 0..100 {
            let value = self.any_value();
            let small = std::str::from_utf8(&value)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|n| (1..=10_000).contains(&n));
            if !small {
                return value;
            }
        }
        b"abc".to_vec()
    }
}

/// The words naming a command: `GET`, or `OBJECT ENCODING` for a subcommand.
fn command_words(spec: &CommandSpec) -> Vec<Vec<u8>> {
    spec.name
        .split('|')
        .map(|w| w.to_ascii_uppercase().into_bytes())
        .collect()
}

/// Commands whose arguments must stay inside the tame lists of the alphabet, so they are
/// never mutated: blocking commands (a 0 timeout blocks forever) and the random-member
/// commands (a huge negative count exhausts memory).
fn is_tame_only(spec: &CommandSpec) -> bool {
    spec.flags.contains(CommandFlags::BLOCKING)
        || matches!(
            spec.name.as_str(),
            "xread" | "xreadgroup" | "wait" | "srandmember" | "zrandmember" | "hrandfield"
        )
}

fn is_stream_command(spec: &CommandSpec) -> bool {
    spec.name.starts_with('x')
}

/// The docs argument list of a command, if its docs have one.
fn doc_arguments(spec: &CommandSpec) -> Option<Vec<Frame>> {
    Some(spec.docs()?.map_get("arguments")?.as_array()?.to_vec())
}

fn sub_arguments(argument: &Frame) -> &[Frame] {
    argument
        .map_get("arguments")
        .and_then(Frame::as_array)
        .unwrap_or(&[])
}

fn text(frame: Option<&Frame>) -> String {
    frame
        .and_then(Frame::as_bytes)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

fn text_list(frame: Option<&Frame>) -> Vec<String> {
    frame
        .and_then(Frame::as_array)
        .unwrap_or(&[])
        .iter()
        .map(|f| text(Some(f)))
        .collect()
}
