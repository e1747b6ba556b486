//! `MEMORY`: what the node's memory is used for.
//!
//! - `MEMORY USAGE key [SAMPLES count]` → an estimate of the bytes the key and its value use
//!   in this node's layout (not Redis's numbers); null if the key is missing. `SAMPLES` is
//!   validated like Redis (a negative count is a syntax error); values need no sampling.
//! - `MEMORY STATS` → a map in Redis 7.0's order: `peak.allocated`, `total.allocated`,
//!   `startup.allocated`, `replication.backlog`, `clients.slaves`, `clients.normal`,
//!   `cluster.links`, `aof.buffer`, `lua.caches`, `functions.caches`, one `db.N` map
//!   (`overhead.hashtable.main`, `overhead.hashtable.expires`,
//!   `overhead.hashtable.slot-to-keys`) per database holding keys, `overhead.total`, `keys.count`, `keys.bytes-per-key`,
//!   `dataset.bytes`, `dataset.percentage`, `peak.percentage`, `allocator.allocated`,
//!   `allocator.active`, `allocator.resident`, `allocator-fragmentation.ratio` / `.bytes`,
//!   `allocator-rss.ratio` / `.bytes`, `rss-overhead.ratio` / `.bytes`, `fragmentation`,
//!   `fragmentation.bytes`. Allocation figures are jemalloc's own counters
//!   (`server::allocator`), RSS the kernel's; the client figures are their query and output
//!   buffers. The node keeps no separate expires table or slot-to-keys index (its tables are
//!   per slot already), no AOF rewrite buffer and no cluster link buffers it could count, so
//!   those show 0; `lua.caches` and `functions.caches` are not measured and show 0.
//! - `MEMORY MALLOC-STATS` → jemalloc's statistics report, as text.
//! - `MEMORY PURGE` → `+OK` once jemalloc was told to return dirty pages to the system.
//! - `MEMORY HELP` → the list of subcommands.
//!
//! - `MEMORY DOCTOR` → Redis's report on these figures (`memory_doctor`).
//!
//! None of these touch the key's LRU clock or the hit/miss counters.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::args::{self, is};
use super::errors::SYNTAX;
use super::object::{memory_usage, reply_help};
use super::{unknown_subcommand, CmdResult, Ctx, Handler};
use crate::server::allocator;

pub const COMMANDS: &[(&str, Handler)] = &[("memory", memory)];

const MEMORY_HELP: &[&str] = &[
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
];

fn memory(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "help") {
        reply_help(&mut ctx.out, &args[0], MEMORY_HELP);
    } else if is(sub, "usage") {
        usage(ctx, args)?;
    } else if is(sub, "stats") {
        stats(ctx);
    } else if is(sub, "malloc-stats") {
        let report = allocator::report()
            .unwrap_or_else(|| "Stats not supported for the current allocator".into());
        ctx.out.verbatim(b"txt", report.as_bytes());
    } else if is(sub, "doctor") {
        super::memory_doctor::doctor(ctx);
    } else if is(sub, "purge") {
        if !allocator::purge() && crate::mem_allocator().starts_with("jemalloc") {
            return Err("ERR Error purging dirty pages".into());
        }
        ctx.out.ok();
    } else {
        return Err(unknown_subcommand(args));
    }
    Ok(())
}

fn usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut rest = args[3..].iter();
    while let Some(option) = rest.next() {
        match rest.next() {
            Some(count) if is(option, "samples") => {
                if args::int(count)? < 0 {
                    return Err(SYNTAX.into());
                }
            }
            _ => return Err(SYNTAX.into()),
        }
    }
    match ctx.db().peek(&args[2]) {
        None => ctx.out.null(),
        Some(entry) => {
            let usage = memory_usage(entry);
            ctx.out.integer(usage as i64);
        }
    }
    Ok(())
}

/// Redis computes these ratios in single precision and replies them as doubles.
fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        return 0.0;
    }
    (numerator as f32 / denominator as f32) as f64
}

/// The figures MEMORY STATS shows and MEMORY DOCTOR judges (Redis's
/// `getMemoryOverheadData`), taken once.
pub(super) struct Overhead {
    pub peak: u64,
    pub alloc: crate::keyspace::memory::AllocatorStats,
    pub startup: u64,
    pub backlog: u64,
    /// Buffers of replicas and of normal clients.
    pub replicas: u64,
    pub normal: u64,
    /// How many replicas and normal clients are connected.
    pub replica_count: u64,
    pub normal_count: u64,
    /// Each database holding any keys: its index, its keys and its table bytes
    /// (`Db::table_bytes`).
    pub dbs: Vec<(usize, u64, u64)>,
    pub keys: u64,
    pub overhead: u64,
    pub rss: u64,
}

