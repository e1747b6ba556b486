//! `INFO [section ...]` → a bulk string (verbatim text in RESP3) of `# Section` headers and
//! `field:value` lines, with Redis 7.0's field names and formats.
//!
//! Sections: `server`, `clients`, `memory`, `persistence`, `stats`, `replication`, `cpu`,
//! `modules` (always empty), `commandstats`, `errorstats`, `latencystats`, `cluster`,
//! `keyspace`; `default` and no argument give them all but `commandstats` and
//! `latencystats`, `all` and `everything` give them all.
//! Names are case-insensitive; sections come out in Redis's order whatever order they were
//! asked in; unknown names add nothing.
//!
//! Every value is real: `used_memory` is what jemalloc holds (`keyspace::memory`), RSS is
//! read from `/proc`, client buffers from the clients (`server::client_memory`), CPU times
//! come from `/proc/self/stat`, counters from the node's statistics and keyspace. Fields
//! Redis has but the node cannot fill truthfully are left out rather than invented.
//! `commandstats` and `latencystats` list commands in name order (Redis's order is its hash table's); a blocked command counts
//! when it is served. `errorstats` counts the error replies of commands (not those written
//! while a script is busy, which never reach the keyspace).

use std::fmt::Write as _;

use bytes::Bytes;

use super::args::text;
use super::connection::COMPATIBLE_VERSION;
use super::{CmdResult, Ctx, Handler};
use crate::keyspace::access::lru_clock;
use crate::keyspace::Db;
use crate::server::stats::{self, KeyspaceCounters, Stats};
use crate::server::{client_memory, client_peaks};

pub const COMMANDS: &[(&str, Handler)] = &[("info", info)];

/// Sections in the order Redis writes them.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// At most this many keys are looked at to estimate `avg_ttl`, so INFO stays cheap on a big
/// database (Redis estimates it from samples too).
const AVG_TTL_SAMPLE: usize = 10_000;

fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let wanted = wanted_sections(&args[1..]);
    let mut out = String::new();
    for section in SECTIONS.iter().filter(|s| wanted.contains(s)) {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        write_section(ctx, section, &mut out);
    }
    ctx.out.verbatim(b"txt", out.as_bytes());
    Ok(())
}

/// Sections Redis leaves out of `default` (and of INFO without arguments).
const NOT_DEFAULT: &[&str] = &["commandstats", "latencystats"];

fn default_sections() -> impl Iterator<Item = &'static str> {
    SECTIONS
        .iter()
        .copied()
        .filter(|s| !NOT_DEFAULT.contains(s))
}

fn wanted_sections(names: &[Bytes]) -> Vec<&'static str> {
    if names.is_empty() {
        return default_sections().collect();
    }
    let mut wanted = Vec::new();
    for name in names {
        let name = text(name).to_ascii_lowercase();
        match name.as_str() {
            "default" => wanted.extend(default_sections()),
            "all" | "everything" => wanted.extend_from_slice(SECTIONS),
            other => wanted.extend(SECTIONS.iter().filter(|s| **s == other)),
        }
    }
    wanted
}

/// Appends `name:value\r\n`.
macro_rules! field {
    ($out:expr, $name:expr, $value:expr) => {
        let _ = write!($out, "{}:{}\r\n", $name, $value);
    };
}

