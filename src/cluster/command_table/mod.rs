//! The command table: every Redis 7.0 command with its arity, flags, key positions and
//! documentation, and the module commands the storage node implements (RedisBloom's
//! `BF.*`, see `modules.rs`), as a Redis with that module loaded lists them.
//!
//! The data is what redis-server 7.0 itself answers to `COMMAND` and `COMMAND DOCS` (RESP3),
//! captured into `commands-info.resp` and `commands-docs.resp` and read with this crate's own
//! RESP parser on first use. Redis generates its table from JSON files at build time; keeping
//! its answers verbatim is the surest way to route, check arity and answer `COMMAND INFO`
//! exactly as it does. `tests/command_table.rs` compares the data with a live redis-server
//! and can rewrite the files (`SLOTPROXY_CAPTURE_COMMANDS=1`).
//!
//! The proxy routes with [`CommandSpec::key_indexes`]; the storage node checks arity with
//! [`CommandTable::lookup`] and answers `COMMAND` from the stored frames.

mod flags;
mod keys;
mod modules;

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::resp::{parse_static_frame, Frame};

pub use flags::CommandFlags;
pub use keys::{BeginSearch, FindKeys, KeySpec, KeysError};

const INFO_DATA: &[u8] = include_bytes!("commands-info.resp");
const DOCS_DATA: &[u8] = include_bytes!("commands-docs.resp");

/// One command or subcommand.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// Lower case; subcommands are `container|sub`, as Redis names them.
    pub name: String,
    /// Positive: exact argument count (name included). Negative: at least `-arity`.
    pub arity: i64,
    pub flags: CommandFlags,
    pub first_key: i64,
    pub last_key: i64,
    pub key_step: i64,
    pub key_specs: Vec<KeySpec>,
    /// The entry `COMMAND INFO` answers with (see [`CommandSpec::info`]).
    info: InfoEntry,
    /// The module the command belongs to (its `COMMAND DOCS` `module` field); None for
    /// Redis's own commands.
    module: Option<&'static str>,
    pub subcommands: Vec<CommandSpec>,
    /// Dense index among all commands and subcommands (`0..CommandTable::spec_count()`), in
    /// [`CommandTable::all_specs`] order, so per-command arrays (metrics) need no name lookup.
    pub id: usize,
}

impl CommandSpec {
    /// Whether `argc` arguments (the command name included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Finds a subcommand by name, case-insensitively.
    pub fn subcommand(&self, name: &[u8]) -> Option<&CommandSpec> {
        self.subcommands.iter().find(|sub| {
            let short = sub.name.rsplit('|').next().unwrap_or(&sub.name);
            short.as_bytes().eq_ignore_ascii_case(name)
        })
    }

    /// The name used in `wrong number of arguments for '...'` errors.
    pub fn display_name(&self) -> &str {
        &self.name
    }

    /// The entry `COMMAND INFO` answers with.
    ///
    /// Redis's own entries are parsed from the compiled-in data on each call: kept parsed,
    /// the whole table held 0.6 MB of heap for a reply only `COMMAND` and ACL setup read,
    /// and a storage node counts every byte of its own against `maxmemory`.
    pub fn info(&self) -> Frame {
        self.info.frame()
    }

