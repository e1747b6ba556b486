//! The totals of a run: cases, crashes and hangs (with their shrunk reproductions), and
//! reply differences grouped by command family, split into allowed and new.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::compare::Difference;
use super::generate::Step;
use super::runner::{is_new, Fatal, Mismatch};
use super::servers::Target;

/// A crash or hang with the case that caused it.
#[derive(Debug)]
pub struct FatalCase {
    pub case: u64,
    pub fatal: Fatal,
    pub reproduction: Vec<Step>,
    pub log_tail: String,
}

#[derive(Debug)]
pub struct Report {
    pub target: Target,
    pub seed: u64,
    pub pool_size: usize,
    pub cases: u64,
    pub steps: u64,
    pub fatal: Vec<FatalCase>,
    /// Cases the reference (redis-server) could not finish.
    pub reference_failures: Vec<String>,
    /// (family, difference) -> count.
    pub by_family: BTreeMap<(String, Difference), u64>,
    /// (command, difference) -> first example, for differences not on the allow-list.
    pub new: BTreeMap<(String, Difference), Mismatch>,
    /// (command, difference) -> count and first example, for allowed ones.
    pub allowed: BTreeMap<(String, Difference), (u64, Mismatch)>,
    pub elapsed: Duration,
}

impl Report {
    pub fn new(target: Target, seed: u64, pool_size: usize) -> Report {
        Report {
            target,
            seed,
            pool_size,
            cases: 0,
            steps: 0,
            fatal: Vec::new(),
            reference_failures: Vec::new(),
            by_family: BTreeMap::new(),
            new: BTreeMap::new(),
            allowed: BTreeMap::new(),
            elapsed: Duration::ZERO,
        }
    }

    pub fn add_case(&mut self, steps: usize, mismatches: Vec<Mismatch>) {
        self.cases += 1;
        self.steps += steps as u64;
        for m in mismatches {
            *self
                .by_family
                .entry((m.family.clone(), m.difference))
                .or_default() += 1;
            let key = (m.command.clone(), m.difference);
            if is_new(self.target, &m) {
                self.new.entry(key).or_insert(m);
            } else {
                self.allowed.entry(key).or_insert((0, m)).0 += 1;
            }
        }
    }

    pub fn add_fatal(&mut self, case: u64, fatal: Fatal, reproduction: &[Step], log: String) {
        self.cases += 1;
        self.steps += fatal.step as u64 + 1;
        self.fatal.push(FatalCase {
            case,
            fatal,
            reproduction: reproduction.to_vec(),
            log_tail: log,
        });
    }

    pub fn add_reference_failure(&mut self, case: u64, why: String, steps: &[Step]) {
        self.cases += 1;
        let shown: Vec<String> = steps.iter().map(Step::show).collect();
        self.reference_failures
            .push(format!("case {case}: {why}; steps: {}", shown.join(" | ")));
    }

    fn count(&self, difference: Difference) -> u64 {
        self.by_family
            .iter()
            .filter(|((_, d), _)| *d == difference)
            .map(|(_, n)| n)
            .sum()
    }

    /// Whether the run passes: no crash, no hang, no difference missing from the allow-list.
    pub fn passed(&self) -> bool {
        self.fatal.is_empty() && self.new.is_empty()
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let crashes = self.fatal.iter().filter(|f| !f.fatal.hang).count();
        let hangs = self.fatal.len() - crashes;
        let _ = writeln!(
            out,
            "difffuzz target={} seed={} commands={} cases={} steps={} elapsed={:.1}s",
            self.target.name(),
            self.seed,
            self.pool_size,
            self.cases,
            self.steps,
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(out, "crashes={crashes} hangs={hangs}");
        let _ = writeln!(
            out,
            "kind differences={} value differences={} (new kinds of difference: {})",
            self.count(Difference::Kind),
            self.count(Difference::Value),
            self.new.len()
        );
        let _ = writeln!(out, "differences by family:");
        for ((family, difference), n) in &self.by_family {
            let _ = writeln!(out, "  {family:<14} {:<5} {n}", difference.name());
        }
        for f in &self.fatal {
            let kind = if f.fatal.hang { "HANG" } else { "CRASH" };
            let _ = writeln!(out, "{kind} in case {}: {}", f.case, f.fatal.detail);
            let _ = writeln!(out, "  reproduction ({} steps):", f.reproduction.len());
            for step in &f.reproduction {
                let _ = writeln!(out, "    {}", step.show());
            }
            let _ = writeln!(out, "  subject log:\n{}", f.log_tail);
        }
        for failure in &self.reference_failures {
            let _ = writeln!(out, "reference failure: {failure}");
        }
        for ((command, difference), m) in &self.new {
            example(&mut out, "NEW", command, *difference, m);
        }
        for ((command, difference), (n, _)) in &self.allowed {
            let _ = writeln!(
                out,
                "allowed {} difference in {command}: {n}",
                difference.name()
            );
        }
        out
    }

    /// The first example of every allowed difference, to check that an allow-list line
    /// still covers only what its reason says.
    pub fn render_allowed_examples(&self) -> String {
        let mut out = String::new();
        for ((command, difference), (_, m)) in &self.allowed {
            example(&mut out, "allowed", command, *difference, m);
        }
        out
    }
}

fn example(out: &mut String, label: &str, command: &str, difference: Difference, m: &Mismatch) {
    let _ = writeln!(
        out,
        "{label} {} difference in {command}: {}\n  subject:   {}\n  reference: {}",
        difference.name(),
        m.step,
        m.subject,
        m.reference
    );
    if !m.before.is_empty() {
        let _ = writeln!(out, "  after: {}", m.before.join(" | "));
    }
}
