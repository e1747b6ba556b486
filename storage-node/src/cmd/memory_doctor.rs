//! `MEMORY DOCTOR` → a verbatim text (RESP3 `=txt`, a bulk string in RESP2): Redis 7.0's
//! reading of the node's memory figures (`getMemoryOverheadData` → [`Overhead`]), worded
//! as Redis words it.
//!
//! - Under 5 MB of `used_memory` the instance counts as empty and nothing else is judged.
//! - Otherwise each finding is one paragraph: the peak above 150% of what is used now; RSS
//!   above 1.4 times `used_memory` and 10 MB more; the allocator's active pages above 1.1
//!   times what it allocated and 10 MB more; its resident pages above 1.1 times the active
//!   and 10 MB more; the process's RSS above 1.1 times the allocator's resident and 10 MB
//!   more; normal clients holding above 200 KB of buffers each on average; replicas above
//!   10 MB of output together; more than 1000 cached EVAL scripts.
//! - No finding: "I can't find any memory issue".
//!
//! The ratios are taken in single precision, as Redis takes them.

use super::memory::Overhead;
use super::Ctx;

/// Below this `used_memory` the doctor declines to judge.
const EMPTY_BELOW: u64 = 5 * 1024 * 1024;
/// The excess in bytes each fragmentation or overhead ratio must also reach.
const MB10: i64 = 10 << 20;

const NO_ISSUES: &str = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n";
const EMPTY: &str = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n";
const ISSUES: &str = "Sam, I detected a few issues in this Redis instance memory implants:\n\n";
const BYE: &str = "I'm here to keep you safe, Sam. I want to help you.\n";
const BIG_PEAK: &str = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n";
/// Followed by the allocator's name and [`HIGH_FRAG_END`].
const HIGH_FRAG: &str = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"";
const HIGH_FRAG_END: &str = "\".\n\n";
const HIGH_ALLOC_FRAG: &str = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n";
const HIGH_ALLOC_RSS: &str = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n";
const HIGH_PROC_RSS: &str = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n";
const BIG_REPLICA_BUF: &str = " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n";
const BIG_CLIENT_BUF: &str = " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n";
const MANY_SCRIPTS: &str = " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n";

pub(super) fn doctor(ctx: &mut Ctx<'_>) {
    let m = Overhead::take(ctx);
    let scripts = ctx.shared.scripting.cached_scripts();
    let text = report(&m, scripts, crate::mem_allocator());
    ctx.out.verbatim(b"txt", text.as_bytes());
}

/// `a / b` in single precision, as Redis divides its figures; 0 when `b` is 0.
fn ratio(a: u64, b: u64) -> f32 {
    if b == 0 {
        return 0.0;
    }
    a as f32 / b as f32
}

/// Whether `a` exceeds `b` by more than `factor` times and by more than 10 MB.
fn exceeds(a: u64, b: u64, factor: f32) -> bool {
    ratio(a, b) > factor && a as i64 - b as i64 > MB10
}

fn report(m: &Overhead, scripts: usize, allocator: &str) -> String {
    let allocated = m.alloc.allocated;
    if allocated < EMPTY_BELOW {
        return EMPTY.into();
    }
    let findings: Vec<String> = [
        (ratio(m.peak, allocated) > 1.5, BIG_PEAK.to_string()),
        (
            exceeds(m.rss, allocated, 1.4),
            format!("{HIGH_FRAG}{allocator}{HIGH_FRAG_END}"),
        ),
        (
            exceeds(m.alloc.active, allocated, 1.1),
            HIGH_ALLOC_FRAG.into(),
        ),
        (
            exceeds(m.alloc.resident, m.alloc.active, 1.1),
            HIGH_ALLOC_RSS.into(),
        ),
        (exceeds(m.rss, m.alloc.resident, 1.1), HIGH_PROC_RSS.into()),
        (
            m.replica_count > 0 && m.replicas > 10 * 1024 * 1024,
            BIG_REPLICA_BUF.into(),
        ),
        (
            m.normal / m.normal_count.max(1) > 200 * 1024,
            BIG_CLIENT_BUF.into(),
        ),
        (scripts > 1000, MANY_SCRIPTS.into()),
    ]
    .into_iter()
    .filter_map(|(found, text)| found.then_some(text))
    .collect();
    if findings.is_empty() {
        return NO_ISSUES.into();
    }
    let mut text = String::from(ISSUES);
    text.extend(findings);
    text.push_str(BYE);
    text
}
