//! Random sequences of adds, trims, deletes, group reads, acks and claims on one stream,
//! checked against a real redis-server: every reply, and after every command the groups
//! (XINFO GROUPS: last-delivered id, entries-read, lag, counts) and their PEL summaries.
//! Idle-time arguments are 0 or an hour, so which entries qualify never depends on the
//! clock; replies that show times are left to `streams_groups.rs`.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::Differential;

const KEY: &str = "s";
const GROUPS: &[&str] = &["g1", "g2"];

type Command = Vec<String>;

fn group() -> impl Strategy<Value = String> {
    prop::sample::select(GROUPS).prop_map(str::to_string)
}

fn consumer() -> impl Strategy<Value = String> {
    prop::sample::select(&["c1", "c2", "c3"][..]).prop_map(str::to_string)
}

/// An id near the others, so reads, claims and acks hit entries and PEL entries.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (1u64..40, 0u64..3).prop_map(|(ms, seq)| format!("{ms}-{seq}")),
        1 => Just("0-0".to_string()),
        1 => Just("0".to_string()),
    ]
}

/// A position for XGROUP CREATE / SETID.
fn position() -> impl Strategy<Value = String> {
    prop_oneof![3 => id(), 1 => Just("$".to_string())]
}

fn idle() -> impl Strategy<Value = String> {
    prop::sample::select(&["0", "3600000"][..]).prop_map(str::to_string)
}

fn words(parts: &[&str]) -> Command {
    parts.iter().map(|p| p.to_string()).collect()
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        8 => (id(), 0u64..100).prop_map(|(id, v)| {
            words(&["XADD", KEY, &id, "f", &v.to_string()])
        }),
        3 => prop::collection::vec(id(), 1..3).prop_map(|ids| {
            let mut c = words(&["XDEL", KEY]);
            c.extend(ids);
            c
        }),
        1 => (0u64..10).prop_map(|n| words(&["XTRIM", KEY, "MAXLEN", &n.to_string()])),
        1 => id().prop_map(|id| words(&["XTRIM", KEY, "MINID", &id])),
        2 => (group(), position(), any::<bool>(), prop::option::of(-1i64..8)).prop_map(
            |(g, pos, mkstream, entries_read)| {
                let mut c = words(&["XGROUP", "CREATE", KEY, &g, &pos]);
                if mkstream {
                    c.push("MKSTREAM".into());
                }
                if let Some(n) = entries_read {
                    c.extend(["ENTRIESREAD".to_string(), n.to_string()]);
                }
                c
            }
        ),
        1 => (group(), position(), prop::option::of(-1i64..8)).prop_map(|(g, pos, n)| {
            let mut c = words(&["XGROUP", "SETID", KEY, &g, &pos]);
            if let Some(n) = n {
                c.extend(["ENTRIESREAD".to_string(), n.to_string()]);
            }
            c
        }),
        1 => group().prop_map(|g| words(&["XGROUP", "DESTROY", KEY, &g])),
        1 => (group(), consumer()).prop_map(|(g, c)| words(&["XGROUP", "CREATECONSUMER", KEY, &g, &c])),
        1 => (group(), consumer()).prop_map(|(g, c)| words(&["XGROUP", "DELCONSUMER", KEY, &g, &c])),
        8 => (group(), consumer(), prop::option::of(0u64..4), any::<bool>(), prop_oneof![3 => Just(">".to_string()), 1 => id()]).prop_map(
            |(g, c, count, noack, from)| {
                let mut cmd = words(&["XREADGROUP", "GROUP", &g, &c]);
                if let Some(n) = count {
                    cmd.extend(["COUNT".to_string(), n.to_string()]);
                }
                if noack {
                    cmd.push("NOACK".into());
                }
                cmd.extend(["STREAMS".to_string(), KEY.to_string(), from]);
                cmd
            }
        ),
        4 => (group(), prop::collection::vec(id(), 1..4)).prop_map(|(g, ids)| {
            let mut c = words(&["XACK", KEY, &g]);
            c.extend(ids);
            c
        }),
        4 => (group(), consumer(), idle(), prop::collection::vec(id(), 1..3), prop::sample::subsequence(&["JUSTID", "FORCE"][..], 0..=2), prop::option::of(0u64..5), prop::option::of(id())).prop_map(
            |(g, c, idle, ids, flags, retry, last)| {
                let mut cmd = words(&["XCLAIM", KEY, &g, &c, &idle]);
                cmd.extend(ids);
                cmd.extend(flags.iter().map(|f| f.to_string()));
                if let Some(n) = retry {
                    cmd.extend(["RETRYCOUNT".to_string(), n.to_string()]);
                }
                if let Some(id) = last {
                    cmd.extend(["LASTID".to_string(), id]);
                }
                cmd
            }
        ),
        3 => (group(), consumer(), idle(), id(), prop::option::of(1u64..4), any::<bool>()).prop_map(
            |(g, c, idle, start, count, justid)| {
                let mut cmd = words(&["XAUTOCLAIM", KEY, &g, &c, &idle, &start]);
                if let Some(n) = count {
                    cmd.extend(["COUNT".to_string(), n.to_string()]);
                }
                if justid {
                    cmd.push("JUSTID".into());
                }
                cmd
            }
        ),
        1 => group().prop_map(|g| words(&["XPENDING", KEY, &g])),
        1 => Just(words(&["DEL", KEY])),
    ]
}

fn compare(d: &mut Differential, args: &[String]) -> Result<(), TestCaseError> {
    d.compare(args).map_err(TestCaseError::fail)
}

#[test]
fn random_group_sequences_match_redis_reply_by_reply() {
    let d = RefCell::new(Differential::start());
    let sequences = prop::collection::vec(command(), 1..50);
    TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    })
    .run(&sequences, |commands| {
        let mut d = d.borrow_mut();
        compare(&mut d, &words(&["FLUSHALL"]))?;
        compare(
            &mut d,
            &words(&["CONFIG", "SET", "stream-node-max-entries", "3"]),
        )?;
        for command in &commands {
            compare(&mut d, command)?;
            compare(&mut d, &words(&["XINFO", "GROUPS", KEY]))?;
            for group in GROUPS {
                compare(&mut d, &words(&["XPENDING", KEY, group]))?;
            }
        }
        Ok(())
    })
    .unwrap();
}
