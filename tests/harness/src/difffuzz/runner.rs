//! Runs cases: each starts from flushed servers with the prepared keys, sends every step to
//! both sides, checks after each step that the subject is alive, and compares the replies.

use std::time::Duration;

use super::compare::{compare, show, Difference};
use super::conn::{words, Conn, Failure, Reply};
use super::generate::Step;
use super::policy::{self, Comparison};
use super::prepare;
use super::servers::{Sides, Target};
use slotproxy::resp::Frame;

/// How long a reply may take before the server counts as hung. Generous: two slow cores
/// shared with compilers, a debug build, and 1 MB arguments.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// What one case ended with.
#[derive(Debug)]
pub enum Outcome {
    /// Every step got a reply and the subject stayed alive; the differences seen.
    Completed(Vec<Mismatch>),
    /// The subject died or stopped answering after step `step`.
    Fatal(Fatal),
    /// The reference failed (its own crash or a limit), so the case says nothing.
    ReferenceFailed(String),
}

/// A crash or a hang of the subject.
#[derive(Clone, Debug)]
pub struct Fatal {
    pub hang: bool,
    /// Index of the step after which it was seen.
    pub step: usize,
    pub detail: String,
}

/// A reply difference.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Command name as the allow-list names it (`eval/get` for a command inside a script).
    pub command: String,
    pub family: String,
    pub difference: Difference,
    pub step: String,
    /// The steps of the case before this one, to reproduce it.
    pub before: Vec<String>,
    pub subject: String,
    pub reference: String,
}

/// Table names of a step: the command, and the command its script runs, if any.
fn names(step: &Step) -> (String, Option<String>) {
    (step.name.clone(), step.inner.clone())
}

/// The most lenient of two comparisons.
fn lenient(a: Comparison, b: Comparison) -> Comparison {
    use Comparison::*;
    match (a, b) {
        (KindOnly, _) | (_, KindOnly) => KindOnly,
        (Length, _) | (_, Length) => Length,
        (Unordered, _) | (_, Unordered) => Unordered,
        _ => Exact,
    }
}

