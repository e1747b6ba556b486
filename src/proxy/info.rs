//! `INFO` through the proxy: the proxy's own sections, plus the nodes' keyspace summed.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::forward::send_to_node;
use super::stats::Stats;
use super::Proxy;
use crate::resp::{parse_frame, request_bytes, Proto, ReplyBuf};

const SECTIONS: &[&str] = &["server", "clients", "stats", "cluster", "keyspace"];

fn wanted(args: &[Bytes]) -> Vec<String> {
    let asked: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    if asked.is_empty()
        || asked
            .iter()
            .any(|a| matches!(a.as_str(), "all" | "everything" | "default"))
    {
        return SECTIONS.iter().map(|s| s.to_string()).collect();
    }
    SECTIONS
        .iter()
        .filter(|s| asked.iter().any(|a| a == *s))
        .map(|s| s.to_string())
        .collect()
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
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        match section.as_str() {
            "server" => text.push_str(&format!(
                "# Server\r\nredis_version:7.0.15\r\nslotproxy_version:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\n",
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
                proxy.metrics.total_commands(),
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
            "keyspace" => {
                text.push_str("# Keyspace\r\n");
                text.push_str(&keyspace(&proxy).await);
            }
            _ => {}
        }
    }
    let mut buf = BytesMut::new();
    ReplyBuf::new(&mut buf, proto).verbatim(b"txt", text.as_bytes());
    buf.freeze()
}
