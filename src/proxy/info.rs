//! `INFO [section ...]` through the proxy: the proxy's own sections, plus the nodes'
//! keyspace summed.
//!
//! Section selection is Redis 7.0's: no argument or `default` → the default sections; `all`
//! → every section; `everything` → every section and module sections (there are none);
//! names combine (`INFO default commandstats`), are case-insensitive, and unknown ones are
//! ignored. Sections come out in Redis's fixed order whatever order they were asked in.
//!
//! What a client sees: `# Server` describes the proxy (`server_name:slotproxy`,
//! `redis_version` is the Redis version the proxy speaks, `redis_mode:standalone` because
//! the proxy is one server to its clients); `# Clients` and `# Stats` count the proxy's own
//! clients and traffic; `# Modules` is empty; `# Commandstats` has the calls the proxy
//! served (latency from dispatch to reply, every error reply counted in `failed_calls`);
//! `# Cluster` says `cluster_enabled:0` (clients must not follow slots) with the backend's
//! size; `# Keyspace` sums the masters' keyspace. Memory, persistence, replication, CPU,
//! error and latency statistics describe the nodes' data and processes, which the proxy does
//! not hold: those sections are left out rather than filled with numbers that mean nothing.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::forward::send_to_node;
use super::stats::Stats;
use super::Proxy;
use crate::cluster::CommandTable;
use crate::protocol::REDIS_VERSION;
use crate::resp::{parse_frame, request_bytes, Proto, ReplyBuf};

/// Every Redis 7.0 section, in the order Redis writes them, and whether it is a default one.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

/// The sections an `INFO` request selects, in Redis's order.
fn wanted(args: &[Bytes]) -> Vec<&'static str> {
    let asked: Vec<String> = args
        .get(1..)
        .unwrap_or(&[])
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = asked.iter().any(|a| a == "all" || a == "everything");
    let default = asked.is_empty() || asked.iter().any(|a| a == "default");
    SECTIONS
        .iter()
        .filter(|(name, is_default)| {
            all || (default && *is_default) || asked.iter().any(|a| a == name)
        })
        .map(|(name, _)| *name)
        .collect()
}

/// `cmdstat_<name>:calls=..,usec=..,usec_per_call=..,failed_calls=..` for every command the
/// proxy has served.
fn commandstats(proxy: &Proxy) -> String {
    let totals = proxy.metrics.info_command_counts();
    let mut text = String::new();
    for spec in CommandTable::get().all_specs() {
        let Some(total) = totals.get(spec.id).filter(|t| t.calls > 0) else {
            continue;
        };
        let usec = total.nanos / 1000;
        text.push_str(&format!(
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},failed_calls={}\r\n",
            spec.name,
            total.calls,
            usec,
            usec as f64 / total.calls as f64,
            total.errors,
        ));
    }
    text
}

/// Sums `dbN:keys=..,expires=..,avg_ttl=..` lines over the masters.
async fn keyspace(proxy: &Arc<Proxy>) -> String {
    let addrs = proxy.topology.load().master_addrs();
    let request = request_bytes(&["INFO", "keyspace"]);
    let mut totals: Vec<(String, u64, u64)> = Vec::new();
    for addr in addrs {
        let reply = send_to_node(
            proxy,
            addr,
            request.clone(),
            Proto::Resp2,
            proxy.control_lane(),
        )
        .reply(proxy)
        .await;
        let Ok(Some((frame, _))) = parse_frame(&reply) else {
            continue;
        };
        let Some(text) = frame.as_bytes() else {
            continue;
        };
        for line in String::from_utf8_lossy(text).lines() {
            let Some((db, fields)) = line.split_once(':') else {
                continue;
            };
            if !db.starts_with("db") {
                continue;
            }
            let field = |name: &str| -> u64 {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            };
            match totals.iter_mut().find(|(d, _, _)| d == db) {
                Some(entry) => {
                    entry.1 += field("keys");
                    entry.2 += field("expires");
                }
                None => totals.push((db.to_string(), field("keys"), field("expires"))),
            }
        }
    }
    totals
        .iter()
        .map(|(db, keys, expires)| format!("{db}:keys={keys},expires={expires},avg_ttl=0\r\n"))
        .collect()
}

pub async fn info(proxy: Arc<Proxy>, args: Vec<Bytes>, proto: Proto) -> Bytes {
    let mut text = String::new();
    let stats = &proxy.stats;
    for section in wanted(&args) {
        let start = text.len();
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        match section {
            "server" => text.push_str(&format!(
                "# Server\r\nredis_version:{REDIS_VERSION}\r\nserver_name:{}\r\nslotproxy_version:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\n",
                super::answered_here::SERVER_NAME,
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::process::id(),
                proxy.id,
                proxy.listen_addr.port(),
                proxy.started.elapsed().as_secs(),
                proxy.started.elapsed().as_secs() / 86400,
            )),
            "clients" => text.push_str(&format!(
                "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n",
                proxy.clients.count(),
                proxy.config.load().limits.max_clients,
            )),
            "stats" => text.push_str(&format!(
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_error_replies:{}\r\nredirects_moved:{}\r\nredirects_ask:{}\r\nredirects_tryagain:{}\r\ntopology_refreshes:{}\r\n",
                Stats::get(&stats.connections_accepted),
                proxy
                    .metrics
                    .info_command_counts()
                    .iter()
                    .map(|c| c.calls)
                    .sum::<u64>(),
                Stats::get(&stats.connections_rejected),
                Stats::get(&stats.bytes_in),
                Stats::get(&stats.bytes_out),
                Stats::get(&stats.errors),
                Stats::get(&stats.redirects_moved),
                Stats::get(&stats.redirects_ask),
                Stats::get(&stats.redirects_tryagain),
                Stats::get(&stats.topology_refreshes),
            )),
            "cluster" => text.push_str(&format!(
                "# Cluster\r\ncluster_enabled:0\r\nbackend_masters:{}\r\ntopology_version:{}\r\n",
                proxy.topology.load().masters.len(),
                proxy.topology.load().version,
            )),
            "modules" => text.push_str("# Modules\r\n"),
            "commandstats" => {
                text.push_str("# Commandstats\r\n");
                text.push_str(&commandstats(&proxy));
            }
            "keyspace" => {
                text.push_str("# Keyspace\r\n");
                text.push_str(&keyspace(&proxy).await);
            }
            // Sections about the nodes' data and processes: see the module comment.
            _ => text.truncate(start),
        }
    }
    let mut buf = BytesMut::new();
    ReplyBuf::new(&mut buf, proto).verbatim(b"txt", text.as_bytes());
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(words: &[&str]) -> Vec<&'static str> {
        let args: Vec<Bytes> = std::iter::once("info")
            .chain(words.iter().copied())
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        wanted(&args)
    }

    #[test]
    fn selection_follows_redis() {
        let default = sections(&[]);
        assert!(!default.contains(&"commandstats") && !default.contains(&"latencystats"));
        assert_eq!(sections(&["DEFAULT"]), default);
        assert_eq!(sections(&["all"]).len(), SECTIONS.len());
        assert_eq!(sections(&["everything"]), sections(&["all"]));
        assert_eq!(
            sections(&["keyspace", "Server", "nosuch"]),
            ["server", "keyspace"]
        );
        assert!(sections(&["default", "commandstats"]).contains(&"commandstats"));
        assert!(sections(&["nosuch"]).is_empty());
    }
}