/// Runs `steps` once on `sides`. The caller restarts the sides after a fatal outcome.
pub fn run_case(sides: &Sides, steps: &[Step]) -> Outcome {
    let mut subject = match Conn::connect(sides.subject.port, REPLY_TIMEOUT) {
        Ok(c) => c,
        Err(f) => return fatal(sides, 0, format!("cannot connect: {f:?}")),
    };
    let Ok(mut reference) = Conn::connect(sides.reference.port, REPLY_TIMEOUT) else {
        return Outcome::ReferenceFailed("cannot connect to redis-server".into());
    };
    let mut setup = vec![
        words(&["FLUSHALL"]),
        words(&["SCRIPT", "FLUSH"]),
        words(&["FUNCTION", "FLUSH"]),
    ];
    setup.extend(prepare::commands());
    for command in &setup {
        match subject.call(command) {
            Err(f) => return fatal(sides, 0, format!("setup {}: {f:?}", show_words(command))),
            // A type the subject does not implement yet: the key is left out on both
            // sides, so that both start from the same data.
            Ok((frame, _)) if frame.is_error() => continue,
            Ok(_) => {}
        }
        if reference.call(command).is_err() {
            return Outcome::ReferenceFailed("setup failed on redis-server".into());
        }
    }
    let mut mismatches = Vec::new();
    let mut diverged = false;
    // Inside MULTI, EXEC answers for every queued command: it is compared as leniently as
    // the most lenient of them.
    let mut queued: Option<Comparison> = None;
    // The commands queued since MULTI: a difference in EXEC's reply is a known one when one
    // of them has it listed (`exec/command|count` is allowed by the `command` entry).
    let mut queued_names: Vec<String> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        // Both requests go out before either reply is read, so the two servers work at the
        // same time.
        let subject_sent = subject.send(&step.args);
        let reference_sent = reference.send(&step.args);
        let subject_reply = subject_sent.and_then(|()| subject.read());
        let mut reference_reply = reference_sent.and_then(|()| reference.read());
        if let Err(failure) = &subject_reply {
            if *failure == Failure::Timeout {
                return Outcome::Fatal(Fatal {
                    hang: true,
                    step: index,
                    detail: format!("no reply within {REPLY_TIMEOUT:?} to {}", step.show()),
                });
            }
        }
        if let Some((who, failure)) = sides.subject_liveness(REPLY_TIMEOUT) {
            return Outcome::Fatal(Fatal {
                hang: failure == Failure::Timeout,
                step: index,
                detail: format!("{who}: {failure:?} after {}", step.show()),
            });
        }
        if let Err(failure) = &reference_reply {
            if *failure != Failure::Closed || !sides.reference_alive(REPLY_TIMEOUT) {
                return Outcome::ReferenceFailed(format!("{failure:?} after {}", step.show()));
            }
        }
        let (outer, inner) = names(step);
        let mut how = policy::comparison(&outer, &step.args);
        if let Some(inner) = &inner {
            how = lenient(how, policy::comparison(inner, &step.args));
        }
        let is_exec = outer == "exec";
        if let (Some(q), true) = (queued, is_exec) {
            how = lenient(how, q);
        }
        if queued.is_none() && stale_errno(step, &subject_reply, &reference_reply) {
            reference_reply = ask_fresh_connection(sides, step);
        }
        let refused_by_cluster = cluster_refusal(sides.target, &subject_reply);
        let difference = if diverged || refused_by_cluster {
            None
        } else {
            compare(&subject_reply, &reference_reply, how)
        };
        if let Some(difference) = difference {
            let command = match &inner {
                Some(inner) => format!("{outer}/{inner}"),
                None if is_exec => queued_names
                    .iter()
                    .map(|name| format!("exec/{name}"))
                    .find(|name| super::allow::is_allowed(sides.target, name, difference))
                    .unwrap_or_else(|| outer.clone()),
                None => outer.clone(),
            };
            mismatches.push(Mismatch {
                family: family_of(&outer, inner.as_deref()),
                command,
                difference,
                step: step.show(),
                before: steps[..index].iter().map(Step::show).collect(),
                subject: show(&subject_reply),
                reference: show(&reference_reply),
            });
        }
        // What the reference did and the subject could not (an unimplemented command that
        // wrote a key) leaves the two data sets apart for the rest of the case.
        // So does what the reference did and the subject refused (SCRIPT DEBUG YES, which
        // the proxy refuses by design, switches the reference's connection to debugging).
        let refused_what_reference_did = difference == Some(Difference::Kind)
            && matches!(&subject_reply, Ok((frame, _)) if frame.is_error())
            && matches!(&reference_reply, Ok((frame, _)) if !frame.is_error());
        if difference == Some(Difference::Unimplemented)
            || refused_by_cluster
            || refused_what_reference_did
        {
            diverged = true;
        }
        track_transaction(&mut queued, &outer, how, &reference_reply);
        match (&queued, outer.as_str()) {
            (None, _) | (Some(_), "multi") => queued_names.clear(),
            (Some(_), _) => queued_names.push(inner.clone().unwrap_or_else(|| outer.clone())),
        }
        if policy::diverges(&outer, &step.args)
            || inner
                .as_deref()
                .is_some_and(|i| policy::diverges(i, &step.args))
        {
            diverged = true;
        }
        // A connection that failed on either side (closed, garbage) carries no more
        // comparable state: the case ends here.
        if subject_reply.is_err() || reference_reply.is_err() {
            break;
        }
    }
    Outcome::Completed(mismatches)
}

