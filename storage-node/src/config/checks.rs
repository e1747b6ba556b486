//! Value checks Redis 7.0 makes for a few accepted no-op settings beyond their kind (see
//! [`super::inert`]): the node refuses what Redis refuses, with Redis's words, and shows
//! what Redis shows.

use slotproxy::numbers::parse_i64;

use super::params::{boolean, number, one, strtoll_whole, words, yes_no, Param};

/// Whether [`check`] reads this setting.
pub fn applies(name: &str) -> bool {
    matches!(
        name,
        "tls-cluster"
            | "tls-replication"
            | "tls-port"
            | "proc-title-template"
            | "cluster-announce-hostname"
            | "oom-score-adj-values"
            | "replicaof"
    )
}

/// Checks a value of a setting [`applies`] to; the value as CONFIG GET shows it.
pub fn check(param: &Param, values: &[String]) -> Result<String, String> {
    match param.name {
        "tls-cluster" | "tls-replication" => {
            let on = boolean(values)?;
            refuse_tls(param.name, on)?;
            Ok(yes_no(on))
        }
        "tls-port" => {
            let port = number(param.kind, values)?;
            refuse_tls(param.name, port != 0)?;
            Ok(port.to_string())
        }
        "proc-title-template" => proc_title_template(one(values)?),
        "cluster-announce-hostname" => hostname(one(values)?),
        "oom-score-adj-values" => oom_score_adj_values(values),
        "replicaof" => replica_of(values),
        other => Err(format!("unknown setting '{other}'")),
    }
}

/// `oom-score-adj-values`: exactly three integers from -2000 to 2000.
fn oom_score_adj_values(values: &[String]) -> Result<String, String> {
    let words = words(values);
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let numbers = words
        .iter()
        .map(|w| strtoll_whole(w).filter(|n| (-2000..=2000).contains(n)))
        .collect::<Option<Vec<i64>>>()
        .ok_or("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")?;
    Ok(numbers
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" "))
}

/// The node has no TLS: turning any of it on is refused as Redis refuses it without
/// certificates (the setting stays off), rather than accepted and silently not done.
fn refuse_tls(name: &str, on: bool) -> Result<(), String> {
    if on {
        crate::log::warning!("'{name}': TLS is not supported by this node");
        return Err("Unable to update TLS configuration. Check server logs.".into());
    }
    Ok(())
}

/// `proc-title-template`, checked as Redis checks it: only known `{variables}`, braces
/// closed, and not empty once expanded (`{title}`, `{server-mode}`, `{unixsocket}` and
/// `{config-file}` count as empty, as they are when Redis checks a CONFIG SET).
fn proc_title_template(template: &str) -> Result<String, String> {
    const INVALID: &str = "template format is invalid or contains unknown variables";
    let mut expanded_len = 0;
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        expanded_len += rest[..open].trim().len();
        let close = rest[open..].find('}').ok_or(INVALID)? + open;
        expanded_len += match &rest[open + 1..close] {
            "title" | "server-mode" | "unixsocket" | "config-file" => 0,
            "listen-addr" | "port" | "tls-port" => 1,
            _ => return Err(INVALID.into()),
        };
        rest = &rest[close + 1..];
    }
    expanded_len += rest.trim().len();
    if expanded_len == 0 {
        return Err(INVALID.into());
    }
    Ok(template.to_string())
}

/// `cluster-announce-hostname`: letters, digits, hyphens and dots only.
fn hostname(name: &str) -> Result<String, String> {
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
    }
    Ok(name.to_string())
}

/// `replicaof <host> <port>` or `replicaof no one` (shown as no master, "").
fn replica_of(values: &[String]) -> Result<String, String> {
    let words = words(values);
    let [host, port] = words.as_slice() else {
        return Err("wrong number of arguments".into());
    };
    if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
        return Ok(String::new());
    }
    let port = parse_i64(port.as_bytes())
        .filter(|p| (0..=65535).contains(p))
        .ok_or("Invalid master port")?;
    Ok(format!("{host} {port}"))
}
