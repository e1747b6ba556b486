//! The proxy's YAML configuration, with the fields that may change while it runs.
//!
//! ```yaml
//! listen: 127.0.0.1:6380
//! seeds: [127.0.0.1:7000, 127.0.0.1:7001]
//! timeouts: { connect_ms: 1000, operation_ms: 5000, idle_secs: 0 }
//! limits: { max_clients: 10000, max_request_bytes: 536870912,
//!           client_output_buffer_bytes: 268435456, dedicated_connections: 512,
//!           max_reply_bytes: 536870912, max_reply_elements: 134217728 }
//! backend: { connections_per_node: 1, refresh_interval_ms: 5000 }
//! deny_commands: [KEYS, FLUSHALL, FLUSHDB]
//! users: [{ name: default, password: secret, admin: true, read_from: replica }]
//! read_from: master   # or prefer-replica, replica: where read-only commands go
//! workers: 0   # worker threads; 0 = half the cores (at least 1)
//! admin: { listen: 127.0.0.1:9121, token: change-me, migrate_batch: 100,
//!          migrate_timeout_ms: 10000, poll_interval_ms: 5000, top_slots: 20,
//!          slot_keys_every: 6 }
//! split_bloom: [{ prefix: "bf:users", parts: 1024 }]   # see src/proxy/split_bloom
//! ```
//!
//! Unknown fields are errors, and every error names the field and its line. `listen`, `seeds`
//! and `backend.connections_per_node` take effect at start; everything else is reloaded on
//! SIGHUP.

use std::path::Path;

use serde::Deserialize;

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProxyConfig {
    /// Address clients connect to.
    pub listen: String,
    /// Cluster nodes to learn the topology from (any subset of the cluster).
    pub seeds: Vec<String>,
    pub timeouts: Timeouts,
    pub limits: Limits,
    pub backend: Backend,
    /// Commands refused by the proxy (case-insensitive), e.g. KEYS, FLUSHALL.
    pub deny_commands: Vec<String>,
    /// The proxy's own users. Empty: no authentication.
    pub users: Vec<User>,
    /// Worker threads serving clients (0: half the CPU cores, at least one).
    pub workers: usize,
    pub admin: Admin,
    /// Bloom filters split over part keys across the cluster (`BF.*` on the exact name).
    pub split_bloom: Vec<SplitBloom>,
    /// Where read-only commands of one slot go (a user's own `read_from` wins).
    pub read_from: ReadFrom,
}

/// Where a read-only command (`readonly` in the command table) of one slot is sent.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ReadFrom {
    /// The slot's master: every read sees every acknowledged write.
    #[default]
    Master,
    /// A replica of the slot's master (on a connection that sent `READONLY`), the master
    /// when the slot's master has no healthy replica. Replicas lag: a read may miss the
    /// latest writes.
    PreferReplica,
    /// A replica only: a slot whose master has no healthy replica answers an error.
    Replica,
}

/// Most parts of a split Bloom filter: one per slot is already more than any cluster has
/// nodes.
pub const SPLIT_BLOOM_MAX_PARTS: u32 = 16384;

/// One split Bloom filter: `BF.*` on the key `prefix` itself goes to the part keys
/// `prefix{0}` ... `prefix{parts-1}`. `parts` must never change once the filter holds data:
/// an item's part is its hash modulo `parts`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SplitBloom {
    pub prefix: String,
    pub parts: u32,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Admin {
    /// The admin HTTP endpoint (metrics, topology, jobs). Loopback unless you say otherwise.
    pub listen: String,
    /// Bearer token for calls that change the cluster; none: such calls are refused.
    pub token: Option<String>,
    /// Keys per MIGRATE when a job moves a slot (a request may override it with `batch`).
    pub migrate_batch: usize,
    /// MIGRATE's timeout (the source waiting for the target), in milliseconds.
    pub migrate_timeout_ms: u64,
    /// How often the metrics poll every node's INFO (and CLUSTER INFO).
    pub poll_interval_ms: u64,
    /// How many slots `/metrics` lists by keys and by operations.
    pub top_slots: usize,
    /// Count keys per slot (CLUSTER COUNTKEYSINSLOT for every slot) every this many polls.
    pub slot_keys_every: u64,
}

