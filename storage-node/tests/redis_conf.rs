//! The node starts from the redis.conf files Redis users already have — Debian's stock
//! `/etc/redis/redis.conf` and Redis 7.0's full `redis.conf` — in a file and on the command
//! line, shows every setting as redis-server 7.0 does for the same file, checks values as
//! Redis does, and honours `daemonize`, `pidfile`, `logfile` and `loglevel`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::process::storage_node_binary;
use test_harness::{free_port, show, RawClient, ServerProcess};

const DEBIAN_CONF: &str = "/etc/redis/redis.conf";

/// The directives of Redis 7.0's full redis.conf that Debian's file (Redis 7.0's file with
/// Debian's paths) leaves commented out, each with Redis 7.0's default value, memory sizes
/// in the units redis.conf uses. Written for this test: directives only. With the active
/// lines of Debian's file they make up every directive of the file; `include`,
/// `rename-command`, `loadmodule` and `user` are exercised on their own below.
const REDIS_7_0_COMMENTED_DIRECTIVES: &str = r#"
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

/// Settings that differ because each server has its own port and directory.
const PER_PROCESS: &[&str] = &["port", "dir", "pidfile"];

/// Debian's file as it is, or Redis 7.0's full file.
fn debian_conf() -> String {
    std::fs::read_to_string(DEBIAN_CONF).expect("Debian's redis-server package is installed")
}

fn full_redis_7_conf() -> String {
    let debian = debian_conf();
    let active: Vec<&str> = debian
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    format!("{}\n{REDIS_7_0_COMMENTED_DIRECTIVES}", active.join("\n"))
}

