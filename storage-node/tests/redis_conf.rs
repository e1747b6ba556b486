//! The node starts from the redis.conf files Redis users already have — Debian's stock
//! `/etc/redis/redis.conf` and Redis 7.0's full `redis.conf` — in a file and on the command
//! line, shows every setting as redis-server 7.0 does for the same file, checks values as
//! Redis does, and honours `daemonize`, `pidfile`, `logfile` and `loglevel`.

mod redis_conf_fixture;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{free_port, show, RawClient, ServerProcess};

use redis_conf_fixture::{
    debian_conf, full_redis_7_conf, node_binary, redis_binary, scratch_dir, settings,
    start_with_file,
};

/// Settings that differ because each server has its own port and directory.
const PER_PROCESS: &[&str] = &["port", "dir", "pidfile"];

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
fn modules_and_broken_acl_setups_stop_the_start_with_a_clear_error() {
    let port = free_port().to_string();
    let (status, stderr) = run_to_exit(&["--port", &port, "--loadmodule", "/x/module.so"]);
    assert!(!status.success());
    assert!(stderr.contains("modules are not supported"), "{stderr}");
    // ACL users: a broken `user` line, users both in the file and in an ACL file, and an
    // ACL file that cannot be read stop the start, as in Redis.
    let (status, stderr) = run_to_exit(&["--port", &port, "--user", "bob", "on", "badrule"]);
    assert!(!status.success());
    assert!(
        stderr.contains("Error in user declaration: Syntax error"),
        "{stderr}"
    );
    let both = [
        "--port",
        &port,
        "--user",
        "bob",
        "on",
        "--aclfile",
        "/x/users.acl",
    ];
    let (status, stderr) = run_to_exit(&both);
    assert!(!status.success());
    assert!(
        stderr.contains("please define either an ACL file"),
        "{stderr}"
    );
    let (status, stderr) = run_to_exit(&["--port", &port, "--aclfile", "/x/users.acl"]);
    assert!(!status.success());
    assert!(
        stderr.contains("Error loading ACLs, opening file '/x/users.acl': No such file"),
        "{stderr}"
    );
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