impl Overhead {
    pub fn take(ctx: &Ctx<'_>) -> Overhead {
        let alloc = crate::keyspace::memory::read();
        let backlog = ctx
            .shared
            .replication
            .state()
            .backlog
            .as_ref()
            .map_or(0, |b| b.histlen());
        let (mut replicas, mut normal, mut replica_count, mut normal_count) = (0, 0, 0, 0);
        for client in ctx.shared.clients.snapshot() {
            let buffers = crate::server::client_memory::client_memory(&client);
            if client.replica.load(Relaxed) {
                replicas += buffers;
                replica_count += 1;
            } else {
                normal += buffers;
                normal_count += 1;
            }
        }
        let dbs: Vec<(usize, u64, u64)> = ctx
            .keyspace
            .dbs()
            .iter()
            .enumerate()
            .filter(|(_, db)| !db.is_empty())
            .map(|(index, db)| (index, db.len() as u64, db.table_bytes()))
            .collect();
        let keys: u64 = dbs.iter().map(|(_, len, _)| len).sum();
        let tables: u64 = dbs.iter().map(|(_, _, bytes)| bytes).sum();
        let startup = allocator::startup_allocated();
        Overhead {
            peak: crate::keyspace::memory::peak().max(alloc.allocated),
            alloc,
            startup,
            backlog,
            replicas,
            normal,
            replica_count,
            normal_count,
            overhead: startup + backlog + replicas + normal + tables,
            dbs,
            keys,
            rss: crate::server::stats::process_memory().rss,
        }
    }

    /// `used_memory` less what the node held once started.
    fn net(&self) -> u64 {
        self.alloc.allocated.saturating_sub(self.startup)
    }

    fn dataset(&self) -> u64 {
        self.alloc.allocated.saturating_sub(self.overhead)
    }
}

fn stats(ctx: &mut Ctx<'_>) {
    let m = Overhead::take(ctx);
    let (alloc, peak, startup, backlog) = (m.alloc, m.peak, m.startup, m.backlog);
    let (replicas, normal, keys, overhead, rss) = (m.replicas, m.normal, m.keys, m.overhead, m.rss);
    let (net, dataset, dbs) = (m.net(), m.dataset(), &m.dbs);
    let out = &mut ctx.out;
    out.map(27 + dbs.len());
    let integer = |out: &mut slotproxy::resp::ReplyBuf<'_>, name: &str, value: u64| {
        out.bulk(name.as_bytes());
        out.integer(value as i64);
    };
    integer(out, "peak.allocated", peak);
    integer(out, "total.allocated", alloc.allocated);
    integer(out, "startup.allocated", startup);
    integer(out, "replication.backlog", backlog);
    integer(out, "clients.slaves", replicas);
    integer(out, "clients.normal", normal);
    integer(out, "cluster.links", 0);
    integer(out, "aof.buffer", 0);
    integer(out, "lua.caches", 0);
    integer(out, "functions.caches", 0);
    for (index, _, table_bytes) in dbs {
        out.bulk(format!("db.{index}").as_bytes());
        out.map(3);
        integer(out, "overhead.hashtable.main", *table_bytes);
        integer(out, "overhead.hashtable.expires", 0);
        integer(out, "overhead.hashtable.slot-to-keys", 0);
    }
    integer(out, "overhead.total", overhead);
    integer(out, "keys.count", keys);
    integer(
        out,
        "keys.bytes-per-key",
        net.checked_div(keys).unwrap_or(0),
    );
    integer(out, "dataset.bytes", dataset);
    let double = |out: &mut slotproxy::resp::ReplyBuf<'_>, name: &str, value: f64| {
        out.bulk(name.as_bytes());
        out.double(value);
    };
    double(out, "dataset.percentage", ratio(dataset * 100, net));
    double(out, "peak.percentage", ratio(alloc.allocated * 100, peak));
    integer(out, "allocator.allocated", alloc.allocated);
    integer(out, "allocator.active", alloc.active);
    integer(out, "allocator.resident", alloc.resident);
    double(
        out,
        "allocator-fragmentation.ratio",
        ratio(alloc.active, alloc.allocated),
    );
    let signed = |a: u64, b: u64| a as i64 - b as i64;
    out.bulk(b"allocator-fragmentation.bytes");
    out.integer(signed(alloc.active, alloc.allocated));
    double(
        out,
        "allocator-rss.ratio",
        ratio(alloc.resident, alloc.active),
    );
    out.bulk(b"allocator-rss.bytes");
    out.integer(signed(alloc.resident, alloc.active));
    double(out, "rss-overhead.ratio", ratio(rss, alloc.resident));
    out.bulk(b"rss-overhead.bytes");
    out.integer(signed(rss, alloc.resident));
    double(out, "fragmentation", ratio(rss, alloc.allocated));
    out.bulk(b"fragmentation.bytes");
    out.integer(signed(rss, alloc.allocated));
}
