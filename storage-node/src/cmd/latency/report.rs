//! LATENCY DOCTOR's report and LATENCY GRAPH's sparkline, in Redis 7.0's words and layout
//! (`latency.c`, `sparkline.c`), from the samples the node recorded.

use crate::keyspace::latency_monitor::{LatencyMonitor, Series};

const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";
const SPIKES: &str = "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n";
const NO_SPIKES: &str = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n";
const NO_ADVICE: &str = "\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n";
const ADVICES: &str = "\nI have a few advices for you:\n\n";
const SLOWLOG_INSPECT: &str = "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n";
const SCHEDULER: &str = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n";
const HZ: &str = "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n";
const LARGE_OBJECTS: &str = "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n";
const THP: &str = "- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n";

/// The settings the advice depends on.
pub struct Settings {
    pub slowlog_log_slower_than: i64,
    pub hz: u32,
}

/// Redis's `latencyStats` of one event.
struct Stats {
    samples: u64,
    avg: u64,
    mad: u64,
    /// Seconds from the oldest sample to now (at least 1).
    period: u64,
}

fn analyze(series: &Series, now: u64) -> Stats {
    let samples: Vec<_> = series.history().collect();
    let count = samples.len() as u64;
    if count == 0 {
        return Stats {
            samples: 0,
            avg: 0,
            mad: 0,
            period: 0,
        };
    }
    let avg = samples.iter().map(|s| s.latency).sum::<u64>() / count;
    let oldest = samples.iter().map(|s| s.time).min().unwrap_or(now);
    let period = now.saturating_sub(oldest).max(1);
    let mad = samples.iter().map(|s| avg.abs_diff(s.latency)).sum::<u64>() / count;
    Stats {
        samples: count,
        avg,
        mad,
        period,
    }
}

