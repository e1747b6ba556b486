//! Settings: read from redis-server style flags and config files, changed with CONFIG SET.
//!
//! Every setting has one entry in [`params`], which both the config file reader and
//! `CONFIG GET/SET` use, so they cannot disagree about names or value syntax.

pub mod acl;
pub mod aof;
mod checks;
pub mod cluster_ha;
mod file;
pub mod inert;
pub mod memory;
pub mod params;
pub mod repl;
pub mod replica;
mod rewrite;
mod values;

pub use file::{apply_file, parse_args, stdin_config, ConfigError};
pub use rewrite::rewrite;

use std::path::PathBuf;

/// Redis 7.0's `save 3600 1 300 100 60 10000`.
pub const DEFAULT_SAVE_POINTS: &[(i64, i64)] = &[(3600, 1), (300, 100), (60, 10000)];

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
    /// `stop-writes-on-bgsave-error`: refuse writes (MISCONF) while the last background
    /// save failed and save points are configured.
    pub stop_writes_on_bgsave_error: bool,
    /// `lazyfree-lazy-expire`: an expired key is logged (AOF, replicas) as UNLINK, not DEL,
    /// as Redis 7.0's `propagateDeletion` does; the node frees values at once either way.
    pub lazyfree_lazy_expire: bool,
    pub databases: usize,
    pub maxclients: usize,
    pub proto_max_bulk_len: usize,
    pub client_query_buffer_limit: usize,
    pub hz: u32,
    /// Seconds of idleness after which a client is closed (0: never).
    pub timeout: u64,
    /// `tcp-backlog`: the listening sockets' backlog.
    pub tcp_backlog: i64,
    /// `tcp-keepalive`: seconds of idleness before TCP keepalive probes (0: none).
    pub tcp_keepalive: u64,
    pub active_expire_enabled: bool,
    /// `logfile`: empty for standard output (nowhere once daemonized), else a file appended to.
    pub logfile: String,
    pub loglevel: String,
    /// `daemonize`: run in the background (`crate::process::daemon`).
    pub daemonize: bool,
    /// `pidfile`: where the pid is written at start and removed at exit (empty: none,
    /// unless daemonized).
    pub pidfile: String,
    /// `supervised`: no, upstart, systemd or auto (`crate::process::supervised`).
    pub supervised: String,
    pub io_threads: usize,
    /// Microseconds the worker watches the sockets before it sleeps (`server::busy_poll`).
    pub busy_poll_usecs: u64,
    /// `busy-reply-threshold` (alias `lua-time-limit`): milliseconds a script runs before
    /// other clients are answered BUSY.
    pub busy_reply_threshold_ms: u64,
    /// Snapshot points (`save`), as pairs of seconds and changes: a BGSAVE starts when
    /// that many changes are older than that many seconds (`persistence::save_points`).
    pub save: Vec<(i64, i64)>,
    /// A `save` line was read from the config file or command line: the first replaces
    /// the defaults, the later ones add to it, as in Redis (`setConfigSaveOption`).
    pub save_lines_read: bool,
    /// `appendonly`: log every write to the AOF (`crate::persistence::aof`); at start the
    /// AOF is loaded instead of the RDB file.
    pub appendonly: bool,
    /// The AOF's other settings.
    pub aof: aof::AofSettings,
    /// The master side's replication settings.
    pub repl: repl::ReplSettings,
    /// Users, the ACL file and log (`crate::acl`).
    pub acl: acl::AclSettings,
    /// The replica side's settings (`crate::replication::replica`).
    pub replica: replica::ReplicaSettings,
    /// The config file the node was started with, if any (INFO `config_file`).
    pub config_file: Option<PathBuf>,
    /// `notify-keyspace-events` as flags (`crate::pubsub::notify`).
    pub notify_keyspace_events: u32,
    /// `client-output-buffer-limit`; the `pubsub` and `replica` classes are enforced.
    pub client_output_buffer_limit: crate::pubsub::OutputBufferLimits,
    pub cluster_enabled: bool,
    /// The nodes file, relative to `dir`.
    pub cluster_config_file: String,
    /// The cluster bus port; 0 means `port + 10000`.
    pub cluster_port: u16,
    /// Milliseconds without an answer after which a node is suspected to be down.
    pub cluster_node_timeout: u64,
    pub cluster_require_full_coverage: bool,
    /// Replicas, failover and reads while down (`cluster-replica-*`, `cluster-allow-*`).
    pub cluster_ha: cluster_ha::ClusterHaSettings,
    /// Sets of integers stay `intset` up to this many members.
    pub set_max_intset_entries: usize,
    /// Sorted sets stay `listpack` up to this many members, none longer than the value.
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// Hashes with more pairs than this are `hashtable`-encoded.
    pub hash_max_listpack_entries: usize,
    /// `stream-node-max-bytes`: the largest listpack a stream node grows to (0: no limit).
    pub stream_node_max_bytes: usize,
    /// `stream-node-max-entries`: the most entries in a stream node (0: no limit).
    pub stream_node_max_entries: u64,
    /// Hashes with a longer field or value than this are `hashtable`-encoded.
    pub hash_max_listpack_value: usize,
    /// A sparse HyperLogLog turns dense when it would grow past this many bytes.
    pub hll_sparse_max_bytes: usize,
    /// Quicklist fill factor: negative for a node size limit, positive for an entry count.
    /// Only the node layout of DUMP payloads depends on it.
    pub list_max_listpack_size: i64,
    /// `maxmemory` and eviction (`crate::keyspace::evict`).
    pub memory: memory::MemorySettings,
    /// Per-command latency histograms (INFO latencystats) and the percentiles shown.
    pub latency_tracking: bool,
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// SLOWLOG: commands that take at least this many microseconds are logged (negative:
    /// none), and the log keeps this many.
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: u64,
    /// CLIENT TRACKING: keys the invalidation table holds at most (0: no limit).
    pub tracking_table_max_keys: u64,
    /// LATENCY: events that take at least this many milliseconds are sampled (0: none).
    pub latency_monitor_threshold: u64,
    /// `rename-command` lines in order, as (name renamed, original command, new name; empty
    /// for a command removed). `cmd::Dispatch` applies them; CONFIG GET does not show them,
    /// as in Redis.
    pub renamed_commands: Vec<(String, String, String)>,
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
        self.memory
            .policy
            .is_lfu()
            .then_some(crate::keyspace::lfu::Lfu {
                log_factor: self.memory.lfu_log_factor,
                decay_time: self.memory.lfu_decay_time,
            })
    }

    /// `loglevel` as the log's level.
    pub fn log_level(&self) -> crate::log::Level {
        crate::log::Level::from_name(&self.loglevel).unwrap_or(crate::log::Level::Notice)
    }

    /// `rename-command FROM TO`, checked as Redis checks it: FROM must name a command as the
    /// earlier lines left the names, TO (unless empty, which removes FROM) must not.
    pub fn rename_command(&mut self, from: &str, to: &str) -> Result<(), String> {
        let (from, to) = (from.to_ascii_lowercase(), to.to_ascii_lowercase());
        let original = self
            .command_named(&from)
            .ok_or("No such command in rename-command")?;
        if !to.is_empty() && to != from && self.command_named(&to).is_some() {
            return Err("Target command name already exists".into());
        }
        self.renamed_commands.push((from, original, to));
        Ok(())
    }

    /// The original command a (lower-case) name calls after the `rename-command` lines.
    fn command_named(&self, name: &str) -> Option<String> {
        let table = slotproxy::cluster::CommandTable::get();
        let mut original = table.command(name.as_bytes()).map(|_| name.to_string());
        for (from, renamed, to) in &self.renamed_commands {
            if from == name {
                original = None;
            }
            if to == name {
                original = Some(renamed.clone());
            }
        }
        original
    }

    /// The stream node limits.
    pub fn stream_limits(&self) -> crate::types::stream::StreamLimits {
        crate::types::stream::StreamLimits {
            max_bytes: self.stream_node_max_bytes,
            max_entries: self.stream_node_max_entries,
        }
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
            stop_writes_on_bgsave_error: true,
            lazyfree_lazy_expire: false,
            databases: 16,
            maxclients: 10000,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            hz: 10,
            timeout: 0,
            tcp_backlog: 511,
            tcp_keepalive: 300,
            active_expire_enabled: true,
            logfile: String::new(),
            loglevel: "notice".into(),
            daemonize: false,
            pidfile: String::new(),
            supervised: "no".into(),
            io_threads: 1,
            busy_poll_usecs: crate::server::busy_poll::DEFAULT_BUDGET_USECS,
            busy_reply_threshold_ms: 5000,
            save: DEFAULT_SAVE_POINTS.to_vec(),
            save_lines_read: false,
            appendonly: false,
            aof: aof::AofSettings::default(),
            repl: repl::ReplSettings::default(),
            acl: acl::AclSettings::redis_defaults(),
            replica: replica::ReplicaSettings::default(),
            config_file: None,
            notify_keyspace_events: 0,
            client_output_buffer_limit: crate::pubsub::OutputBufferLimits::default(),
            cluster_enabled: false,
            cluster_config_file: "nodes.conf".into(),
            cluster_port: 0,
            cluster_node_timeout: 15000,
            cluster_require_full_coverage: true,
            cluster_ha: cluster_ha::ClusterHaSettings::default(),
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hash_max_listpack_entries: 512,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            hash_max_listpack_value: 64,
            list_max_listpack_size: -2,
            hll_sparse_max_bytes: 3000,
            memory: memory::MemorySettings::default(),
            latency_tracking: true,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            tracking_table_max_keys: 1_000_000,
            latency_monitor_threshold: 0,
            renamed_commands: Vec::new(),
            inert: std::collections::BTreeMap::new(),
        }
    }
}
