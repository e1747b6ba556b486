//! Running a helper program (a client-library script, a tool) to its end, bounded in time.

use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runs `command` until it exits, its stdout and stderr in a log file named after
/// `log_name` in the temporary directory (a file, not a pipe: a pipe nobody reads while
/// waiting could fill and stall the program); returns its exit status and what it
/// printed, and removes the log. Kills it and panics if it runs longer than `limit`.
pub fn run_logged(mut command: Command, log_name: &str, limit: Duration) -> (ExitStatus, String) {
    // Tests of one binary run in parallel: each run gets its own file.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let log_path =
        std::env::temp_dir().join(format!("{log_name}-{}-{run}.log", std::process::id()));
    let log = std::fs::File::create(&log_path).expect("create the log file");
    let mut child = command
        .stdout(log.try_clone().expect("clone the log file"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the program") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let output = std::fs::read_to_string(&log_path).unwrap_or_default();
            let _ = std::fs::remove_file(&log_path);
            panic!("{command:?} did not finish within {limit:?}:\n{output}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    (status, output)
}
