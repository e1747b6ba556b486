//! Shrinking a case that crashes or hangs the subject: drop steps, then arguments, while
//! it still does, so the saved regression test is as short as the bug allows.

use super::generate::Step;
use super::runner::{run_case, Outcome};
use super::servers::{Sides, Target};

/// Most reproduction attempts one shrink may make (each may restart the servers).
const MAX_ATTEMPTS: usize = 40;

/// The shortest variant of `steps` found that still crashes or hangs the subject (the
/// steps up to the fatal one if shrinking cannot reproduce it).
pub fn shrink(target: Target, steps: &[Step]) -> Vec<Step> {
    let mut attempts = 0;
    let mut sides = Sides::start(target);
    let fails = |candidate: &[Step], sides: &mut Sides, attempts: &mut usize| -> bool {
        *attempts += 1;
        match run_case(sides, candidate) {
            Outcome::Fatal(_) => {
                *sides = Sides::start(target);
                true
            }
            Outcome::ReferenceFailed(_) => {
                *sides = Sides::start(target);
                false
            }
            Outcome::Completed(_) => false,
        }
    };
    let mut best = steps.to_vec();
    if !fails(&best, &mut sides, &mut attempts) {
        return best;
    }
    // Drop whole steps, last first (later steps are less likely to be needed).
    let mut i = best.len();
    while i > 0 && attempts < MAX_ATTEMPTS {
        i -= 1;
        if best.len() == 1 {
            break;
        }
        let mut candidate = best.clone();
        candidate.remove(i);
        if fails(&candidate, &mut sides, &mut attempts) {
            best = candidate;
        }
    }
    // Drop arguments after the command words.
    for s in 0..best.len() {
        let fixed = best[s].name.split('|').count();
        let mut a = best[s].args.len();
        while a > fixed && attempts < MAX_ATTEMPTS {
            a -= 1;
            let mut candidate = best.clone();
            candidate[s].args.remove(a);
            if fails(&candidate, &mut sides, &mut attempts) {
                best = candidate;
            }
        }
    }
    best
}