fn write_section(ctx: &mut Ctx<'_>, section: &str, out: &mut String) {
    match section {
        "server" => server(ctx, out),
        "clients" => clients(ctx, out),
        "memory" => memory(ctx, out),
        "persistence" => persistence(ctx, out),
        "stats" => stats(ctx, out),
        "replication" => crate::replication::info::write(ctx.shared, out),
        "cpu" => cpu(out),
        "modules" => out.push_str("# Modules\r\n"),
        "commandstats" => {
            out.push_str("# Commandstats\r\n");
            let mut stats: Vec<_> = ctx.keyspace.command_stats.iter().collect();
            stats.sort_by_key(|(name, _)| *name);
            for (name, stat) in stats {
                let usec = stat.nanos / 1000;
                let per_call = if stat.calls > 0 {
                    usec as f64 / stat.calls as f64
                } else {
                    0.0
                };
                let _ = write!(
                    out,
                    "cmdstat_{name}:calls={},usec={usec},usec_per_call={per_call:.2},\
                     rejected_calls={},failed_calls={}\r\n",
                    stat.calls, stat.rejected_calls, stat.failed_calls
                );
            }
        }
        "latencystats" => {
            out.push_str("# Latencystats\r\n");
            let percentiles = ctx
                .shared
                .config()
                .latency_tracking_info_percentiles
                .clone();
            let mut histograms: Vec<_> = ctx.keyspace.command_stats.latencies().collect();
            histograms.sort_by_key(|(name, _)| *name);
            for (name, histogram) in histograms {
                let shown: Vec<String> = percentiles
                    .iter()
                    .map(|&p| format!("p{p}={:.3}", histogram.value_at(p) as f64 / 1000.0))
                    .collect();
                let _ = write!(
                    out,
                    "latency_percentiles_usec_{name}:{}\r\n",
                    shown.join(",")
                );
            }
        }
        "errorstats" => {
            out.push_str("# Errorstats\r\n");
            for (code, count) in ctx.keyspace.error_stats.iter() {
                let _ = write!(out, "errorstat_{code}:count={count}\r\n");
            }
        }
        "cluster" => {
            out.push_str("# Cluster\r\n");
            field!(out, "cluster_enabled", ctx.shared.cluster.is_some() as u8);
        }
        "keyspace" => keyspace(ctx, out),
        _ => {}
    }
}

/// Redis's `bytesToHuman`: `123B`, `1.50K`, `11.43M`, `23.54G`, ...
pub fn bytes_to_human(n: u64) -> String {
    const UNITS: &[(u64, &str)] = &[
        (1 << 50, "P"),
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for &(size, unit) in UNITS {
        if n >= size {
            return format!("{:.2}{unit}", n as f64 / size as f64);
        }
    }
    format!("{n}B")
}

/// `uname -s -r -m`, from `/proc` (no libc calls).
fn os_name() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{} {} {}",
        read("/proc/sys/kernel/ostype"),
        read("/proc/sys/kernel/osrelease"),
        std::env::consts::ARCH
    )
}

/// `cluster` in cluster mode, else `standalone` (INFO `redis_mode`, HELLO's `mode`).
pub fn server_mode(shared: &crate::server::Shared) -> &'static str {
    if shared.cluster.is_some() {
        "cluster"
    } else {
        "standalone"
    }
}

fn server(ctx: &mut Ctx<'_>, out: &mut String) {
    let shared = ctx.shared;
    let config = shared.config().clone();
    let uptime = shared.started.elapsed().as_secs();
    let now_ms = crate::keyspace::unix_time_ms();
    out.push_str("# Server\r\n");
    field!(out, "redis_version", COMPATIBLE_VERSION);
    field!(out, "redis_git_sha1", "00000000");
    field!(out, "redis_git_dirty", 0);
    field!(out, "redis_mode", server_mode(shared));
    field!(out, "os", os_name());
    field!(out, "arch_bits", usize::BITS);
    field!(out, "monotonic_clock", "POSIX clock_gettime");
    field!(out, "multiplexing_api", "epoll");
    field!(out, "process_id", std::process::id());
    field!(out, "process_supervised", "no");
    field!(out, "run_id", shared.run_id);
    field!(out, "tcp_port", shared.tcp_port);
    field!(out, "server_time_usec", now_ms * 1000);
    field!(out, "uptime_in_seconds", uptime);
    field!(out, "uptime_in_days", uptime / 86400);
    field!(out, "hz", config.hz);
    field!(out, "configured_hz", config.hz);
    field!(out, "lru_clock", lru_clock(now_ms));
    let executable = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    field!(out, "executable", executable);
    let config_file = config
        .config_file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    field!(out, "config_file", config_file);
    field!(out, "io_threads_active", 0);
}

