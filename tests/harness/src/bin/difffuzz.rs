//! `difffuzz`: long runs of the differential command fuzzer.
//!
//! ```text
//! difffuzz [--target node|proxy] [--seed S] [--seconds N] [--cases N] [--steps K]
//!          [--no-shrink] [--pending-crashes] [--dry-run] [--allowed-examples]
//! ```
//!
//! Runs until `--seconds` or `--cases` is reached (default 60 s) and prints the totals:
//! cases executed, crashes and hangs (each with its shrunk reproduction), and reply
//! differences by command family. Exits 1 when a crash, hang or difference missing from
//! the allow-list was found. `--pending-crashes` also runs the scripts the allow-list marks
//! as known crashers being fixed elsewhere. `--dry-run` prints the generated commands without running them.
//! `--allowed-examples` also prints the first example of every allowed difference (to triage
//! the allow-list).
//! The storage-node and slotproxy binaries are taken from next to this one (or from
//! `$STORAGE_NODE_BIN` / `$SLOTPROXY_BIN`).

use std::process::ExitCode;

use test_harness::difffuzz::{self, Config, Target};

fn usage() -> ExitCode {
    eprintln!(
        "usage: difffuzz [--target node|proxy] [--seed S] [--seconds N] [--cases N] [--steps K] [--no-shrink] [--pending-crashes] [--dry-run] [--allowed-examples]"
    );
    ExitCode::from(2)
}

/// Points the harness at the binaries built next to this program (the harness otherwise
/// looks next to a test executable, one directory deeper).
fn locate_binaries() {
    let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|p| p.to_path_buf()))
    else {
        return;
    };
    for (var, name) in [
        ("STORAGE_NODE_BIN", "storage-node"),
        ("SLOTPROXY_BIN", "slotproxy"),
    ] {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, dir.join(name));
        }
    }
}

fn main() -> ExitCode {
    locate_binaries();
    let mut config = Config {
        target: Target::Node,
        seed: 1,
        steps_per_case: 6,
        max_cases: None,
        max_seconds: None,
        shrink: true,
        pending_crashes: false,
    };
    let mut dry_run = false;
    let mut allowed_examples = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut number = || args.next().and_then(|v| v.parse::<u64>().ok());
        match flag.as_str() {
            "--seed" => match number() {
                Some(n) => config.seed = n,
                None => return usage(),
            },
            "--seconds" => match number() {
                Some(n) => config.max_seconds = Some(n),
                None => return usage(),
            },
            "--cases" => match number() {
                Some(n) => config.max_cases = Some(n),
                None => return usage(),
            },
            "--steps" => match number() {
                Some(n) => config.steps_per_case = n.max(1) as usize,
                None => return usage(),
            },
            "--target" => match args.next().as_deref() {
                Some("node") => config.target = Target::Node,
                Some("proxy") => config.target = Target::Proxy,
                _ => return usage(),
            },
            "--no-shrink" => config.shrink = false,
            "--pending-crashes" => config.pending_crashes = true,
            "--dry-run" => dry_run = true,
            "--allowed-examples" => allowed_examples = true,
            _ => return usage(),
        }
    }
    if config.max_cases.is_none() && config.max_seconds.is_none() {
        config.max_seconds = Some(60);
    }
    if dry_run {
        let mut generator = difffuzz::generator(&config);
        for case in 0..config.max_cases.unwrap_or(10) {
            println!("case {case}:");
            for step in generator.case(config.steps_per_case) {
                println!("  {}", step.show());
            }
        }
        return ExitCode::SUCCESS;
    }
    let report = difffuzz::run(&config);
    print!("{}", report.render());
    if allowed_examples {
        print!("{}", report.render_allowed_examples());
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
