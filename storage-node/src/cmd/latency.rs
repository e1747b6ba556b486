//! `LATENCY`: the latency monitor's events (see `keyspace::latency_monitor`) and the
//! per-command latency histograms of `latency-tracking`.
//!
//! - `LATENCY LATEST` → for each event class `[event, unix time, latest ms, all-time max ms]`.
//! - `LATENCY HISTORY event` → `[[unix time, ms], ...]`, oldest first; empty if unknown.
//! - `LATENCY RESET [event ...]` → how many event classes were forgotten (all without
//!   arguments).
//! - `LATENCY GRAPH event` → an ASCII graph of the event's samples (see `latency_report`);
//!   `ERR No samples available for event '<event>'` if it has none.
//! - `LATENCY DOCTOR` → a report on the events with advice, in Redis's words.
//! - `LATENCY HISTOGRAM [command ...]` → a map from command name (`container|sub` for
//!   subcommands; a container names all its subcommands) to `{calls, histogram_usec}`, the
//!   cumulative distribution by powers of two of microseconds; unknown commands and those
//!   never timed are left out.
//! - `LATENCY HELP` → the list of subcommands.

use bytes::Bytes;
use slotproxy::cluster::{CommandFlags, CommandSpec, CommandTable};

use super::args::is;
use super::object::reply_help;
use super::{CmdResult, Ctx, Handler};
use crate::keyspace::latency::Histogram;

mod report;

pub const COMMANDS: &[(&str, Handler)] = &[("latency", latency)];

const HELP: &[&str] = &[
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
];

fn latency(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    let monitor = &ctx.keyspace.latency_monitor;
    match args.len() {
        2 if is(sub, "help") => reply_help(&mut ctx.out, &args[0], HELP),
        2 if is(sub, "latest") => {
            let events: Vec<_> = monitor.events().collect();
            ctx.out.array(events.len());
            for (event, series) in events {
                let latest = series.latest();
                ctx.out.array(4);
                ctx.out.bulk(event.as_bytes());
                ctx.out.integer(latest.time as i64);
                ctx.out.integer(latest.latency as i64);
                ctx.out.integer(series.max as i64);
            }
        }
        3 if is(sub, "history") => {
            let samples: Vec<_> = monitor
                .event(&args[2])
                .map(|series| series.history().collect())
                .unwrap_or_default();
            ctx.out.array(samples.len());
            for sample in samples {
                ctx.out.array(2);
                ctx.out.integer(sample.time as i64);
                ctx.out.integer(sample.latency as i64);
            }
        }
        3 if is(sub, "graph") => {
            let Some(series) = monitor.event(&args[2]) else {
                let event = String::from_utf8_lossy(&args[2]);
                return Err(format!("ERR No samples available for event '{event}'").into());
            };
            let graph = report::graph(&String::from_utf8_lossy(&args[2]), series);
            ctx.out.verbatim(b"txt", graph.as_bytes());
        }
        2 if is(sub, "doctor") => {
            let settings = {
                let config = ctx.shared.config();
                report::Settings {
                    slowlog_log_slower_than: config.slowlog_log_slower_than,
                    hz: config.hz,
                }
            };
            let text = report::doctor(monitor, &settings);
            ctx.out.verbatim(b"txt", text.as_bytes());
        }
        _ if is(sub, "reset") => {
            let monitor = &mut ctx.keyspace.latency_monitor;
            let reset = if args.len() == 2 {
                monitor.reset()
            } else {
                args[2..]
                    .iter()
                    .filter(|event| monitor.reset_event(event))
                    .count()
            };
            ctx.out.integer(reset as i64);
        }
        _ if is(sub, "histogram") => histogram(ctx, &args[2..]),
        _ => return Err(slotproxy::protocol::errors::subcommand_syntax_error(args).into()),
    }
    Ok(())
}

/// LATENCY HISTOGRAM: every timed command, or those named (a container with its
/// subcommands), in the order asked.
fn histogram(ctx: &mut Ctx<'_>, names: &[Bytes]) {
    let stats = &ctx.keyspace.command_stats;
    let mut found: Vec<(&'static str, &Histogram)> = Vec::new();
    if names.is_empty() {
        found.extend(stats.latencies());
    } else {
        let table = CommandTable::get();
        for name in names {
            let Some(spec) = table.by_full_name(name) else {
                continue;
            };
            let specs = std::iter::once(spec).chain(spec.subcommands.iter());
            found.extend(specs.filter_map(|spec: &CommandSpec| stats.latency_of(spec)));
        }
    }
    ctx.out.map(found.len());
    for (name, histogram) in found {
        ctx.out.bulk(name.as_bytes());
        ctx.out.map(2);
        ctx.out.bulk(b"calls");
        ctx.out.integer(histogram.total() as i64);
        ctx.out.bulk(b"histogram_usec");
        let points = histogram.cumulative_by_powers_of_two();
        ctx.out.map(points.len());
        for (micros, count) in points {
            ctx.out.integer(micros as i64);
            ctx.out.integer(count as i64);
        }
    }
}

/// Records a command's run time as a `command` or `fast-command` event, as Redis's
/// `call()` does for every command it runs.
pub(super) fn record(ctx: &mut Ctx<'_>, spec: &CommandSpec, took: std::time::Duration) {
    if ctx.client.loading {
        return;
    }
    let event = if spec.flags.contains(CommandFlags::FAST) {
        "fast-command"
    } else {
        "command"
    };
    let millis = took.as_micros() as u64 / 1000;
    ctx.keyspace.latency_monitor.add_if_needed(event, millis);
}