/// Whether the subject refused a request by the cluster's key rule. Through the proxy, a
/// request whose keys span slots is refused as by any Redis Cluster; the generator's
/// mutations put values that are not hash-tagged into key positions, so this is the
/// cluster's rule at work, not a difference from a standalone server. What the reference
/// did with the request and the subject did not leaves their data apart, so the rest of the
/// case compares liveness only.
/// Scripts are held to the same rule: a key a script touches without declaring it may live
/// on another node than the one the script runs on.
/// So is the proxy's queue-time refusal inside MULTI of a command that needs every node or
/// the proxy itself (KEYS, FLUSHALL, FUNCTION LOAD, ...): a transaction runs on one node
/// (README, compatibility table, "transactions" row).
fn cluster_refusal(target: Target, reply: &Result<Reply, Failure>) -> bool {
    const NON_LOCAL: &[u8] = b"ERR Script attempted to access a non local key in a cluster node";
    const NOT_IN_TRANSACTION: &[u8] = b"cannot be part of a transaction";
    let contains = |text: &[u8], part: &[u8]| text.windows(part.len()).any(|w| w == part);
    target == Target::Proxy
        && matches!(reply, Ok((Frame::Error(text), _))
            if text.starts_with(b"CROSSSLOT ")
                || text.starts_with(NON_LOCAL)
                || (text.starts_with(b"ERR slotproxy: ") && contains(text, NOT_IN_TRANSACTION)))
}

/// Whether the reference's reply to `step` may be Redis 7.0's stale-errno refusal. SORT
/// reads each weight with `strtod` without clearing `errno` first, so an `ERANGE` an earlier
/// command left behind (a `1e-320` or `1e309` argument) makes it refuse numbers it reads
/// fine: `One or more scores can't be converted into double`. Only worth a second look when
/// the subject sorted the same request.
fn stale_errno(
    step: &Step,
    subject: &Result<Reply, Failure>,
    reference: &Result<Reply, Failure>,
) -> bool {
    const NOT_DOUBLE: &[u8] = b"ERR One or more scores can't be converted into double";
    matches!(step.name.as_str(), "sort" | "sort_ro")
        && step.inner.is_none()
        && matches!(subject, Ok((frame, _)) if !frame.is_error())
        && matches!(reference, Ok((Frame::Error(text), _)) if text.as_ref() == NOT_DOUBLE)
}

/// The reference's reply to `step` on a new connection. Accepting a client clears Redis's
/// stale `errno` (its accept loop ends on `EAGAIN`), so this is the answer Redis gives when
/// no earlier command interferes. SORT depends on no connection state outside MULTI.
fn ask_fresh_connection(sides: &Sides, step: &Step) -> Result<Reply, Failure> {
    Conn::connect(sides.reference.port, REPLY_TIMEOUT).and_then(|mut c| c.call(&step.args))
}

/// Keeps `queued` (the comparison EXEC will get) in step with MULTI/EXEC/DISCARD/RESET,
/// following the reference's replies.
fn track_transaction(
    queued: &mut Option<Comparison>,
    name: &str,
    how: Comparison,
    reply: &Result<Reply, Failure>,
) {
    let ok = matches!(reply, Ok((frame, _)) if !frame.is_error());
    match name {
        "multi" if ok && queued.is_none() => *queued = Some(Comparison::Exact),
        "exec" | "discard" | "reset" => *queued = None,
        _ => {
            if let Some(q) = queued {
                *q = lenient(*q, how);
            }
        }
    }
}

fn fatal(sides: &Sides, step: usize, detail: String) -> Outcome {
    let hang = matches!(
        sides.subject_liveness(REPLY_TIMEOUT),
        Some((_, Failure::Timeout))
    );
    Outcome::Fatal(Fatal { hang, step, detail })
}

fn show_words(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| super::generate::show_arg(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The family a difference is counted under: the docs group of the command (of the inner
/// command for scripts that run one).
fn family_of(outer: &str, inner: Option<&str>) -> String {
    let table = slotproxy::cluster::CommandTable::get();
    let name = inner.unwrap_or(outer);
    table
        .by_full_name(name.as_bytes())
        .map(policy::family)
        .unwrap_or_else(|| name.to_string())
}

/// Whether a target's difference is new (not on the allow-list).
pub fn is_new(target: Target, mismatch: &Mismatch) -> bool {
    !super::allow::is_allowed(target, &mismatch.command, mismatch.difference)
}