    /// The ACL categories of its `COMMAND INFO` entry, as listed there (`@read`, ...).
    pub fn acl_categories(&self) -> Vec<Bytes> {
        match self.info() {
            Frame::Array(mut fields) if fields.len() > 6 => match fields.swap_remove(6) {
                Frame::Array(names) | Frame::Set(names) => names
                    .into_iter()
                    .filter_map(|name| match name {
                        Frame::Simple(b) | Frame::Bulk(b) | Frame::BigNumber(b) => Some(b),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The module a module command belongs to (its `COMMAND DOCS` `module` field); None
    /// for Redis's own commands.
    pub fn module(&self) -> Option<&str> {
        self.module
    }

    /// The value `COMMAND DOCS` answers with for this command, if Redis documents it.
    ///
    /// Like [`info`](Self::info), Redis's own documentation is kept encoded and parsed on
    /// each call: parsed, it was 0.6 MB of heap that `redis-cli`'s first connection (it
    /// asks for every command's docs, for its hints) left in a node for good.
    pub fn docs(&self) -> Option<Frame> {
        let docs = all_docs();
        match self.name.split_once('|') {
            Some((container, _)) => docs
                .get(container)?
                .frame()
                .map_get("subcommands")?
                .map_get(&self.name)
                .cloned(),
            None => Some(docs.get(&self.name)?.frame()),
        }
    }

    /// True when the command takes key arguments at all.
    pub fn has_keys(&self) -> bool {
        self.key_specs.iter().any(|spec| !spec.is_not_key())
    }
}

/// A `COMMAND INFO` entry or a `COMMAND DOCS` value, as the table keeps it.
#[derive(Debug, Clone)]
enum InfoEntry {
    /// Its RESP3 encoding, a slice of the compiled-in data.
    Encoded(&'static [u8]),
    /// Built in code (module commands, see `modules.rs`).
    Built(Frame),
}

impl InfoEntry {
    fn frame(&self) -> Frame {
        match self {
            InfoEntry::Encoded(bytes) => match parse_static_frame(bytes) {
                Ok(Some((frame, _))) => frame,
                // A slice of the compiled-in data, which parsed whole when it was cut.
                other => panic!("embedded command entry does not parse: {other:?}"),
            },
            InfoEntry::Built(frame) => frame.clone(),
        }
    }
}

/// Why a request names no known command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    UnknownCommand,
    /// The container is known (e.g. `CONFIG`) but not the subcommand.
    UnknownSubcommand,
}

/// All commands, by name.
#[derive(Debug)]
pub struct CommandTable {
    commands: Vec<CommandSpec>,
    by_name: HashMap<String, usize>,
}

impl CommandTable {
    /// The table for Redis 7.0, parsed once per process.
    pub fn get() -> &'static CommandTable {
        static TABLE: OnceLock<CommandTable> = OnceLock::new();
        TABLE.get_or_init(|| CommandTable::parse(INFO_DATA))
    }

    fn parse(info: &'static [u8]) -> CommandTable {
        // The data is compiled in and checked by tests, so failing to parse it is a build
        // defect, not an input error.
        let entries = elements(info);
        assert!(
            !entries.is_empty(),
            "embedded command table is not a RESP array"
        );
        let mut commands: Vec<CommandSpec> = entries
            .into_iter()
            .map(|(entry, encoded)| (entry, Some(encoded)))
            .chain(modules::info_entries().into_iter().map(|e| (e, None)))
            .filter_map(|(entry, encoded)| spec_from_info(entry, encoded))
            .collect();
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        let mut next_id = 0;
        for command in &mut commands {
            command.id = next_id;
            next_id += 1;
            for sub in &mut command.subcommands {
                sub.id = next_id;
                next_id += 1;
            }
        }
        let by_name = commands
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i))
            .collect();
        CommandTable { commands, by_name }
    }

    /// All top-level commands, sorted by name.
    pub fn commands(&self) -> &[CommandSpec] {
        &self.commands
    }

    /// How many commands and subcommands there are (ids are `0..spec_count()`).
    pub fn spec_count(&self) -> usize {
        self.commands.iter().map(|c| 1 + c.subcommands.len()).sum()
    }

    /// Every command and subcommand, in id order.
    pub fn all_specs(&self) -> impl Iterator<Item = &CommandSpec> {
        self.commands
            .iter()
            .flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
    }

    /// A top-level command by name, case-insensitively.
    pub fn command(&self, name: &[u8]) -> Option<&CommandSpec> {
        let mut lower = [0u8; 32];
        let lower = lower.get_mut(..name.len())?;
        for (dst, src) in lower.iter_mut().zip(name) {
            *dst = src.to_ascii_lowercase();
        }
        let name = std::str::from_utf8(lower).ok()?;
        self.by_name.get(name).map(|&i| &self.commands[i])
    }

    /// A command or `container|sub` name as `COMMAND INFO` takes it.
    pub fn by_full_name(&self, name: &[u8]) -> Option<&CommandSpec> {
        match name.iter().position(|&b| b == b'|') {
            Some(bar) => self.command(&name[..bar])?.subcommand(&name[bar + 1..]),
            None => self.command(name),
        }
    }

    /// The spec that governs a request: the command, or its subcommand when it has them.
    pub fn lookup(&self, args: &[Bytes]) -> Result<&CommandSpec, LookupError> {
        let name = args.first().ok_or(LookupError::UnknownCommand)?;
        let command = self.command(name).ok_or(LookupError::UnknownCommand)?;
        if command.subcommands.is_empty() || args.len() < 2 {
            return Ok(command);
        }
        command
            .subcommand(&args[1])
            .ok_or(LookupError::UnknownSubcommand)
    }
}

fn int_at(items: &[Frame], i: usize) -> i64 {
    items.get(i).and_then(Frame::as_integer).unwrap_or(0)
}

fn strings_at(items: &[Frame], i: usize) -> Vec<String> {
    text_list(items.get(i))
}

/// The string elements of an aggregate frame, as text (flags, categories).
fn text_list(frame: Option<&Frame>) -> Vec<String> {
    frame
        .and_then(Frame::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(|f| {
            f.as_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
        })
        .collect()
}

/// Every command's `COMMAND DOCS` value by name (subcommands inside their container's),
/// indexed on first use (see [`CommandSpec::docs`]).
fn all_docs() -> &'static HashMap<String, InfoEntry> {
    static DOCS: OnceLock<HashMap<String, InfoEntry>> = OnceLock::new();
    DOCS.get_or_init(|| {
        // Compiled in and checked by tests: failing to parse it is a build defect.
        let docs = elements(DOCS_DATA);
        assert!(!docs.is_empty(), "embedded command docs are not a RESP map");
        docs.chunks(2)
            .filter_map(|pair| {
                let [(name, _), (_, value)] = pair else {
                    return None;
                };
                let name = String::from_utf8_lossy(name.as_bytes()?).into_owned();
                Some((name, InfoEntry::Encoded(value)))
            })
            .chain(
                modules::docs_entries()
                    .into_iter()
                    .map(|(name, docs)| (name, InfoEntry::Built(docs))),
            )
            .collect()
    })
}

/// The elements of the RESP aggregate that `buf` starts with (a map's keys and values in
/// turn), each parsed and with its own encoding, a slice of `buf`; empty when `buf` does
/// not start with an aggregate.
fn elements(buf: &'static [u8]) -> Vec<(Frame, &'static [u8])> {
    let header_end = match buf.iter().position(|&b| b == b'\n') {
        Some(i) if matches!(buf.first(), Some(b'*' | b'~' | b'%')) => i + 1,
        _ => return Vec::new(),
    };
    let per_item = if buf.first() == Some(&b'%') { 2 } else { 1 };
    let count = per_item
        * std::str::from_utf8(&buf[1..header_end])
            .ok()
            .and_then(|t| t.trim_end().parse::<usize>().ok())
            .unwrap_or(0);
    let mut pos = header_end;
    let mut elements = Vec::with_capacity(count);
    for _ in 0..count {
        let Ok(Some((frame, len))) = parse_static_frame(&buf[pos..]) else {
            break;
        };
        elements.push((frame, &buf[pos..pos + len]));
        pos += len;
    }
    elements
}

/// A spec from its `COMMAND INFO` entry; `encoded`, when given, is the entry's encoding in
/// the compiled-in data.
fn spec_from_info(entry: Frame, encoded: Option<&'static [u8]>) -> Option<CommandSpec> {
    let items = entry.as_array()?;
    let name = String::from_utf8_lossy(items.first()?.as_bytes()?).into_owned();
    let key_specs = items
        .get(8)
        .and_then(Frame::as_array)
        .unwrap_or(&[])
        .iter()
        .map(KeySpec::from_frame)
        .collect();
    // Subcommand entries are the tenth field: from the encoding when there is one, so
    // that each keeps its own slice of it.
    let sub_entries: Vec<(Frame, Option<&'static [u8]>)> = match encoded {
        Some(encoded) => elements(encoded)
            .get(9)
            .map_or(Vec::new(), |(_, subs)| elements(subs))
            .into_iter()
            .map(|(sub, bytes)| (sub, Some(bytes)))
            .collect(),
        None => items
            .get(9)
            .and_then(Frame::as_array)
            .unwrap_or(&[])
            .iter()
            .map(|sub| (sub.clone(), None))
            .collect(),
    };
    let subcommands = sub_entries
        .into_iter()
        .filter_map(|(sub, bytes)| spec_from_info(sub, bytes))
        .collect();
    let mut flags = CommandFlags::from_names(strings_at(items, 2).iter().map(String::as_str));
    if flags::HIDDEN_MAY_REPLICATE.contains(&name.as_str()) {
        flags = flags | CommandFlags::MAY_REPLICATE;
    }
    let info = match encoded {
        Some(bytes) => InfoEntry::Encoded(bytes),
        None => InfoEntry::Built(entry.clone()),
    };
    Some(CommandSpec {
        arity: int_at(items, 1),
        flags,
        first_key: int_at(items, 3),
        last_key: int_at(items, 4),
        key_step: int_at(items, 5),
        key_specs,
        info,
        module: modules::module_of(&name),
        subcommands,
        name,
        id: 0,
    })
}

#[cfg(test)]
mod tests;
