//! Settings: read from redis-server style flags and config files, changed with CONFIG SET.
//!
//! Every setting has one entry in [`params`], which both the config file reader and
//! `CONFIG GET/SET` use, so they cannot disagree about names or value syntax.

pub mod aof;
mod file;
pub mod inert;
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
    /// `protected-mode`: without a password, only loopback clients are served
    /// (`crate::server::protection`).
    pub protected_mode: bool,
    /// `enable-debug-command`: who may run DEBUG (fixed at startup, as in Redis).
    pub enable_debug_command: crate::server::protection::ProtectedAction,
    pub dir: PathBuf,
    /// The RDB file's name inside `dir` (a name, never a path, as Redis requires).
    pub dbfilename: String,
    /// `rdbcompression`: LZF-compress long strings in the RDB file.
    pub rdbcompression: bool,
    /// `rdbchecksum`: write the RDB file's CRC-64 trailer and check it on load.
    pub rdbchecksum: bool,
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
    /// Microseconds the worker watches the sockets before it sleeps (`server::busy_poll`).
    pub busy_poll_usecs: u64,
    /// `busy-reply-threshold` (alias `lua-time-limit`): milliseconds a script runs before
    /// other clients are answered BUSY.
    pub busy_reply_threshold_ms: u64,
    /// Snapshot points (`save`), as pairs of seconds and changes. Kept and shown for tools
    /// that read them; nothing acts on them yet (only SAVE writes the RDB file).
    pub save: Vec<(i64, i64)>,
    /// `appendonly`: log every write to the AOF (`crate::persistence::aof`); at start the
    /// AOF is loaded instead of the RDB file.
    pub appendonly: bool,
    /// The AOF's other settings.
    pub aof: aof::AofSettings,
    /// The config file the node was started with, if any (INFO `config_file`).
    pub config_file: Option<PathBuf>,
    /// `notify-keyspace-events` as flags (`crate::pubsub::notify`).
    pub notify_keyspace_events: u32,
    /// `client-output-buffer-limit`; the `pubsub` class is enforced.
    pub client_output_buffer_limit: crate::pubsub::OutputBufferLimits,
    pub cluster_enabled: bool,
    /// The nodes file, relative to `dir`.
    pub cluster_config_file: String,
    /// The cluster bus port; 0 means `port + 10000`.
    pub cluster_port: u16,
    /// Milliseconds without an answer after which a node is suspected to be down.
    pub cluster_node_timeout: u64,
    pub cluster_require_full_coverage: bool,
    /// Sets of integers stay `intset` up to this many members.
    pub set_max_intset_entries: usize,
    /// Sorted sets stay `listpack` up to this many members, none longer than the value.
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// Hashes with more pairs than this are `hashtable`-encoded.
    pub hash_max_listpack_entries: usize,
    /// Hashes with a longer field or value than this are `hashtable`-encoded.
    pub hash_max_listpack_value: usize,
    /// Quicklist fill factor: negative for a node size limit, positive for an entry count.
    /// Only the node layout of DUMP payloads depends on it.
    pub list_max_listpack_size: i64,
    /// `maxmemory-policy`: with an `*-lfu` policy keys keep access frequencies instead of
    /// LRU clocks. Nothing is evicted.
    pub maxmemory_policy: String,
    pub lfu_log_factor: u64,
    /// Minutes per step of frequency decay.
    pub lfu_decay_time: u64,
    /// Per-command latency histograms (INFO latencystats) and the percentiles shown.
    pub latency_tracking: bool,
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// Values given to the accepted no-op settings of [`inert`], as CONFIG GET shows them
    /// (a setting never set shows its Redis default).
    pub inert: std::collections::BTreeMap<&'static str, String>,
}

impl Config {
    /// The sorted-set encoding thresholds.
    pub fn zset_limits(&self) -> crate::types::zset::ZSetLimits {
        crate::types::zset::ZSetLimits {
            max_entries: self.zset_max_listpack_entries,
            max_value: self.zset_max_listpack_value,
        }
    }

    /// The LFU settings while an LFU `maxmemory-policy` is selected.
    pub fn lfu(&self) -> Option<crate::keyspace::lfu::Lfu> {
        self.maxmemory_policy
            .ends_with("-lfu")
            .then_some(crate::keyspace::lfu::Lfu {
                log_factor: self.lfu_log_factor,
                decay_time: self.lfu_decay_time,
            })
    }

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
            protected_mode: true,
            enable_debug_command: crate::server::protection::ProtectedAction::No,
            dir: PathBuf::from("."),
            dbfilename: "dump.rdb".into(),
            rdbcompression: true,
            rdbchecksum: true,
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
            busy_poll_usecs: crate::server::busy_poll::DEFAULT_BUDGET_USECS,
            busy_reply_threshold_ms: 5000,
            save: Vec::new(),
            appendonly: false,
            aof: aof::AofSettings::default(),
            config_file: None,
            notify_keyspace_events: 0,
            client_output_buffer_limit: crate::pubsub::OutputBufferLimits::default(),
            cluster_enabled: false,
            cluster_config_file: "nodes.conf".into(),
            cluster_port: 0,
            cluster_node_timeout: 15000,
            cluster_require_full_coverage: true,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            list_max_listpack_size: -2,
            maxmemory_policy: "noeviction".into(),
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            latency_tracking: true,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            inert: std::collections::BTreeMap::new(),
        }
    }
}