impl Default for Admin {
    fn default() -> Self {
        Admin {
            listen: "127.0.0.1:9121".into(),
            token: None,
            migrate_batch: 100,
            migrate_timeout_ms: 10000,
            poll_interval_ms: 5000,
            top_slots: 20,
            slot_keys_every: 6,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    pub connect_ms: u64,
    /// How long a backend may take to answer a non-blocking command.
    pub operation_ms: u64,
    /// Close clients idle this long (0: never).
    pub idle_secs: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    pub max_clients: usize,
    /// Largest request (all arguments together) a client may send.
    pub max_request_bytes: usize,
    /// A client whose unread replies exceed this is disconnected.
    pub client_output_buffer_bytes: usize,
    /// Backend connections for MULTI, blocking commands and pub/sub, all clients together.
    pub dedicated_connections: usize,
    /// Largest reply the proxy takes from a node (a bulk counts with its announced length).
    /// 512 MB by default, Redis's `proto-max-bulk-len`: no node reply can legitimately carry
    /// a larger bulk. A larger reply is refused at its header and its connection closed.
    pub max_reply_bytes: usize,
    /// Most elements one node reply may announce, all nesting levels together: 2^27 by
    /// default, what 512 MB holds at 4 bytes an element (`:1\r\n`).
    pub max_reply_elements: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Backend {
    /// Shared, multiplexed connections per node and protocol, per worker. One by default:
    /// a node is one thread, so more connections only split the same requests into smaller
    /// batches (with two, a node did 1,510 writes per 10,000 GETs at `-P 1`; with one,
    /// 1,083; twemproxy's default of one server connection gave 951).
    pub connections_per_node: usize,
    pub refresh_interval_ms: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    pub password: String,
    /// May run CONFIG SET and CONFIG RESETSTAT (which reach every node). Off unless set;
    /// without any users configured every client may.
    #[serde(default)]
    pub admin: bool,
    /// This user's reads go here rather than where the global `read_from` says.
    #[serde(default)]
    pub read_from: Option<ReadFrom>,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            listen: "127.0.0.1:6380".into(),
            seeds: Vec::new(),
            timeouts: Timeouts::default(),
            limits: Limits::default(),
            backend: Backend::default(),
            deny_commands: Vec::new(),
            users: Vec::new(),
            workers: 0,
            admin: Admin::default(),
            split_bloom: Vec::new(),
            read_from: ReadFrom::Master,
        }
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect_ms: 1000,
            operation_ms: 5000,
            idle_secs: 0,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_clients: 10000,
            max_request_bytes: 512 * 1024 * 1024,
            client_output_buffer_bytes: 256 * 1024 * 1024,
            dedicated_connections: 512,
            max_reply_bytes: 512 * 1024 * 1024,
            max_reply_elements: 1 << 27,
        }
    }
}

impl Default for Backend {
    fn default() -> Self {
        Backend {
            connections_per_node: 1,
            refresh_interval_ms: 5000,
        }
    }
}

