//! Client sessions replayed against one real redis-server (the reference) and through
//! slotproxy in front of a cluster, the replies compared byte for byte.
//!
//! A session is a file `tests/proxy_sessions/<name>.session` (format in
//! [`proxy_sessions::script`]): what one or several clients send, step by step. Every
//! session runs three times: in RESP2, in RESP3 (each client sends `HELLO 3` first; that
//! reply names the server and the connection, so it is not compared), and in RESP2 with
//! every command written one byte at a time (so the proxy meets each request split at every
//! byte); each time after `FLUSHALL` and `SCRIPT FLUSH`, with fresh clients. Adding a
//! session is adding a file.
//!
//! Where the proxy answers differently from one server on purpose (the README's
//! compatibility table: keys of one transaction in one slot, commands the proxy refuses),
//! `tests/proxy_sessions/EXCEPTIONS` lists the command with the reason. Any other
//! difference fails the test, and so does an exception no difference needed. The test
//! collects every difference of every session before it fails, each with the file, line,
//! protocol and both replies.
//!
//! Sessions use distinct key and channel names per file, so a client of an earlier session
//! that the server has not yet cleaned up cannot count in a later one.

mod proxy_sessions {
    pub mod compare;
    pub mod exceptions;
    pub mod script;
    pub mod target;
}

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use proxy_sessions::compare::{same_elements, shorten};
use proxy_sessions::exceptions::{self, Exception};
use proxy_sessions::script::{self, Line, Step};
use proxy_sessions::target::{Mode, Target, MODES};
use test_harness::{show, start_proxy, Cluster, ServerProcess};

/// The session files, sorted by name.
fn session_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/proxy_sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/proxy_sessions")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "session"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no session files in {}", dir.display());
    files
}

fn load_exceptions() -> Vec<Exception> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/proxy_sessions/EXCEPTIONS");
    let text = std::fs::read_to_string(&path).expect("tests/proxy_sessions/EXCEPTIONS");
    exceptions::parse(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// The words a reply belongs to, for exception look-ups: the command, or `!read`.
fn step_commands(step: &Step) -> Vec<Vec<Vec<u8>>> {
    match step {
        Step::Send { commands, .. } => commands.clone(),
        Step::Read { .. } => vec![vec![b"!read".to_vec()]],
        Step::SendOnly { .. } | Step::Raw { .. } | Step::Blocked(_) => Vec::new(),
    }
}

/// Runs `step` on a target; a missing reply (timeout, closed connection) is reported as
/// the reply, not a panic, so the other sessions still run.
fn run_guarded(target: &mut Target, step: &Step) -> Result<Vec<Vec<u8>>, String> {
    catch_unwind(AssertUnwindSafe(|| target.run(step))).map_err(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("no reply ({text})")
    })
}

/// Runs one session on the reference and the proxy; returns the differences not excused.
fn run_session(
    name: &str,
    lines: &[Line],
    mode: Mode,
    backend: &str,
    reference: &mut Target,
    proxy: &mut Target,
    exceptions: &[Exception],
) -> Vec<String> {
    reference.start_session(mode);
    proxy.start_session(mode);
    let protocol = mode.label();
    let mut differences = Vec::new();
    for line in lines {
        let expected = run_guarded(reference, &line.step)
            .unwrap_or_else(|e| panic!("{name}.session:{} on redis-server: {e}", line.number));
        let actual = match run_guarded(proxy, &line.step) {
            Ok(actual) => actual,
            Err(e) => {
                differences.push(format!(
                    "{name}.session:{} ({protocol}, {backend}) `{}`: {e}; the rest of the session is skipped",
                    line.number, line.text
                ));
                return differences;
            }
        };
        let unordered = matches!(
            line.step,
            Step::Send {
                unordered: true,
                ..
            }
        );
        for ((args, expected), actual) in
            step_commands(&line.step).iter().zip(&expected).zip(&actual)
        {
            if expected == actual || (unordered && same_elements(expected, actual)) {
                continue;
            }
            if let Some(exception) = exceptions::find(exceptions, name, backend, args) {
                exception.used.set(true);
                continue;
            }
            let words: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            differences.push(format!(
                "{name}.session:{} ({protocol}, {backend}) {words:?}\n    redis-server: {}\n    slotproxy:    {}",
                line.number,
                shorten(&show(expected)),
                shorten(&show(actual))
            ));
        }
    }
    differences
}

/// Every session against a redis-server and through a proxy in front of `cluster`.
fn run_all_sessions(backend: &str, cluster: Cluster) {
    let redis = ServerProcess::redis_server(&[]);
    let proxy_process = start_proxy(&cluster.seeds(), &[]);
    let mut reference = Target::new(redis.port, vec![redis.port]);
    let nodes = cluster.nodes.iter().map(|n| n.port).collect();
    let mut proxy = Target::new(proxy_process.port, nodes);
    let exceptions = load_exceptions();
    let mut differences = Vec::new();
    let mut names = Vec::new();
    for file in session_files() {
        let name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("session name")
            .to_string();
        let text = std::fs::read_to_string(&file).expect("session file");
        let lines = script::parse(&text).unwrap_or_else(|e| panic!("{name}.session {e}"));
        for mode in MODES {
            differences.extend(run_session(
                &name,
                &lines,
                mode,
                backend,
                &mut reference,
                &mut proxy,
                &exceptions,
            ));
        }
        names.push(name);
    }
    for exception in &exceptions {
        let applies = exception.backend == "any" || exception.backend == backend;
        if !applies {
            continue;
        }
        if !names.contains(&exception.session) {
            differences.push(format!(
                "EXCEPTIONS names session {}, which has no file",
                exception.session
            ));
            continue;
        }
        if exception.used.get() {
            eprintln!(
                "expected difference: {} `{}` on {backend}: {}",
                exception.session,
                exception.command.join(" "),
                exception.reason
            );
        } else if !exception.sometimes {
            differences.push(format!(
                "EXCEPTIONS lists {} `{}` for {} but no reply differed on {backend}: remove the entry",
                exception.session,
                exception.command.join(" "),
                exception.backend
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} difference(s) between redis-server and slotproxy:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn redis_cluster() {
    run_all_sessions("redis-cluster", Cluster::redis(3));
}

#[test]
fn storage_nodes() {
    run_all_sessions("storage-nodes", Cluster::storage_nodes(3));
}
