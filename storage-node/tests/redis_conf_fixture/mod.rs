//! The redis.conf tests' shared fixture: Debian's stock file and Redis 7.0's full file,
//! servers started from a copy of one (a storage-node or a redis-server, each with its own
//! port and directory), and every setting a server shows. Used by `redis_conf` and
//! `config_rewrite`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use slotproxy::resp::Frame;
use test_harness::process::storage_node_binary;
use test_harness::{free_port, RawClient, ServerProcess};

pub const DEBIAN_CONF: &str = "/etc/redis/redis.conf";

/// The directives of Redis 7.0's full redis.conf that Debian's file (Redis 7.0's file with
/// Debian's paths) leaves commented out, each with Redis 7.0's default value, memory sizes
/// in the units redis.conf uses. Written for this test: directives only. With the active
/// lines of Debian's file they make up every directive of the file; `include`,
/// `rename-command`, `loadmodule` and `user` are exercised on their own below.
pub const REDIS_7_0_COMMENTED_DIRECTIVES: &str = r#"
acl-pubsub-default resetchannels
aclfile ""
active-defrag-cycle-max 25
active-defrag-cycle-min 1
active-defrag-ignore-bytes 100mb
active-defrag-max-scan-fields 1000
active-defrag-threshold-lower 10
active-defrag-threshold-upper 100
active-expire-effort 1
activedefrag no
aof_rewrite_cpulist ""
bgsave_cpulist ""
bind-source-addr ""
bio_cpulist ""
busy-reply-threshold 5000
client-query-buffer-limit 1gb
cluster-allow-pubsubshard-when-down yes
cluster-allow-reads-when-down no
cluster-allow-replica-migration yes
cluster-announce-bus-port 0
cluster-announce-hostname ""
cluster-announce-ip ""
cluster-announce-port 0
cluster-announce-tls-port 0
cluster-config-file nodes.conf
cluster-enabled no
cluster-link-sendbuf-limit 0
cluster-migration-barrier 1
cluster-node-timeout 15000
cluster-port 0
cluster-preferred-endpoint-type ip
cluster-replica-no-failover no
cluster-replica-validity-factor 10
cluster-require-full-coverage yes
crash-log-enabled yes
crash-memcheck-enabled yes
enable-protected-configs no
enable-debug-command no
enable-module-command no
ignore-warnings ""
io-threads 1
io-threads-do-reads no
latency-tracking yes
latency-tracking-info-percentiles "50 99 99.9"
lfu-decay-time 1
lfu-log-factor 10
lua-time-limit 5000
masterauth ""
masteruser ""
maxclients 10000
maxmemory 0
maxmemory-clients 0
maxmemory-eviction-tenacity 10
maxmemory-policy noeviction
maxmemory-samples 5
min-replicas-max-lag 10
min-replicas-to-write 0
propagation-error-behavior ignore
proto-max-bulk-len 512mb
repl-backlog-size 1mb
repl-backlog-ttl 3600
repl-ping-replica-period 10
repl-timeout 60
replica-announce-ip ""
replica-announce-port 0
replica-announced yes
replica-ignore-disk-write-errors no
replica-ignore-maxmemory yes
replicaof no one
requirepass ""
sanitize-dump-payload no
save 3600 1 300 100 60 10000
server_cpulist ""
shutdown-on-sigint default
shutdown-on-sigterm default
shutdown-timeout 10
socket-mark-id 0
supervised no
syslog-enabled no
syslog-facility local0
syslog-ident redis
tls-auth-clients yes
tls-ca-cert-dir ""
tls-ca-cert-file ""
tls-cert-file ""
tls-ciphers ""
tls-ciphersuites ""
tls-client-cert-file ""
tls-client-key-file ""
tls-client-key-file-pass ""
tls-cluster no
tls-dh-params-file ""
tls-key-file ""
tls-key-file-pass ""
tls-port 0
tls-prefer-server-ciphers no
tls-protocols ""
tls-replication no
tls-session-cache-size 20480
tls-session-cache-timeout 300
tls-session-caching yes
tracking-table-max-keys 1000000
unixsocket ""
unixsocketperm 0
slaveof no one
slave-serve-stale-data yes
slave-read-only yes
slave-priority 100
hash-max-ziplist-entries 512
list-max-ziplist-size -2
"#;

/// Debian's file as it is, or Redis 7.0's full file.
pub fn debian_conf() -> String {
    std::fs::read_to_string(DEBIAN_CONF).expect("Debian's redis-server package is installed")
}

pub fn full_redis_7_conf() -> String {
    let debian = debian_conf();
    let active: Vec<&str> = debian
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    format!("{}\n{REDIS_7_0_COMMENTED_DIRECTIVES}", active.join("\n"))
}

/// The file with only what must differ per process changed: port, dir, the pid file, a
/// foreground server logging to standard output (where the harness sees it get ready).
pub fn adjusted(text: &str, port: u16, dir: &Path) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| match line.split_whitespace().next() {
            Some("port") => format!("port {port}"),
            Some("dir") => format!("dir {}", dir.display()),
            Some("daemonize") => "daemonize no".into(),
            Some("pidfile") => format!("pidfile {}", dir.join("server.pid").display()),
            Some("logfile") => "logfile \"\"".into(),
            _ => line.to_string(),
        })
        .collect();
    lines.push(String::new());
    lines.join("\n")
}

/// An empty directory of this test's own.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "storage-node-redis-conf-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Starts `program` (a storage-node or redis-server) with the adjusted file and extra
/// command-line arguments.
pub fn start_with_file(program: &Path, name: &str, text: &str, extra: &[String]) -> ServerProcess {
    let port = free_port();
    let dir = scratch_dir(&format!("{name}-{port}"));
    let conf = dir.join("server.conf");
    std::fs::write(&conf, adjusted(text, port, &dir)).expect("write the config file");
    let mut args = vec![conf.display().to_string()];
    args.extend(extra.iter().cloned());
    ServerProcess::spawn(
        name,
        &program.to_path_buf(),
        &args,
        port,
        "Ready to accept connections",
    )
}

pub fn node_binary() -> PathBuf {
    storage_node_binary()
}

pub fn redis_binary() -> PathBuf {
    PathBuf::from("redis-server")
}

/// Every setting CONFIG GET * shows.
pub fn settings(port: u16) -> BTreeMap<String, String> {
    let Frame::Array(items) = RawClient::connect(port).call(&["CONFIG", "GET", "*"]) else {
        panic!("CONFIG GET * did not answer an array");
    };
    items
        .chunks(2)
        .map(|pair| match pair {
            [Frame::Bulk(name), Frame::Bulk(value)] => (
                String::from_utf8_lossy(name).into_owned(),
                String::from_utf8_lossy(value).into_owned(),
            ),
            other => panic!("not a name and a value: {other:?}"),
        })
        .collect()
}
