//! Cluster knowledge shared by the proxy and the storage node: hash slots and the command
//! table that says where each command's keys are.

pub mod command_table;
pub mod nodes;
pub mod ports;
pub mod slot;

pub use command_table::{CommandFlags, CommandSpec, CommandTable, LookupError};
pub use slot::{hash_part, key_slot, SLOT_COUNT};