fn clients(ctx: &mut Ctx<'_>, out: &mut String) {
    // Replicas are counted in `connected_slaves` instead, as Redis does.
    let connected = ctx
        .shared
        .clients
        .count()
        .saturating_sub(ctx.shared.replication.master.count());
    // Peaks of the last seconds, as the client cron recorded them (see `client_peaks`).
    let now = client_peaks::current_second(ctx.shared);
    let (max_input, max_output) = ctx.shared.client_peaks.recent_max(now);
    out.push_str("# Clients\r\n");
    field!(out, "connected_clients", connected);
    let cluster_connections = ctx
        .shared
        .cluster
        .as_ref()
        .map_or(0, |c| c.connection_count());
    field!(out, "cluster_connections", cluster_connections);
    field!(out, "maxclients", ctx.shared.config().maxclients);
    field!(out, "client_recent_max_input_buffer", max_input);
    field!(out, "client_recent_max_output_buffer", max_output);
    let blocked = ctx.keyspace.blocking.count() + ctx.shared.pause.held();
    field!(out, "blocked_clients", blocked);
    field!(out, "tracking_clients", ctx.keyspace.tracking.clients());
    field!(out, "clients_in_timeout_table", 0);
}

fn memory(ctx: &mut Ctx<'_>, out: &mut String) {
    let allocator = crate::keyspace::memory::read();
    let process = stats::process_memory();
    let used = allocator.allocated;
    let peak = crate::keyspace::memory::peak().max(used);
    let total = stats::total_system_memory();
    let settings = ctx.shared.config().memory.clone();
    let (clients_normal, clients_replicas) = client_memory::clients_memory(ctx.shared);
    let not_counted = client_memory::not_counted_for_evict(ctx.shared);
    out.push_str("# Memory\r\n");
    field!(out, "used_memory", used);
    field!(out, "used_memory_human", bytes_to_human(used));
    field!(out, "used_memory_rss", process.rss);
    field!(out, "used_memory_rss_human", bytes_to_human(process.rss));
    field!(out, "used_memory_peak", peak);
    field!(out, "used_memory_peak_human", bytes_to_human(peak));
    field!(
        out,
        "used_memory_peak_perc",
        format!("{:.2}%", percent(used, peak))
    );
    field!(out, "allocator_allocated", allocator.allocated);
    field!(out, "allocator_active", allocator.active);
    field!(out, "allocator_resident", allocator.resident);
    field!(out, "total_system_memory", total);
    field!(out, "total_system_memory_human", bytes_to_human(total));
    field!(out, "maxmemory", settings.maxmemory);
    field!(out, "maxmemory_human", bytes_to_human(settings.maxmemory));
    field!(out, "maxmemory_policy", settings.policy.name());
    let fragmentation = if used > 0 {
        process.rss as f64 / used as f64
    } else {
        0.0
    };
    field!(
        out,
        "mem_fragmentation_ratio",
        format!("{fragmentation:.2}")
    );
    field!(
        out,
        "mem_fragmentation_bytes",
        process.rss as i64 - used as i64
    );
    field!(out, "mem_not_counted_for_evict", not_counted);
    field!(out, "mem_clients_slaves", clients_replicas);
    field!(out, "mem_clients_normal", clients_normal);
    field!(out, "mem_aof_buffer", ctx.shared.aof.buffer_length());
    field!(out, "mem_allocator", crate::mem_allocator());
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        part as f64 * 100.0 / whole as f64
    } else {
        0.0
    }
}

