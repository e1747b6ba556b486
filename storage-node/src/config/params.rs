//! The table of settings: name, how to read a value, how to show it.

use super::Config;

/// Memory sizes as redis.conf writes them: `1gb`, `512mb`, `100k`, plain bytes.
pub fn parse_memory(text: &str) -> Result<usize, String> {
    let lower = text.to_ascii_lowercase();
    let (digits, unit) = match lower.find(|c: char| !c.is_ascii_digit()) {
        Some(pos) => lower.split_at(pos),
        None => (lower.as_str(), ""),
    };
    let factor: usize = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return Err("argument must be a memory value".into()),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(|| "argument must be a memory value".into())
}

fn parse_bool(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

fn parse_number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| "argument couldn't be parsed into an integer".into())
}

fn one(values: &[String]) -> Result<&str, String> {
    match values {
        [v] => Ok(v),
        _ => Err("wrong number of arguments".into()),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// Names of every setting, as CONFIG GET matches patterns against them.
pub const NAMES: &[&str] = &[
    "port",
    "bind",
    "requirepass",
    "dir",
    "databases",
    "maxclients",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "hz",
    "timeout",
    "logfile",
    "loglevel",
    "io-threads",
    "save",
    "appendonly",
];

/// Applies one setting by name. The error says what is wrong with the value.
pub fn apply(config: &mut Config, name: &str, values: &[String]) -> Result<(), String> {
    match name.to_ascii_lowercase().as_str() {
        "port" => config.port = parse_number(one(values)?)?,
        "bind" => {
            config.bind = values
                .iter()
                .flat_map(|v| v.split_whitespace().map(str::to_string))
                .collect()
        }
        "requirepass" => {
            let pass = one(values)?;
            config.requirepass = (!pass.is_empty()).then(|| pass.as_bytes().to_vec());
        }
        "dir" => config.dir = one(values)?.into(),
        "databases" => config.databases = parse_number::<usize>(one(values)?)?.max(1),
        "maxclients" => config.maxclients = parse_number(one(values)?)?,
        "proto-max-bulk-len" => config.proto_max_bulk_len = parse_memory(one(values)?)?,
        "client-query-buffer-limit" => {
            config.client_query_buffer_limit = parse_memory(one(values)?)?
        }
        "hz" => config.hz = parse_number::<u32>(one(values)?)?.clamp(1, 500),
        "timeout" => config.timeout = parse_number(one(values)?)?,
        "logfile" => config.logfile = one(values)?.to_string(),
        "loglevel" => config.loglevel = one(values)?.to_string(),
        "io-threads" => config.io_threads = parse_number::<usize>(one(values)?)?.max(1),
        "save" => config.save = values.join(" "),
        "appendonly" => config.appendonly = parse_bool(one(values)?)?,
        // Accepted so existing redis.conf files and test harnesses work; they have no
        // effect on a node that keeps everything in memory and runs in the foreground.
        "daemonize"
        | "protected-mode"
        | "supervised"
        | "pidfile"
        | "dbfilename"
        | "appendfilename"
        | "always-show-logo"
        | "enable-debug-command" => {}
        other => return Err(format!("unknown setting '{other}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows for a setting.
pub fn get(config: &Config, name: &str) -> Option<String> {
    Some(match name {
        "port" => config.port.to_string(),
        "bind" => config.bind.join(" "),
        "requirepass" => config
            .requirepass
            .as_deref()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default(),
        "dir" => std::fs::canonicalize(&config.dir)
            .unwrap_or_else(|_| config.dir.clone())
            .display()
            .to_string(),
        "databases" => config.databases.to_string(),
        "maxclients" => config.maxclients.to_string(),
        "proto-max-bulk-len" => config.proto_max_bulk_len.to_string(),
        "client-query-buffer-limit" => config.client_query_buffer_limit.to_string(),
        "hz" => config.hz.to_string(),
        "timeout" => config.timeout.to_string(),
        "logfile" => config.logfile.clone(),
        "loglevel" => config.loglevel.clone(),
        "io-threads" => config.io_threads.to_string(),
        "save" => config.save.clone(),
        "appendonly" => yes_no(config.appendonly),
        _ => return None,
    })
}