/// LATENCY DOCTOR.
pub fn doctor(monitor: &LatencyMonitor, settings: &Settings) -> String {
    let events: Vec<_> = monitor.events().collect();
    if events.is_empty() && monitor.threshold_ms == 0 {
        return DISABLED.to_string();
    }
    let now = crate::keyspace::unix_time_ms() / 1000;
    let mut report = String::new();
    let (mut slowlog_enabled, mut slowlog_tuning, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut hz, mut large_objects) = (false, false, false);
    let mut advices = 0;
    for (number, (event, series)) in events.iter().enumerate() {
        if number == 0 {
            report.push_str(SPIKES);
        }
        let stats = analyze(series, now);
        report.push_str(&format!(
            "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            number + 1,
            event,
            stats.samples,
            stats.avg,
            stats.mad,
            stats.period as f64 / stats.samples.max(1) as f64,
            series.max
        ));
        match *event {
            "command" => {
                if settings.slowlog_log_slower_than < 0 {
                    slowlog_enabled = true;
                    advices += 1;
                } else if (settings.slowlog_log_slower_than / 1000) as u64 > monitor.threshold_ms {
                    slowlog_tuning = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large_objects = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                hz = true;
                large_objects = true;
                advices += 2;
            }
            _ => {}
        }
        report.push('\n');
    }
    let thp = anon_huge_pages() > 0;
    advices += thp as usize;
    if events.is_empty() && advices == 0 {
        report.push_str(NO_SPIKES);
        return report;
    }
    if advices == 0 {
        report.push_str(NO_ADVICE);
        return report;
    }
    report.push_str(ADVICES);
    let threshold_us = monitor.threshold_ms.saturating_mul(1000);
    if slowlog_enabled {
        report.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {threshold_us}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"));
    }
    if slowlog_tuning {
        report.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {threshold_us}'.\n"));
    }
    if slowlog_inspect {
        report.push_str(SLOWLOG_INSPECT);
    }
    if scheduler {
        report.push_str(SCHEDULER);
    }
    if hz && settings.hz < 100 {
        report.push_str(HZ);
    }
    if large_objects {
        report.push_str(LARGE_OBJECTS);
    }
    if thp {
        report.push_str(THP);
    }
    report
}

/// Kilobytes of transparent huge pages the node's memory uses (Redis's
/// `THPGetAnonHugePagesSize`); 0 where the kernel does not say.
fn anon_huge_pages() -> u64 {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps_rollup") else {
        return 0;
    };
    smaps
        .lines()
        .filter_map(|line| line.strip_prefix("AnonHugePages:"))
        .filter_map(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// Redis's `LATENCY_GRAPH_COLS`, and the sparkline's rows.
const COLUMNS: usize = 80;
const ROWS: usize = 4;
const FILL: &[u8] = b"_o#";

/// LATENCY GRAPH: a header, a rule, and a filled sparkline of the samples (oldest first)
/// labelled with how long ago each was taken.
pub fn graph(event: &str, series: &Series) -> String {
    let now = crate::keyspace::unix_time_ms() / 1000;
    let samples: Vec<(u64, String)> = series
        .history()
        .map(|s| (s.latency, age_label(now.saturating_sub(s.time))))
        .collect();
    let low = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let high = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let mut out = format!(
        "{event} - high {high} ms, low {low} ms (all time high {} ms)\n",
        series.max
    );
    out.push_str(&"-".repeat(COLUMNS));
    out.push('\n');
    for (n, chunk) in samples.chunks(COLUMNS).enumerate() {
        if n != 0 {
            out.push('\n');
        }
        render(&mut out, chunk, low, high);
    }
    out
}

fn age_label(elapsed: u64) -> String {
    match elapsed {
        e if e < 60 => format!("{e}s"),
        e if e < 3600 => format!("{}m", e / 60),
        e if e < 86_400 => format!("{}h", e / 3600),
        e => format!("{}d", e / 86_400),
    }
}

/// Redis's `sparklineRenderRange` with `SPARKLINE_FILL`: `ROWS` rows of bars, one blank
/// row, then the labels written downwards.
fn render(out: &mut String, samples: &[(u64, String)], min: u64, max: u64) {
    let range = if max == min { 1.0 } else { (max - min) as f64 };
    let steps = (FILL.len() * ROWS) as i64;
    // Labels are never empty, so the blank row and the label rows always follow the bars.
    let label_rows = samples.iter().map(|s| s.1.len()).max().unwrap_or(0);
    for row in 0..ROWS + 1 + label_rows {
        let mut line = vec![b' '; samples.len()];
        for (column, (value, label)) in samples.iter().enumerate() {
            if row < ROWS {
                let scaled = ((value - min) as f64 * steps as f64).trunc();
                let step = ((scaled / range) as i64).clamp(0, steps - 1);
                let index = step - ((ROWS - row - 1) * FILL.len()) as i64;
                if (0..FILL.len() as i64).contains(&index) {
                    line[column] = FILL[index as usize];
                } else if index >= FILL.len() as i64 {
                    line[column] = b'|';
                }
            } else if row > ROWS {
                if let Some(&c) = label.as_bytes().get(row - ROWS - 1) {
                    line[column] = c;
                }
            }
        }
        out.push_str(&String::from_utf8_lossy(&line));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_draws_a_floor_and_its_age() {
        let mut out = String::new();
        render(&mut out, &[(50, "0s".to_string())], 50, 50);
        // As redis-server 7.0 draws one 50 ms spike a moment ago.
        assert_eq!(out, " \n \n \n_\n \n0\ns\n");
    }

    #[test]
    fn higher_samples_draw_taller_bars() {
        let mut out = String::new();
        let samples = [(0, "9s".to_string()), (100, "10s".to_string())];
        render(&mut out, &samples, 0, 100);
        assert_eq!(out, " #\n |\n |\n_|\n  \n91\ns0\n s\n");
    }
}

#[cfg(test)]
mod doctor_tests {
    use super::*;

    fn settings(hz: u32) -> Settings {
        Settings {
            slowlog_log_slower_than: 10_000,
            hz,
        }
    }

    #[test]
    fn each_event_brings_its_advice() {
        let mut monitor = LatencyMonitor::default();
        monitor.threshold_ms = 1;
        // Huge pages in this process would bring their own advice, as in Redis.
        if anon_huge_pages() == 0 {
            assert_eq!(doctor(&monitor, &settings(10)), NO_SPIKES);
        }
        monitor.add_if_needed("fast-command", 5);
        monitor.add_if_needed("expire-cycle", 7);
        let report = doctor(&monitor, &settings(10));
        assert!(report.starts_with(SPIKES), "{report}");
        assert!(report.contains("1. expire-cycle: 1 latency spikes (average 7ms, mean deviation 0ms, period 1.00 sec). Worst all time event 7ms.\n2. fast-command:"), "{report}");
        for advice in [SCHEDULER, HZ, LARGE_OBJECTS] {
            assert!(report.contains(advice), "{report}");
        }
        assert!(!report.contains(SLOWLOG_INSPECT));
        // With hz at 100 already, Redis does not suggest it.
        assert!(!doctor(&monitor, &settings(100)).contains(HZ));
    }

    #[test]
    fn a_slow_log_that_misses_the_spikes_is_pointed_out() {
        let mut monitor = LatencyMonitor::default();
        monitor.threshold_ms = 5;
        monitor.add_if_needed("command", 50);
        let off = Settings {
            slowlog_log_slower_than: -1,
            hz: 10,
        };
        assert!(doctor(&monitor, &off)
            .contains("'CONFIG SET slowlog-log-slower-than 5000'. If the Slow log is disabled"));
        let too_high = Settings {
            slowlog_log_slower_than: 10_000,
            hz: 10,
        };
        assert!(doctor(&monitor, &too_high)
            .contains("Please use 'CONFIG SET slowlog-log-slower-than 5000'.\n"));
    }
}