fn persistence(ctx: &mut Ctx<'_>, out: &mut String) {
    // The RDB file loads before clients are served, so `loading` is always 0 when one
    // asks. The `current_*` figures describe the running snapshot (BGSAVE's or an AOF
    // rewrite's, as Redis's describe either child): the snapshot's pre-images
    // stand for Redis's copy-on-write pages (see `persistence::snapshot`).
    let saves = &ctx.shared.persistence;
    let bg = saves.background.figures();
    out.push_str("# Persistence\r\n");
    field!(out, "loading", 0);
    field!(out, "async_loading", 0);
    field!(out, "current_cow_peak", bg.cow_peak);
    field!(out, "current_cow_size", bg.cow_size);
    // Measured at every chunk, so never stale by more than one.
    field!(out, "current_cow_size_age", 0);
    let percent = if bg.keys_total > 0 {
        bg.keys_done as f64 * 100.0 / bg.keys_total as f64
    } else {
        0.0
    };
    field!(out, "current_fork_perc", format!("{percent:.2}"));
    field!(out, "current_save_keys_processed", bg.keys_done);
    field!(out, "current_save_keys_total", bg.keys_total);
    field!(
        out,
        "rdb_changes_since_last_save",
        saves.changes_since_save(ctx.keyspace)
    );
    field!(out, "rdb_bgsave_in_progress", u8::from(bg.in_progress));
    field!(out, "rdb_last_save_time", saves.last_save_unix());
    field!(
        out,
        "rdb_last_bgsave_status",
        if bg.last_ok { "ok" } else { "err" }
    );
    field!(out, "rdb_last_bgsave_time_sec", bg.last_time_sec);
    field!(out, "rdb_current_bgsave_time_sec", bg.current_time_sec);
    field!(out, "rdb_saves", saves.saves());
    field!(out, "rdb_last_cow_size", bg.last_cow_size);
    let (loaded, expired) = saves.last_load();
    field!(out, "rdb_last_load_keys_expired", expired);
    field!(out, "rdb_last_load_keys_loaded", loaded);
    aof_fields(ctx, out);
}

/// INFO persistence's AOF block, in Redis 7.0's order. A rewrite's copy-on-write is its
/// snapshot's pre-images (see `persistence::snapshot`); nothing forks (no module fork).
fn aof_fields(ctx: &mut Ctx<'_>, out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let aof = &ctx.shared.aof;
    let stats = &aof.stats;
    let status = |ok: bool| if ok { "ok" } else { "err" };
    field!(out, "aof_enabled", u8::from(aof.is_on()));
    let background = &ctx.shared.persistence.background;
    field!(
        out,
        "aof_rewrite_in_progress",
        u8::from(background.rewriting())
    );
    field!(
        out,
        "aof_rewrite_scheduled",
        u8::from(background.aof_scheduled.load(Relaxed))
    );
    field!(
        out,
        "aof_last_rewrite_time_sec",
        stats.last_rewrite_time_sec.load(Relaxed)
    );
    field!(
        out,
        "aof_current_rewrite_time_sec",
        background.rewrite_time_sec()
    );
    field!(
        out,
        "aof_last_bgrewrite_status",
        status(stats.last_rewrite_ok.load(Relaxed))
    );
    field!(out, "aof_rewrites", stats.rewrites.load(Relaxed));
    field!(
        out,
        "aof_rewrites_consecutive_failures",
        stats.consecutive_failures.load(Relaxed)
    );
    field!(
        out,
        "aof_last_write_status",
        status(!stats.last_write_failed.load(Relaxed))
    );
    field!(out, "aof_last_cow_size", background.aof_last_cow_size());
    field!(out, "module_fork_in_progress", 0);
    field!(out, "module_fork_last_cow_size", 0);
    if aof.is_on() {
        field!(out, "aof_current_size", stats.current_size.load(Relaxed));
        field!(out, "aof_base_size", stats.base_size.load(Relaxed));
        field!(out, "aof_pending_rewrite", 0);
        field!(out, "aof_buffer_length", aof.buffer_length());
        field!(out, "aof_pending_bio_fsync", 0);
        field!(out, "aof_delayed_fsync", 0);
    }
}

