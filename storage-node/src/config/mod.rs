//! Settings: read from redis-server style flags and config files, changed with CONFIG SET.
//!
//! Every setting has one entry in [`params`], which both the config file reader and
//! `CONFIG GET/SET` use, so they cannot disagree about names or value syntax.

mod file;
pub mod params;
mod rewrite;

pub use file::{apply_file, parse_args, ConfigError};
pub use rewrite::rewrite;

use std::path::PathBuf;

/// The node's settings. Only settings the node honours exist here.
#[derive(Clone, Debug)]
pub struct Config {
    pub port: u16,
    pub bind: Vec<String>,
    pub requirepass: Option<Vec<u8>>,
    pub dir: PathBuf,
    pub databases: usize,
    pub maxclients: usize,
    pub proto_max_bulk_len: usize,
    pub client_query_buffer_limit: usize,
    pub hz: u32,
    /// Seconds of idleness after which a client is closed (0: never).
    pub timeout: u64,
    pub active_expire_enabled: bool,
    pub logfile: String,
    pub loglevel: String,
    pub io_threads: usize,
    /// Snapshot points (`save`), as pairs of seconds and changes. Kept and shown for tools
    /// that read them; the node has no persistence yet, so nothing is saved.
    pub save: Vec<(i64, i64)>,
    /// Kept and shown like `save`; INFO reports `aof_enabled:0` because no AOF is written.
    pub appendonly: bool,
    /// The config file the node was started with, if any (INFO `config_file`).
    pub config_file: Option<PathBuf>,
    /// Hashes with more pairs than this are `hashtable`-encoded.
    pub hash_max_listpack_entries: usize,
    /// Hashes with a longer field or value than this are `hashtable`-encoded.
    pub hash_max_listpack_value: usize,
    /// Quicklist fill factor: negative for a node size limit, positive for an entry count.
    /// Only the node layout of DUMP payloads depends on it.
    pub list_max_listpack_size: i64,
}

impl Config {
    /// The hash encoding thresholds.
    pub fn hash_limits(&self) -> crate::types::HashLimits {
        crate::types::HashLimits {
            max_listpack_entries: self.hash_max_listpack_entries,
            max_listpack_value: self.hash_max_listpack_value,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            bind: vec!["127.0.0.1".into()],
            requirepass: None,
            dir: PathBuf::from("."),
            databases: 16,
            maxclients: 10000,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            hz: 10,
            timeout: 0,
            active_expire_enabled: true,
            logfile: String::new(),
            loglevel: "notice".into(),
            io_threads: 1,
            save: Vec::new(),
            appendonly: false,
            config_file: None,
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            list_max_listpack_size: -2,
        }
    }
}
