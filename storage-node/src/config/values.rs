//! Reading settings' values as Redis 7.0's `config.c` reads them: memory sizes, bounded
//! integers, choices, percentiles, save points and file names, with Redis's error texts.
//! Used by the settings table ([`super::params`]).

use slotproxy::numbers::parse_i64;

use super::params::Kind;

/// Memory sizes as redis.conf writes them (`1gb`, `512mb`, `100k`, plain bytes), read the
/// way Redis's `memtoull` does: digits then an optional unit; digits that overflow saturate
/// (and then fail the range check). `None` when the text is not a memory value.
pub fn parse_memory(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let number = if digits.is_empty() {
        0
    } else {
        digits.parse::<u64>().unwrap_or(u64::MAX)
    };
    Some(number.saturating_mul(factor))
}

pub(super) fn one(values: &[String]) -> Result<&str, String> {
    match values {
        [v] => Ok(v),
        _ => Err("wrong number of arguments".into()),
    }
}

fn in_range(n: i64, min: i64, max: i64) -> Result<i64, String> {
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

/// Reads a numeric setting's value and checks its range.
pub(super) fn number(kind: Kind, values: &[String]) -> Result<i64, String> {
    let text = one(values)?;
    match kind {
        Kind::Int { min, max } => {
            let n = parse_i64(text.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            in_range(n, min, max)
        }
        Kind::Memory { min, max } => {
            let n =
                parse_memory(text).ok_or_else(|| "argument must be a memory value".to_string())?;
            // Redis keeps the value in a signed long long: huge values wrap negative and so
            // fail the lower bound.
            in_range(n as i64, min, max)
        }
        _ => Err("not a number".into()),
    }
}

/// A memory size, or a percentage written `N%`, as Redis reads its percent settings; shown
/// as CONFIG GET shows it (bytes, or `N%`).
pub(super) fn memory_or_percent(max_percent: i64, values: &[String]) -> Result<String, String> {
    const INVALID: &str = "argument must be a memory or percent value";
    let text = one(values)?;
    if let Some(digits) = text.strip_suffix('%').filter(|d| !d.is_empty()) {
        let percent = parse_i64(digits.as_bytes())
            .filter(|&p| p >= 0)
            .ok_or(INVALID)?;
        if percent > max_percent {
            return Err(format!(
                "percentage argument must be less or equal to {max_percent}"
            ));
        }
        return Ok(format!("{percent}%"));
    }
    let bytes = parse_memory(text).ok_or(INVALID)?;
    // Redis keeps it signed, negative meaning a percentage: a size past 2^63 wraps into one.
    match bytes as i64 {
        n if n < 0 && -n > max_percent => Err(format!(
            "percentage argument must be less or equal to {max_percent}"
        )),
        n if n < 0 => Ok(format!("{}%", -n)),
        n => Ok(n.to_string()),
    }
}

pub(super) fn boolean(values: &[String]) -> Result<bool, String> {
    let text = one(values)?;
    if text.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if text.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err("argument must be 'yes' or 'no'".into())
    }
}

pub(super) fn choice(options: &[&'static str], values: &[String]) -> Result<String, String> {
    let text = one(values)?;
    options
        .iter()
        .find(|o| o.eq_ignore_ascii_case(text))
        .map(|o| o.to_string())
        .ok_or_else(|| {
            format!(
                "argument(s) must be one of the following: {}",
                options.join(", ")
            )
        })
}

/// The words of a multi-word setting: CONFIG SET passes one string split at single spaces,
/// a config file line or the command line pass the words themselves.
pub(super) fn words(values: &[String]) -> Vec<String> {
    match values {
        [single] => single.split(' ').map(str::to_string).collect(),
        _ => values.to_vec(),
    }
}

/// Reads an integer as C's `strtoll` with an end check does: optional blanks and sign, then
/// digits, nothing after them. An empty text reads as 0.
pub(super) fn strtoll_whole(text: &str) -> Option<i64> {
    let trimmed = text.trim_start();
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = if digits.is_empty() {
        0
    } else {
        digits.parse::<i64>().unwrap_or(i64::MAX)
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `latency-tracking-info-percentiles`: numbers from 0 to 100, as Redis reads them.
pub(super) fn percentiles(values: &[String]) -> Result<Vec<f64>, String> {
    words(values)
        .iter()
        .filter(|w| !w.is_empty())
        .map(|w| {
            let p: f64 = w
                .parse()
                .map_err(|_| "Invalid latency-tracking-info-percentiles parameters".to_string())?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                        .to_string(),
                );
            }
            Ok(p)
        })
        .collect()
}

/// `save <seconds> <changes> [...]`, or one empty argument for no snapshots.
pub(super) fn save_points(values: &[String]) -> Result<Vec<(i64, i64)>, String> {
    let mut words = words(values);
    if words.len() == 1 && words[0].is_empty() {
        words.clear();
    }
    const INVALID: &str = "Invalid save parameters";
    if words.len() % 2 == 1 {
        return Err(INVALID.into());
    }
    let mut points = Vec::new();
    for pair in words.chunks(2) {
        let seconds = strtoll_whole(&pair[0]).filter(|&s| s >= 1);
        let changes = strtoll_whole(&pair[1]).filter(|&c| c >= 0);
        match (seconds, changes) {
            (Some(s), Some(c)) => points.push((s, c)),
            _ => return Err(INVALID.into()),
        }
    }
    Ok(points)
}

/// `dbfilename` must be a bare file name, as Redis's `isValidDBfilename` requires.
pub(super) fn db_filename(value: &str) -> Result<String, String> {
    if value.contains(['/', '\\']) {
        return Err("dbfilename can't be a path, just a filename".into());
    }
    Ok(value.to_string())
}