fn stats(ctx: &mut Ctx<'_>, out: &mut String) {
    let counters = &ctx.shared.stats;
    let (hits, misses) = ctx.keyspace.hits_and_misses();
    let keyspace = counters.keyspace_since_reset(KeyspaceCounters {
        hits,
        misses,
        expired_keys: ctx.keyspace.expired_keys(),
        evicted_keys: ctx.keyspace.eviction.evicted_keys,
    });
    let rates = counters.instant_rates();
    out.push_str("# Stats\r\n");
    let count = |c| Stats::get(c);
    field!(
        out,
        "total_connections_received",
        count(&counters.total_connections_received)
    );
    field!(
        out,
        "total_commands_processed",
        count(&counters.total_commands_processed)
    );
    field!(out, "instantaneous_ops_per_sec", rates.ops_per_sec);
    field!(
        out,
        "total_net_input_bytes",
        count(&counters.total_net_input_bytes)
    );
    field!(
        out,
        "total_net_output_bytes",
        count(&counters.total_net_output_bytes)
    );
    field!(out, "total_net_repl_input_bytes", 0);
    field!(out, "total_net_repl_output_bytes", 0);
    field!(
        out,
        "instantaneous_input_kbps",
        format!("{:.2}", rates.input_kbps)
    );
    field!(
        out,
        "instantaneous_output_kbps",
        format!("{:.2}", rates.output_kbps)
    );
    field!(out, "instantaneous_input_repl_kbps", "0.00");
    field!(out, "instantaneous_output_repl_kbps", "0.00");
    field!(
        out,
        "rejected_connections",
        count(&counters.rejected_connections)
    );
    let master = &ctx.shared.replication.master;
    let synced = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
    field!(out, "sync_full", synced(&master.sync_full));
    field!(out, "sync_partial_ok", synced(&master.sync_partial_ok));
    field!(out, "sync_partial_err", synced(&master.sync_partial_err));
    field!(out, "expired_keys", keyspace.expired_keys);
    field!(out, "evicted_keys", keyspace.evicted_keys);
    field!(out, "evicted_clients", count(&counters.evicted_clients));
    field!(out, "keyspace_hits", keyspace.hits);
    field!(out, "keyspace_misses", keyspace.misses);
    let pubsub = &ctx.keyspace.pubsub;
    use crate::pubsub::Kind;
    field!(out, "pubsub_channels", pubsub.len(Kind::Channel));
    field!(out, "pubsub_patterns", pubsub.len(Kind::Pattern));
    field!(out, "pubsubshard_channels", pubsub.len(Kind::Shard));
    field!(out, "latest_fork_usec", 0);
    field!(out, "total_forks", 0);
    let (keys, items, prefixes) = ctx.keyspace.tracking.totals();
    field!(out, "tracking_total_keys", keys);
    field!(out, "tracking_total_items", items);
    field!(out, "tracking_total_prefixes", prefixes);
    field!(
        out,
        "total_error_replies",
        count(&counters.total_error_replies)
    );
}

fn cpu(out: &mut String) {
    let process = stats::process_cpu();
    let main = stats::main_thread_cpu();
    out.push_str("# CPU\r\n");
    field!(out, "used_cpu_sys", format!("{:.6}", process.sys));
    field!(out, "used_cpu_user", format!("{:.6}", process.user));
    field!(
        out,
        "used_cpu_sys_children",
        format!("{:.6}", process.children_sys)
    );
    field!(
        out,
        "used_cpu_user_children",
        format!("{:.6}", process.children_user)
    );
    field!(out, "used_cpu_sys_main_thread", format!("{:.6}", main.sys));
    field!(
        out,
        "used_cpu_user_main_thread",
        format!("{:.6}", main.user)
    );
}

/// Mean remaining time to live, in milliseconds, of the keys with an expiry among the first
/// [`AVG_TTL_SAMPLE`] keys; 0 when the sample holds none.
fn average_ttl(db: &Db, now_ms: u64) -> u64 {
    let (sum, count) = db
        .entries()
        .take(AVG_TTL_SAMPLE)
        .filter(|e| e.expire_at_ms() > now_ms)
        .fold((0u128, 0u128), |(sum, count), e| {
            (sum + u128::from(e.expire_at_ms() - now_ms), count + 1)
        });
    sum.checked_div(count).map_or(0, |avg| avg as u64)
}

fn keyspace(ctx: &mut Ctx<'_>, out: &mut String) {
    let now_ms = ctx.now_ms();
    out.push_str("# Keyspace\r\n");
    for (index, db) in ctx.keyspace.dbs().iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "db{index}:keys={},expires={},avg_ttl={}\r\n",
            db.len(),
            db.volatile_len(),
            average_ttl(db, now_ms)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_match_redis() {
        assert_eq!(bytes_to_human(200), "200B");
        assert_eq!(bytes_to_human(916304), "894.83K");
        assert_eq!(bytes_to_human(11980800), "11.43M");
        assert_eq!(bytes_to_human(25276502016), "23.54G");
    }
}
