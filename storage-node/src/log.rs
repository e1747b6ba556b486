//! The node's log: `loglevel` and `logfile`, in Redis's line format.
//!
//! ```text
//! 4711:M 25 Nov 2026 12:00:01.123 * Ready to accept connections on port 6379
//! ```
//!
//! `pid:role day month year time.ms mark message`; the role is `M` on a master, `S` on a
//! replica; the mark gives the level as Redis writes it (`.` debug, `-` verbose, `*`
//! notice, `#` warning). Lines below `loglevel` are
//! dropped. `logfile ""` logs to standard output, or nowhere once daemonized (Redis then
//! logs to /dev/null); a path is opened in append mode for every line, as Redis does, so a
//! log rotated away by logrotate is simply created again. Times are UTC (the node does not
//! read the time zone database).
//!
//! Use the macros inside the crate (`log::notice!("...")`); the binary and anything outside
//! call [`write`].

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Redis's log levels, least important first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

impl Level {
    /// The level `loglevel` names (already validated by the settings table).
    pub fn from_name(name: &str) -> Option<Level> {
        Some(match name.to_ascii_lowercase().as_str() {
            "debug" => Level::Debug,
            "verbose" => Level::Verbose,
            "notice" => Level::Notice,
            "warning" => Level::Warning,
            _ => return None,
        })
    }

    /// The level a script's `redis.log(level, ...)` names (`redis.LOG_DEBUG` is 0).
    pub fn from_number(n: u8) -> Option<Level> {
        [Level::Debug, Level::Verbose, Level::Notice, Level::Warning]
            .get(n as usize)
            .copied()
    }

    fn mark(self) -> char {
        ['.', '-', '*', '#'][self as usize]
    }
}

/// Where lines go.
enum Target {
    Stdout,
    File(PathBuf),
    Nowhere,
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Notice as u8);
static TARGET: Mutex<Target> = Mutex::new(Target::Stdout);
/// The role letter of every line: `M` for a master, `S` for a replica.
static ROLE: AtomicU8 = AtomicU8::new(b'M');

/// Lines from now on say the node is a replica (`S`) or a master (`M`).
pub fn set_replica(replica: bool) {
    ROLE.store(if replica { b'S' } else { b'M' }, Ordering::Relaxed);
}

/// Sets where the log goes (`logfile`), checking first that a log file can be opened: a
/// node that cannot write its log refuses to start, as Redis does.
pub fn open(logfile: &str, daemonized: bool) -> Result<(), String> {
    let target = if logfile.is_empty() {
        if daemonized {
            Target::Nowhere
        } else {
            Target::Stdout
        }
    } else {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)
            .map_err(|e| format!("Can't open the log file: {e}"))?;
        Target::File(PathBuf::from(logfile))
    };
    *TARGET
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = target;
    Ok(())
}

/// Sets the least important level written (`loglevel`, also changed by CONFIG SET).
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Whether a line of this level would be written.
pub fn enabled(level: Level) -> bool {
    level as u8 >= LEVEL.load(Ordering::Relaxed)
}

/// Writes one line if `level` is enabled. Failures to write are ignored: the log must never
/// take the node down.
pub fn write(level: Level, message: fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let line = format!(
        "{}:{} {} {} {}\n",
        std::process::id(),
        char::from(ROLE.load(Ordering::Relaxed)),
        timestamp(),
        level.mark(),
        message
    );
    let target = TARGET
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match &*target {
        Target::Stdout => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
        Target::File(path) => {
            if let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = file.write_all(line.as_bytes());
            }
        }
        Target::Nowhere => {}
    }
}

#[allow(unused_macros)]
macro_rules! debug {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Debug, format_args!($($arg)*)) };
}
macro_rules! verbose {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Verbose, format_args!($($arg)*)) };
}
macro_rules! notice {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Notice, format_args!($($arg)*)) };
}
macro_rules! warning {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Warning, format_args!($($arg)*)) };
}
#[allow(unused_imports)]
pub(crate) use {debug, notice, verbose, warning};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `25 Nov 2026 12:00:01.123`, UTC.
fn timestamp() -> String {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{day:02} {} {year} {:02}:{:02}:{:02}.{:03}",
        MONTHS[(month - 1) as usize],
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        since_epoch.subsec_millis()
    )
}

/// The (year, month 1-12, day 1-31) of a day counted from 1970-01-01, by the proleptic
/// Gregorian calendar (Howard Hinnant's `civil_from_days`, for days after the epoch).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(59), (1970, 3, 1));
        // 2000-02-29 (a leap day in a century year) and 2026-11-25.
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(20_782), (2026, 11, 25));
    }

    #[test]
    fn levels_order_like_redis() {
        assert!(Level::Warning > Level::Notice);
        assert_eq!(Level::from_name("VERBOSE"), Some(Level::Verbose));
        assert_eq!(Level::from_number(3), Some(Level::Warning));
        assert_eq!(Level::from_number(4), None);
    }
}