impl ProxyConfig {
    /// Reads and checks a YAML file.
    pub fn load(path: &Path) -> Result<ProxyConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|message| ConfigError::Invalid {
            path: shown,
            message,
        })
    }

    /// Parses YAML text; the error names the field and line.
    pub fn parse(text: &str) -> Result<ProxyConfig, String> {
        let config: ProxyConfig = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), String> {
        if self.backend.connections_per_node == 0 {
            return Err("backend.connections_per_node: must be at least 1".into());
        }
        if self.admin.migrate_batch == 0 {
            return Err("admin.migrate_batch: must be at least 1".into());
        }
        if self.limits.dedicated_connections == 0 {
            return Err("limits.dedicated_connections: must be at least 1".into());
        }
        for seed in &self.seeds {
            if !seed.contains(':') {
                return Err(format!("seeds: '{seed}' is not host:port"));
            }
        }
        self.validate_split_bloom()
    }

    fn validate_split_bloom(&self) -> Result<(), String> {
        for (i, split) in self.split_bloom.iter().enumerate() {
            let prefix = &split.prefix;
            if prefix.is_empty() {
                return Err(format!("split_bloom[{i}].prefix: must not be empty"));
            }
            // A brace would make the name a hash tag of its own, and every part would
            // land in one slot (or the tag would change with the part number).
            if prefix.contains(['{', '}']) {
                return Err(format!(
                    "split_bloom[{i}].prefix: '{prefix}' must not contain '{{' or '}}' (the part number is the hash tag)"
                ));
            }
            if !(1..=SPLIT_BLOOM_MAX_PARTS).contains(&split.parts) {
                return Err(format!(
                    "split_bloom[{i}].parts: must be 1 to {SPLIT_BLOOM_MAX_PARTS}"
                ));
            }
            if self.split_bloom[..i].iter().any(|s| &s.prefix == prefix) {
                return Err(format!(
                    "split_bloom[{i}].prefix: '{prefix}' is listed twice"
                ));
            }
        }
        Ok(())
    }

    /// The split Bloom filter named exactly `key`, if one is configured.
    pub fn split_bloom_for(&self, key: &[u8]) -> Option<&SplitBloom> {
        self.split_bloom.iter().find(|s| s.prefix.as_bytes() == key)
    }

    /// Where the reads of the client authenticated as `user` go (`None`: no users).
    pub fn read_from_for(&self, user: Option<&str>) -> ReadFrom {
        user.and_then(|name| self.users.iter().find(|u| u.name == name))
            .and_then(|u| u.read_from)
            .unwrap_or(self.read_from)
    }

    /// Whether the deny list refuses a command.
    pub fn denies(&self, command: &[u8]) -> bool {
        self.deny_commands
            .iter()
            .any(|d| d.as_bytes().eq_ignore_ascii_case(command))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config =
            ProxyConfig::parse("listen: 0.0.0.0:7000\nseeds: [a:1]\nlimits:\n  max_clients: 5\n")
                .unwrap();
        assert_eq!(config.listen, "0.0.0.0:7000");
        assert_eq!(config.limits.max_clients, 5);
        assert_eq!(config.limits.dedicated_connections, 512);
        assert!(ProxyConfig::parse("deny_commands: [keys]")
            .unwrap()
            .denies(b"KEYS"));
    }

    #[test]
    fn read_from_is_global_and_per_user() {
        let config = ProxyConfig::parse(
            "read_from: prefer-replica\nusers:\n  - { name: a, password: x, read_from: replica }\n  - { name: b, password: y }\n",
        )
        .unwrap();
        assert_eq!(config.read_from_for(Some("a")), ReadFrom::Replica);
        assert_eq!(config.read_from_for(Some("b")), ReadFrom::PreferReplica);
        assert_eq!(config.read_from_for(None), ReadFrom::PreferReplica);
        assert_eq!(ProxyConfig::default().read_from, ReadFrom::Master);
        let err = ProxyConfig::parse("read_from: replicas\n").unwrap_err();
        assert!(err.contains("replicas"), "{err}");
    }

    #[test]
    fn users_are_not_admins_unless_configured() {
        let config = ProxyConfig::parse(
            "users:\n  - { name: ops, password: a, admin: true }\n  - { name: app, password: b }\n",
        )
        .unwrap();
        assert!(config.users[0].admin);
        assert!(!config.users[1].admin);
    }

    #[test]
    fn the_example_configuration_parses() {
        let config = ProxyConfig::parse(include_str!("../deploy/slotproxy.example.yaml"))
            .expect("deploy/slotproxy.example.yaml");
        assert_eq!(config.admin.poll_interval_ms, 5000);
        assert_eq!(config.admin.top_slots, 20);
    }

    #[test]
    fn errors_name_the_field_and_line() {
        let err = ProxyConfig::parse("listen: a:1\nlimits:\n  max_clientz: 5\n").unwrap_err();
        assert!(
            err.contains("max_clientz") && err.contains("line 3"),
            "{err}"
        );
        let err = ProxyConfig::parse("timeouts:\n  operation_ms: soon\n").unwrap_err();
        assert!(
            err.contains("operation_ms") || err.contains("line 2"),
            "{err}"
        );
        let err = ProxyConfig::parse("backend:\n  connections_per_node: 0\n").unwrap_err();
        assert!(err.contains("connections_per_node"), "{err}");
    }

    #[test]
    fn split_bloom_is_checked() {
        let config =
            ProxyConfig::parse("split_bloom: [{prefix: \"bf:users\", parts: 1024}]\n").unwrap();
        assert_eq!(
            config.split_bloom_for(b"bf:users").map(|s| s.parts),
            Some(1024)
        );
        assert!(config.split_bloom_for(b"bf:users{0}").is_none());
        for (text, field) in [
            ("split_bloom: [{prefix: a, parts: 0}]", "parts"),
            ("split_bloom: [{prefix: a, parts: 16385}]", "parts"),
            ("split_bloom: [{prefix: '', parts: 2}]", "prefix"),
            ("split_bloom: [{prefix: 'a{b}', parts: 2}]", "prefix"),
            (
                "split_bloom: [{prefix: a, parts: 2}, {prefix: a, parts: 3}]",
                "twice",
            ),
            ("split_bloom: [{prefix: a, partz: 2}]", "partz"),
        ] {
            let err = ProxyConfig::parse(text).unwrap_err();
            assert!(err.contains(field), "{text}: {err}");
        }
    }
}
