//! The differential command fuzzer: commands drawn from the shared command table, with
//! hostile arguments, run on the subject (a storage-node, or slotproxy in front of a
//! storage-node cluster) and on a real redis-server 7.0 side by side.
//!
//! A run fails on a crash or hang of the subject (every step is followed by a PING to each
//! subject process, with a timeout), and reports replies of a different kind (error vs
//! value) or, for deterministic commands, a different value. Runs are deterministic by
//! seed: the same seed and case count give the same commands.
//!
//! # Layout
//! - [`rng`]: the seeded generator.
//! - [`alphabet`]: the hostile values, scripts and libraries.
//! - [`generate`]: commands from the command table's docs argument trees.
//! - [`policy`]: excluded commands, commands compared by kind only or unordered, with reasons.
//! - [`prepare`]: the keys of every type each case starts with.
//! - [`servers`]: starting both sides; liveness checks.
//! - [`conn`]: a client that reports closed connections and timeouts as values.
//! - [`compare`], [`allow`]: comparing replies; the allow-list of known differences.
//! - [`runner`]: running one case.
//! - [`shrink`]: reducing a crashing case to a short reproduction.
//! - [`report`]: the totals of a run.

pub mod allow;
pub mod alphabet;
pub mod compare;
pub mod conn;
pub mod generate;
pub mod policy;
pub mod prepare;
pub mod report;
pub mod rng;
pub mod runner;
pub mod servers;
pub mod shrink;

use std::time::Instant;

pub use generate::{Generator, Step};
pub use report::Report;
pub use runner::{run_case, Outcome};
pub use servers::{Sides, Target};

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    pub seed: u64,
    /// Commands per case (each case starts from the prepared keys).
    pub steps_per_case: usize,
    /// Stop after this many cases...
    pub max_cases: Option<u64>,
    /// ...or after this much wall-clock time, whichever comes first.
    pub max_seconds: Option<u64>,
    /// Shrink crashing cases (restarts the servers for every attempt).
    pub shrink: bool,
    /// Also run the scripts the allow-list marks `pending-crash` (long runs that look for
    /// crashes; the CI profile leaves them out).
    pub pending_crashes: bool,
}

impl Config {
    /// A run of `cases` cases of `steps_per_case` steps, bounded by count only.
    pub fn cases(target: Target, seed: u64, cases: u64) -> Config {
        Config {
            target,
            seed,
            steps_per_case: 6,
            max_cases: Some(cases),
            max_seconds: None,
            shrink: true,
            pending_crashes: false,
        }
    }
}

/// The generator a configuration asks for.
pub fn generator(config: &Config) -> Generator {
    let skip = if config.pending_crashes {
        Vec::new()
    } else {
        allow::pending_crashes()
    };
    Generator::new(config.seed, config.target == Target::Proxy, &skip)
}

/// Runs the fuzzer and returns its totals. A crash or hang restarts the servers and the
/// run goes on, so one run can find several.
pub fn run(config: &Config) -> Report {
    let started = Instant::now();
    let mut generator = generator(config);
    let mut report = Report::new(config.target, config.seed, generator.pool_size());
    let mut sides = Sides::start(config.target);
    let mut case_number = 0u64;
    loop {
        if config.max_cases.is_some_and(|max| case_number >= max)
            || config
                .max_seconds
                .is_some_and(|max| started.elapsed().as_secs() >= max)
        {
            break;
        }
        let steps = generator.case(config.steps_per_case);
        case_number += 1;
        match run_case(&sides, &steps) {
            Outcome::Completed(mismatches) => report.add_case(steps.len(), mismatches),
            Outcome::Fatal(fatal) => {
                let log = sides.subject_log_tail();
                drop(sides);
                let shrunk = if config.shrink {
                    shrink::shrink(config.target, &steps)
                } else {
                    steps[..=fatal.step.min(steps.len() - 1)].to_vec()
                };
                report.add_fatal(case_number, fatal, &shrunk, log);
                sides = Sides::start(config.target);
            }
            Outcome::ReferenceFailed(why) => {
                report.add_reference_failure(case_number, why, &steps);
                drop(sides);
                sides = Sides::start(config.target);
            }
        }
    }
    report.elapsed = started.elapsed();
    report
}
