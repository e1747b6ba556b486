//! The dispatch table: every command family's handlers under their names, looked up by
//! the name a client sends (case-insensitively, renames applied), with the one-entry
//! memory of the last name a client used.

use std::cell::Cell;

use slotproxy::cluster::{CommandSpec, CommandTable};

use super::Handler;

/// Every command family's list. A new family adds one line here.
const FAMILIES: &[&[(&str, Handler)]] = &[
    super::acl::COMMANDS,
    super::aof::COMMANDS,
    super::bitfield::COMMANDS,
    super::bitmap::COMMANDS,
    super::bloom::COMMANDS,
    super::client::COMMANDS,
    super::command::COMMANDS,
    super::config::COMMANDS,
    super::connection::COMMANDS,
    super::debug::COMMANDS,
    super::dump::COMMANDS,
    super::expire::COMMANDS,
    super::failover::COMMANDS,
    super::function::COMMANDS,
    super::geo::COMMANDS,
    super::hash::COMMANDS,
    super::hll::COMMANDS,
    super::info::COMMANDS,
    super::keys::COMMANDS,
    super::latency::COMMANDS,
    super::list::COMMANDS,
    super::lolwut::COMMANDS,
    super::memory::COMMANDS,
    super::monitor::COMMANDS,
    super::object::COMMANDS,
    super::pubsub::COMMANDS,
    super::replconf::COMMANDS,
    super::role::COMMANDS,
    super::replicaof::COMMANDS,
    super::scan::COMMANDS,
    super::scripting::COMMANDS,
    super::save::COMMANDS,
    super::server::COMMANDS,
    super::shutdown::COMMANDS,
    super::set::COMMANDS,
    super::slowlog::COMMANDS,
    super::sort::COMMANDS,
    super::stream::COMMANDS,
    super::strings::COMMANDS,
    super::sync::COMMANDS,
    super::transaction::COMMANDS,
    super::wait::COMMANDS,
    crate::cluster::commands::COMMANDS,
    super::zset::COMMANDS,
];

/// An implemented command: its table entry and handler.
pub struct Command {
    pub spec: &'static CommandSpec,
    pub handler: Handler,
}

/// Maps lower-case command names to implementations.
pub struct Dispatch {
    /// Index into `commands` by name.
    names: hashbrown::HashMap<Vec<u8>, usize>,
    commands: Vec<Command>,
}

impl Default for Dispatch {
    fn default() -> Self {
        Dispatch::new()
    }
}

/// Longest command name looked up without allocating.
const SHORT_NAME: usize = 64;

/// Longest command name a client's [`LastLookup`] remembers.
const REMEMBERED_NAME: usize = 22;

/// The command a client named last, spelled as it sent it: clients mostly repeat one
/// command, and comparing a few bytes costs less than lower-casing and hashing the name.
#[derive(Clone, Copy, Default)]
pub struct LastLookup {
    name: [u8; REMEMBERED_NAME],
    /// 0: nothing remembered.
    len: u8,
    index: u32,
}

impl Dispatch {
    /// The commands under the names `rename-command` gave them (`config::Config::
    /// renamed_commands`): a renamed command answers only to its new name, a command
    /// renamed to "" to none, as in Redis. Renaming a command the node lacks changes nothing:
    /// it stays unknown under either name.
    pub fn with_renames(renames: &[(String, String, String)]) -> Dispatch {
        let mut dispatch = Dispatch::new();
        for (from, _, to) in renames {
            if let Some(index) = dispatch.names.remove(from.as_bytes()) {
                if !to.is_empty() {
                    dispatch.names.insert(to.as_bytes().to_vec(), index);
                }
            }
        }
        dispatch
    }

    pub fn new() -> Dispatch {
        let table = CommandTable::get();
        let mut names = hashbrown::HashMap::new();
        let mut commands = Vec::new();
        for family in FAMILIES {
            for &(name, handler) in family.iter() {
                // A family naming a command Redis 7.0 does not have is a programming error.
                let spec = table
                    .command(name.as_bytes())
                    .unwrap_or_else(|| panic!("'{name}' is not in the command table"));
                names.insert(name.as_bytes().to_vec(), commands.len());
                commands.push(Command { spec, handler });
            }
        }
        Dispatch { names, commands }
    }

    pub fn get(&self, name: &[u8]) -> Option<&Command> {
        self.index_of(name)
            .and_then(|index| self.commands.get(index))
    }

    /// [`get`](Self::get) through the client's [`LastLookup`], which it then updates.
    pub fn get_remembered(&self, name: &[u8], last: &Cell<LastLookup>) -> Option<&Command> {
        let remembered = last.get();
        let len = usize::from(remembered.len);
        if len == name.len() && len > 0 && remembered.name[..len] == *name {
            return self.commands.get(remembered.index as usize);
        }
        let index = self.index_of(name)?;
        if let (true, Ok(remembered_index)) = (name.len() <= REMEMBERED_NAME, u32::try_from(index))
        {
            let mut next = LastLookup {
                len: name.len() as u8,
                index: remembered_index,
                ..LastLookup::default()
            };
            next.name[..name.len()].copy_from_slice(name);
            last.set(next);
        }
        self.commands.get(index)
    }

    fn index_of(&self, name: &[u8]) -> Option<usize> {
        let mut lower = [0u8; SHORT_NAME];
        let Some(lower) = lower.get_mut(..name.len()) else {
            // Only a renamed command can be this long.
            return self.names.get(&name.to_ascii_lowercase()).copied();
        };
        for (dst, src) in lower.iter_mut().zip(name) {
            *dst = src.to_ascii_lowercase();
        }
        self.names.get(&lower[..]).copied()
    }

    /// Whether the node implements a command (COMMAND lists only those).
    pub fn implements(&self, name: &str) -> bool {
        self.names.contains_key(name.as_bytes())
    }
}
