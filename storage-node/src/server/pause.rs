//! Client pause (Redis's `pauseClients`): for a while, clients' commands wait instead of
//! running, all of them (`ALL`) or only those that may write or be propagated (`WRITE`).
//!
//! Two owners pause independently, as in Redis 7.0: `CLIENT PAUSE` and a coordinated
//! `FAILOVER`. `CLIENT UNPAUSE` lifts only its own pause. The strictest mode and the latest
//! end among the active pauses apply. While any pause lasts, keys are not expired (neither
//! by the active cycle nor when a command finds them): a failover target must receive
//! every change the old master made, and a paused dataset stays still.
//!
//! A connection whose next command is paused keeps it queued and waits in
//! [`Pause::changed_or_over`], so the command runs, in order, once the pause ends.

use std::sync::atomic::{
    AtomicBool, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::time::{Duration, Instant};

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};
use tokio::sync::watch;

use super::clients::Client;

/// What a pause stops. `All` is the stricter one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Commands that may write or be propagated (`write` or `may_replicate`, EXEC of such).
    Write,
    /// Every command of every client but replicas.
    All,
}

/// Who asked for a pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PausePurpose {
    ClientCommand,
    Failover,
}

#[derive(Clone, Copy, Default)]
struct State {
    client_command: Option<(PauseMode, Instant)>,
    failover: Option<(PauseMode, Instant)>,
    /// Bumped on every change, so a waiter can tell it missed one.
    generation: u64,
}

impl State {
    /// The mode in force now and when it ends.
    fn active(&self, now: Instant) -> Option<(PauseMode, Instant)> {
        [self.client_command, self.failover]
            .into_iter()
            .flatten()
            .filter(|&(_, end)| end > now)
            .reduce(|(a, end_a), (b, end_b)| (a.max(b), end_a.max(end_b)))
    }
}

pub struct Pause {
    state: watch::Sender<State>,
    /// Connections whose command waits for a pause's end (they count in INFO's
    /// `blocked_clients`, as Redis's postponed clients do).
    held: AtomicUsize,
    /// Whether a pause was set and not lifted (it may have ended since). Every command asks
    /// whether a pause holds it; this lets the unpaused case skip the state's lock and the
    /// clock read (about 200 instructions a command).
    set: AtomicBool,
}

impl Default for Pause {
    fn default() -> Self {
        Pause {
            state: watch::channel(State::default()).0,
            held: AtomicUsize::new(0),
            set: AtomicBool::new(false),
        }
    }
}

/// A pause's end `millis` from now; a time too far to represent is a century away.
pub fn end_after(millis: u64) -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_millis(millis))
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

impl Pause {
    /// Pauses for `purpose` until `end` in `mode`. A pause already in force for the same
    /// purpose keeps its later end and its stricter mode, as Redis's `pauseClients`.
    pub fn pause(&self, purpose: PausePurpose, mode: PauseMode, end: Instant) {
        self.state.send_modify(|state| {
            let slot = match purpose {
                PausePurpose::ClientCommand => &mut state.client_command,
                PausePurpose::Failover => &mut state.failover,
            };
            *slot = Some(match *slot {
                Some((old_mode, old_end)) if old_end > Instant::now() => {
                    (old_mode.max(mode), old_end.max(end))
                }
                _ => (mode, end),
            });
            state.generation += 1;
            // Under the state's lock, so the flag and the state change together.
            self.set.store(true, Release);
        });
    }

    /// Ends `purpose`'s pause; the paused clients whose commands no other pause holds run.
    pub fn unpause(&self, purpose: PausePurpose) {
        self.state.send_modify(|state| {
            match purpose {
                PausePurpose::ClientCommand => state.client_command = None,
                PausePurpose::Failover => state.failover = None,
            }
            state.generation += 1;
            let set = state.client_command.is_some() || state.failover.is_some();
            self.set.store(set, Release);
        });
    }

    /// Whether any pause is in force (keys do not expire meanwhile).
    pub fn is_paused(&self) -> bool {
        self.set.load(Acquire) && self.state.borrow().active(Instant::now()).is_some()
    }

    /// When `client`'s command `args` must wait for the end of a pause: the pause state's
    /// generation, for [`changed_or_over`](Self::changed_or_over). A command the node will
    /// refuse anyway (unknown, wrong arity) is not held, as Redis checks those first.
    pub fn postpones(
        &self,
        shared: &super::Shared,
        client: &Client,
        args: &[Bytes],
    ) -> Option<u64> {
        if !self.set.load(Acquire) {
            return None;
        }
        let state = *self.state.borrow();
        let (mode, _) = state.active(Instant::now())?;
        if client.master {
            return None;
        }
        let (_, spec) = crate::cmd::check_request(shared, client, args).ok()?;
        let held = match mode {
            PauseMode::All => true,
            PauseMode::Write => may_replicate(spec) || exec_may_replicate(spec, client),
        };
        held.then_some(state.generation)
    }

    /// A connection starts (`true`) or stops waiting for a pause's end.
    pub fn count_held(&self, held: bool) {
        if held {
            self.held.fetch_add(1, Relaxed);
        } else {
            self.held.fetch_sub(1, Relaxed);
        }
    }

    /// Connections waiting for a pause's end.
    pub fn held(&self) -> usize {
        self.held.load(Relaxed)
    }

    /// Returns when the pause state changed since `generation` or the pause in force ends.
    pub async fn changed_or_over(&self, generation: u64) {
        let mut changes = self.state.subscribe();
        let end = {
            let state = changes.borrow_and_update();
            if state.generation != generation {
                return;
            }
            match state.active(Instant::now()) {
                Some((_, end)) => end,
                None => return,
            }
        };
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(end)) => {}
        }
    }
}

/// Redis's `is_may_replicate_command` for one command.
fn may_replicate(spec: &CommandSpec) -> bool {
    spec.flags.contains(CommandFlags::WRITE) || spec.flags.contains(CommandFlags::MAY_REPLICATE)
}

/// EXEC of a transaction that queued a command that may write or be propagated.
fn exec_may_replicate(spec: &CommandSpec, client: &Client) -> bool {
    if spec.name != "exec" {
        return false;
    }
    let table = CommandTable::get();
    client.multi.as_ref().is_some_and(|multi| {
        multi
            .queued()
            .iter()
            .filter_map(|args| table.lookup(args).ok())
            .any(may_replicate)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strictest_mode_and_latest_end_of_the_active_pauses_apply() {
        let pause = Pause::default();
        let now = Instant::now();
        let soon = now + Duration::from_secs(60);
        let later = now + Duration::from_secs(120);
        pause.pause(PausePurpose::ClientCommand, PauseMode::All, soon);
        pause.pause(PausePurpose::ClientCommand, PauseMode::Write, later);
        assert_eq!(
            pause.state.borrow().active(now),
            Some((PauseMode::All, later))
        );
        pause.pause(PausePurpose::Failover, PauseMode::Write, later);
        pause.unpause(PausePurpose::ClientCommand);
        assert_eq!(
            pause.state.borrow().active(now),
            Some((PauseMode::Write, later))
        );
        pause.unpause(PausePurpose::Failover);
        assert!(!pause.is_paused());
    }

    #[test]
    fn a_pause_whose_end_passed_is_over() {
        let pause = Pause::default();
        let past = Instant::now();
        pause.pause(PausePurpose::ClientCommand, PauseMode::All, past);
        assert!(!pause.is_paused());
    }
}