/// The file with only what must differ per process changed: port, dir, the pid file, a
/// foreground server logging to standard output (where the harness sees it get ready).
fn adjusted(text: &str, port: u16, dir: &Path) -> String {
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
fn scratch_dir(name: &str) -> PathBuf {
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
fn start_with_file(program: &Path, name: &str, text: &str, extra: &[String]) -> ServerProcess {
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

fn node_binary() -> PathBuf {
    storage_node_binary()
}

fn redis_binary() -> PathBuf {
    PathBuf::from("redis-server")
}

/// Every setting CONFIG GET * shows.
fn settings(port: u16) -> BTreeMap<String, String> {
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

/// Every setting redis-server shows has the same value on the node.
fn assert_same_settings(node: &ServerProcess, redis: &ServerProcess) {
    let on_node = settings(node.port);
    let on_redis = settings(redis.port);
    assert!(on_redis.len() > 150, "only {} settings", on_redis.len());
    let differ: Vec<String> = on_redis
        .iter()
        .filter(|(name, _)| !PER_PROCESS.contains(&name.as_str()))
        .filter(|(name, value)| on_node.get(*name) != Some(value))
        .map(|(name, value)| format!("{name}: redis {value:?}, node {:?}", on_node.get(name)))
        .collect();
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

fn ping(port: u16) {
    let pong = RawClient::connect(port).call(&["PING"]);
    assert_eq!(pong, Frame::Simple("PONG".into()));
}

#[test]
fn debian_stock_conf_starts_the_node_with_redis_settings() {
    let text = debian_conf();
    let node = start_with_file(&node_binary(), "storage-node", &text, &[]);
    let redis = start_with_file(&redis_binary(), "redis-server", &text, &[]);
    ping(node.port);
    assert_same_settings(&node, &redis);
}

#[test]
fn redis_7_full_conf_starts_the_node_with_redis_settings() {
    // Plus the two directives that are not settings: an include (with a wildcard) and a
    // rename-command.
    let fragments = scratch_dir("fragments");
    std::fs::write(fragments.join("a.conf"), "hz 15\n").unwrap();
    std::fs::write(fragments.join("b.conf"), "tcp-keepalive 60\n").unwrap();
    let text = format!(
        "{}\ninclude {}/*.conf\nrename-command FLUSHALL \"\"\n",
        full_redis_7_conf(),
        fragments.display()
    );
    let node = start_with_file(&node_binary(), "storage-node", &text, &[]);
    let redis = start_with_file(&redis_binary(), "redis-server", &text, &[]);
    ping(node.port);
    assert_same_settings(&node, &redis);
    assert_eq!(settings(node.port)["hz"], "15");
    let flushall = |port| RawClient::connect(port).call_raw(&[b"FLUSHALL"]);
    assert_eq!(show(&flushall(node.port)), show(&flushall(redis.port)));
}

/// `name value...` lines as command-line arguments (`--name value ...`).
fn as_arguments(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, values) = line.split_once(' ').unwrap_or((line, ""));
        args.push(format!("--{name}"));
        match values.trim() {
            quoted if quoted.starts_with('"') => args.push(quoted.trim_matches('"').to_string()),
            plain => args.extend(plain.split_whitespace().map(str::to_string)),
        }
    }
    args
}

#[test]
fn every_directive_on_the_command_line_reads_as_in_redis() {
    let arguments = as_arguments(&full_redis_7_conf());
    assert!(arguments.len() > 300, "only {} arguments", arguments.len());
    // An empty file keeps the port, dir and pid file per process; everything else comes
    // from the command line, whose own port/dir/pidfile the file's adjustments replace.
    let per_process = ["--port", "--dir", "--pidfile", "--daemonize", "--logfile"];
    let mut kept = Vec::new();
    let mut skipping = false;
    for arg in arguments {
        if arg.starts_with("--") {
            skipping = per_process.contains(&arg.as_str());
        }
        if !skipping {
            kept.push(arg);
        }
    }
    let base = "port 0\ndir .\ndaemonize no\npidfile x\nlogfile x\n";
    let node = start_with_file(&node_binary(), "storage-node", base, &kept);
    let redis = start_with_file(&redis_binary(), "redis-server", base, &kept);
    ping(node.port);
    assert_same_settings(&node, &redis);
}

#[test]
fn config_set_checks_every_directive_as_redis() {
    let node = ServerProcess::storage_node(&[]);
    let redis = ServerProcess::redis_server(&[]);
    let (mut on_node, mut on_redis) = (
        RawClient::connect(node.port),
        RawClient::connect(redis.port),
    );
    // `bind` and `port` would move redis-server (the node refuses both: it cannot move its
    // listener), `activedefrag yes` needs a jemalloc Debian's build lacks, `maxclients 1`
    // and `requirepass` would lock this test's own clients out.
    let skipped = ["bind", "port", "activedefrag", "maxclients", "requirepass"];
    let values = [
        "abc",
        "-1",
        "99999999999999999999",
        "",
        "0",
        "1",
        "1 2",
        "yes",
        "1gb",
    ];
    let mut differ = Vec::new();
    let mut checked = 0;
    for name in settings(redis.port).keys() {
        if skipped.contains(&name.as_str()) {
            continue;
        }
        for value in values {
            let command = ["CONFIG", "SET", name.as_str(), value];
            let (node_reply, redis_reply) = (on_node.call(&command), on_redis.call(&command));
            checked += 1;
            if node_reply != redis_reply {
                differ.push(format!(
                    "{command:?}: node {node_reply:?}, redis {redis_reply:?}"
                ));
            }
        }
    }
    assert!(checked > 1500, "only {checked} checked");
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

#[test]
fn config_rewrite_of_a_redis_conf_starts_again() {
    let text = full_redis_7_conf();
    let node = start_with_file(&node_binary(), "storage-node", &text, &[]);
    let mut client = RawClient::connect(node.port);
    for (name, value) in [
        ("maxmemory", "100mb"),
        ("hz", "25"),
        ("slave-read-only", "no"),
        ("tcp-keepalive", "60"),
    ] {
        assert_eq!(
            client.call(&["CONFIG", "SET", name, value]),
            Frame::Simple("OK".into())
        );
    }
    assert_eq!(
        client.call(&["CONFIG", "REWRITE"]),
        Frame::Simple("OK".into())
    );
    let Frame::Array(info) = client.call(&["CONFIG", "GET", "dir"]) else {
        panic!("CONFIG GET dir");
    };
    let Frame::Bulk(dir) = &info[1] else {
        panic!("dir")
    };
    let conf = PathBuf::from(String::from_utf8_lossy(dir).into_owned()).join("server.conf");
    let rewritten = std::fs::read_to_string(&conf).expect("the rewritten file");
    drop(client);
    drop(node);
    let again = start_with_file(&node_binary(), "storage-node", &rewritten, &[]);
    let shown = settings(again.port);
    assert_eq!(shown["maxmemory"], "104857600");
    assert_eq!(shown["hz"], "25");
    assert_eq!(shown["replica-read-only"], "no");
    assert_eq!(shown["tcp-keepalive"], "60");
}

/// Runs the node binary to its end (bounded); returns its exit status and stderr.
fn run_to_exit(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(node_binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storage-node");
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
    }
    (status, stderr)
}

fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("storage-node did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn modules_and_acl_users_stop_the_start_with_a_clear_error() {
    let port = free_port().to_string();
    let (status, stderr) = run_to_exit(&["--port", &port, "--loadmodule", "/x/module.so"]);
    assert!(!status.success());
    assert!(stderr.contains("modules are not supported"), "{stderr}");
    let (status, stderr) = run_to_exit(&["--port", &port, "--user", "bob", "on", ">pw", "+@all"]);
    assert!(!status.success());
    assert!(stderr.contains("ACL users are not supported"), "{stderr}");
    let (status, stderr) = run_to_exit(&["--port", &port, "--aclfile", "/x/users.acl"]);
    assert!(!status.success());
    assert!(stderr.contains("ACL files are not supported"), "{stderr}");
}

#[test]
fn a_configuration_on_stdin_is_read_as_redis_server_reads_it() {
    let port = free_port();
    // Its files (a save at exit) go to a scratch directory, never the source tree.
    let dir = scratch_dir("stdin");
    let mut child = Command::new(node_binary())
        .args(["-", "--hz", "42", "--dir", &dir.display().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start storage-node");
    let text = format!("port {port}\nloglevel warning\nhz 7\n");
    let mut stdin = child.stdin.take().expect("piped stdin");
    std::io::Write::write_all(&mut stdin, text.as_bytes()).expect("write the configuration");
    drop(stdin);
    let listening = eventually(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let shown = listening.then(|| settings(port));
    let _ = child.kill();
    let _ = child.wait();
    let shown = shown.expect("the node never listened on the port stdin named");
    assert_eq!(shown["loglevel"], "warning");
    // The command line comes after stdin, as in redis-server.
    assert_eq!(shown["hz"], "42");
}

/// Kills a daemon by its pid when the test ends, however it ends.
struct DaemonGuard(String);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-9", &self.0]).status();
    }
}

/// Polls `check` until it holds or `limit` passes.
fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

#[test]
fn daemonize_detaches_and_the_pidfile_names_the_daemon() {
    let dir = scratch_dir("daemon");
    let port = free_port();
    let pidfile = dir.join("node.pid");
    let logfile = dir.join("node.log");
    let mut launcher = Command::new(node_binary())
        .args([
            "--port",
            &port.to_string(),
            "--daemonize",
            "yes",
            "--pidfile",
            &pidfile.display().to_string(),
            "--logfile",
            &logfile.display().to_string(),
            "--dir",
            &dir.display().to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start storage-node");
    let launcher_pid = launcher.id();
    // The command returns once the daemon serves, as redis-server's does.
    let status = wait_bounded(&mut launcher, Duration::from_secs(30));
    assert!(status.success(), "{status}");
    let pid =
        std::fs::read_to_string(&pidfile).expect("the pid file exists once the command returned");
    let pid = pid.trim().to_string();
    let _guard = DaemonGuard(pid.clone());
    assert_ne!(
        pid,
        launcher_pid.to_string(),
        "the daemon is another process"
    );
    ping(port);
    let Frame::Bulk(info) = RawClient::connect(port).call(&["INFO", "server"]) else {
        panic!("INFO did not answer a bulk string");
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    assert!(info.contains(&format!("process_id:{pid}\r\n")), "{info}");
    // Stopped by that pid: SIGTERM ends it cleanly and removes the pid file.
    let killed = Command::new("kill").arg(&pid).status().expect("kill");
    assert!(killed.success());
    assert!(
        eventually(Duration::from_secs(30), || !pidfile.exists()),
        "the pid file outlived the daemon"
    );
    assert!(eventually(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    }));
    let log = std::fs::read_to_string(&logfile).expect("the daemon wrote its log file");
    assert!(log.contains("Ready to accept connections"), "{log}");
    assert!(log.contains("Received SIGTERM"), "{log}");
}

/// Starts a node in the foreground with a log file and waits (bounded) until it answers.
fn node_logging_to(logfile: &Path, loglevel: &str) -> (Child, u16) {
    let port = free_port();
    let mut child = Command::new(node_binary())
        .args([
            "--port",
            &port.to_string(),
            "--logfile",
            &logfile.display().to_string(),
            "--loglevel",
            loglevel,
            "--lazyfree-lazy-server-del",
            "no",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start storage-node");
    let answers = eventually(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    if !answers {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the node never listened");
    }
    (child, port)
}

#[test]
fn logfile_and_loglevel_are_honoured() {
    let dir = scratch_dir("logs");
    let quiet_log = dir.join("warning.log");
    let chatty_log = dir.join("notice.log");
    let (mut quiet, quiet_port) = node_logging_to(&quiet_log, "warning");
    let (mut chatty, chatty_port) = node_logging_to(&chatty_log, "notice");
    // The ready line is written before the first client is accepted.
    ping(quiet_port);
    ping(chatty_port);
    for child in [&mut quiet, &mut chatty] {
        let _ = child.kill();
        let _ = child.wait();
    }
    // Nothing went to standard output: a log file takes it all.
    for child in [&mut quiet, &mut chatty] {
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
        }
        assert_eq!(out, "");
    }
    let quiet_text = std::fs::read_to_string(&quiet_log).expect("warning log");
    let chatty_text = std::fs::read_to_string(&chatty_log).expect("notice log");
    // Both report the inert lazyfree-lazy-server-del, a warning; only the notice node says it
    // is ready.
    for text in [&quiet_text, &chatty_text] {
        assert!(
            text.contains(
                " # setting 'lazyfree-lazy-server-del' 'no' accepted, has no effect here"
            ),
            "{text}"
        );
    }
    assert!(
        chatty_text.contains(" * Ready to accept connections"),
        "{chatty_text}"
    );
    let notices: Vec<&str> = quiet_text.lines().filter(|l| l.contains(" * ")).collect();
    assert!(
        notices.is_empty(),
        "a warning-level node wrote notices: {notices:?}"
    );
}

/// What `ss` says about the node's TCP sockets on `port` matching `filter`.
fn socket_state(args: &[&str]) -> String {
    let output = Command::new("ss").args(args).output().expect("run ss");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn tcp_backlog_and_tcp_keepalive_reach_the_sockets() {
    let node = ServerProcess::storage_node(&["--tcp-backlog", "77", "--tcp-keepalive", "100"]);
    let port = node.port.to_string();
    // A listening socket's Send-Q is its backlog.
    let listening = socket_state(&["-ltnH", &format!("sport = :{port}")]);
    let backlogs: Vec<&str> = listening
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert_eq!(backlogs, ["77"], "{listening}");
    // A connection the node has answered (so accepted), and its client-side port.
    let answered = || {
        let stream = std::net::TcpStream::connect(("127.0.0.1", node.port)).expect("connect");
        let client_port = stream.local_addr().expect("local address").port();
        let mut client = RawClient::from_stream(stream);
        assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
        (client, client_port)
    };
    let with_keepalive = answered();
    let timers = |(_, client_port): &(RawClient, u16)| {
        socket_state(&[
            "-tnoH",
            "state",
            "established",
            &format!("( sport = :{port} and dport = :{client_port} )"),
        ])
    };
    assert!(
        timers(&with_keepalive).contains("keepalive"),
        "{}",
        timers(&with_keepalive)
    );
    // CONFIG SET reaches connections accepted afterwards, as in Redis.
    let mut admin = RawClient::connect(node.port);
    assert_eq!(
        admin.call(&["CONFIG", "SET", "tcp-keepalive", "0"]),
        Frame::Simple("OK".into())
    );
    let without = answered();
    let state = timers(&without);
    assert!(!state.is_empty() && !state.contains("keepalive"), "{state}");
}

#[test]
fn supervised_systemd_reports_ready_on_notify_socket() {
    let dir = scratch_dir("notify");
    let socket_path = dir.join("notify.sock");
    let socket =
        std::os::unix::net::UnixDatagram::bind(&socket_path).expect("bind a notify socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    for mode in ["systemd", "auto"] {
        let port = free_port();
        // `daemonize yes` is ignored under a supervisor: the node stays this child.
        let mut child = Command::new(node_binary())
            .args([
                "--port",
                &port.to_string(),
                "--supervised",
                mode,
                "--daemonize",
                "yes",
            ])
            .env("NOTIFY_SOCKET", &socket_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start storage-node");
        let mut message = [0u8; 256];
        let received = socket.recv(&mut message);
        let still_running = child.try_wait().expect("wait").is_none();
        let listening = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        let _ = child.kill();
        let _ = child.wait();
        let length = received.expect("the node notified systemd");
        let text = String::from_utf8_lossy(&message[..length]).into_owned();
        assert!(text.contains("READY=1\n"), "{mode}: {text:?}");
        assert!(
            still_running && listening,
            "{mode}: ready before serving, in the foreground"
        );
    }
}
