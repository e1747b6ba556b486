//! `CONFIG GET | SET | RESETSTAT` through the proxy: the cluster's nodes and the proxy's own
//! settings, presented as one server's configuration.
//!
//! - `CONFIG GET pattern [pattern ...]` → a map (RESP2: flat array) of `name value`. Node
//!   settings come from every node (masters and replicas, as the masters' `CLUSTER NODES`
//!   list them, failed nodes left out). A setting whose value differs between nodes
//!   is logged, counted in `slotproxy_config_mismatch{name}` (1 while it differs, back to 0
//!   once a CONFIG GET finds it equal), and answered with the first master's value.
//! - `CONFIG SET name value [name value ...]` → `+OK` once every node accepted the node
//!   settings and the proxy applied its own; otherwise the first node's error (masters
//!   first). The nodes are not rolled back: a node that accepted keeps the new value while
//!   another refused it, and a later CONFIG GET shows the difference.
//! - `CONFIG RESETSTAT` → `+OK` once every node reset its statistics; the proxy's counters
//!   (INFO stats and commandstats, `slotproxy_*` counters fed by INFO stats) restart from
//!   zero as well. The per-command Prometheus counters keep counting: INFO counts from the
//!   reset instead.
//!
//! Settings of the proxy itself, never sent to the nodes (for a client, the server it talks
//! to is the proxy): `maxclients` (`limits.max_clients`), `timeout` (`timeouts.idle_secs`,
//! for connections accepted afterwards), and `databases` (1, immutable: the proxy serves
//! database 0 only). A value set with CONFIG SET lasts until the configuration file is
//! reloaded (SIGHUP), which wins.
//!
//! SET and RESETSTAT need the `admin` permission of the proxy user (`users: [{..., admin:
//! true}]`; everyone has it when no users are configured), else `-NOPERM` as Redis words it.
//! GET is open, as clients read settings at startup.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use prometheus::{IntGaugeVec, Opts};

use super::forward::{error_reply, send_to_node, Pending};
use super::Proxy;
use crate::cluster::nodes::{parse_nodes, NodeInfo};
use crate::cluster::CommandSpec;
use crate::glob::glob_match;
use crate::resp::{parse_frame, request_bytes, Frame, Proto, ReplyBuf};

/// The proxy's own settings.
const PROXY_SETTINGS: &[&str] = &["databases", "maxclients", "timeout"];

/// Answers CONFIG GET / SET / RESETSTAT; `admin` is the client's permission.
pub fn handle(
    proxy: &Arc<Proxy>,
    admin: bool,
    spec: &CommandSpec,
    args: &[Bytes],
    proto: Proto,
) -> Pending {
    let proxy = proxy.clone();
    let args = args.to_vec();
    match spec.name.as_str() {
        "config|get" => Pending::Future(Box::pin(get(proxy, args, proto))),
        "config|set" | "config|resetstat" if !admin => Pending::Ready(error_reply(&format!(
            "NOPERM this user has no permissions to run the '{}' command",
            spec.name
        ))),
        "config|set" => Pending::Future(Box::pin(set(proxy, args))),
        "config|resetstat" => Pending::Future(Box::pin(resetstat(proxy))),
        other => Pending::Ready(error_reply(&super::router::unsupported(other))),
    }
}

/// Every usable node, masters first, each group in address order: the union of what every
/// master's `CLUSTER NODES` lists (a node just added is known to some masters before
/// gossip reaches the others), leaving out nodes any master reports failed.
async fn nodes(proxy: &Arc<Proxy>) -> Result<Vec<String>, Bytes> {
    let masters = proxy.topology.load().master_addrs();
    let request = request_bytes(&["CLUSTER", "NODES"]);
    let asked: Vec<(String, Pending)> = masters
        .iter()
        .map(|addr| {
            let lane = proxy.control_lane();
            let pending = send_to_node(proxy, addr.clone(), request.clone(), Proto::Resp2, lane);
            (addr.clone(), pending)
        })
        .collect();
    let mut found: Vec<NodeInfo> = Vec::new();
    let mut down: Vec<String> = Vec::new();
    let mut last_error = error_reply("CLUSTERDOWN The cluster is down");
    for (addr, pending) in asked {
        let reply = pending.reply(proxy).await;
        let text = match parse_frame(&reply) {
            Ok(Some((Frame::Error(e), _))) => {
                last_error = error_reply(&String::from_utf8_lossy(&e));
                continue;
            }
            Ok(Some((frame, _))) => match frame.as_bytes() {
                Some(text) => String::from_utf8_lossy(text).into_owned(),
                None => continue,
            },
            _ => continue,
        };
        for node in parse_nodes(&text, &addr) {
            if node.is_down() {
                down.push(node.addr);
            } else if !found.iter().any(|n| n.addr == node.addr) {
                found.push(node);
            }
        }
    }
    if found.is_empty() {
        return Err(last_error);
    }
    found.retain(|n| !down.contains(&n.addr));
    found.sort_by(|a, b| (!a.is_master(), &a.addr).cmp(&(!b.is_master(), &b.addr)));
    Ok(found.into_iter().map(|n| n.addr).collect())
}

/// Sends `args` to every node; the replies in node order, or the first error.
async fn everywhere(proxy: &Arc<Proxy>, args: &[&[u8]]) -> Result<Vec<Bytes>, Bytes> {
    let request = request_bytes(args);
    let children: Vec<Pending> = nodes(proxy)
        .await?
        .into_iter()
        .map(|addr| {
            send_to_node(
                proxy,
                addr,
                request.clone(),
                Proto::Resp2,
                proxy.control_lane(),
            )
        })
        .collect();
    super::fanout::gather(proxy, children).await
}

/// The proxy's value of one of its own settings.
fn proxy_value(proxy: &Proxy, name: &str) -> String {
    let config = proxy.config.load();
    match name {
        "maxclients" => config.limits.max_clients.to_string(),
        "timeout" => config.timeouts.idle_secs.to_string(),
        _ => "1".to_string(),
    }
}

fn mismatch_gauge(proxy: &Proxy) -> &'static IntGaugeVec {
    static GAUGE: OnceLock<IntGaugeVec> = OnceLock::new();
    let gauge = GAUGE.get_or_init(|| {
        IntGaugeVec::new(
            Opts::new(
                "slotproxy_config_mismatch",
                "1 while nodes report different values for a setting at the last CONFIG GET.",
            ),
            &["name"],
        )
        .unwrap_or_else(|e| panic!("fixed metric definition: {e}"))
    });
    // Already registered in this proxy's registry is the usual case, not an error.
    let _ = proxy.metrics.registry().register(Box::new(gauge.clone()));
    gauge
}

/// `name value` pairs of a CONFIG GET reply (flat array or map).
fn pairs(frame: Frame) -> Vec<(Bytes, Bytes)> {
    let bytes = |f: &Frame| Bytes::copy_from_slice(f.as_bytes().unwrap_or(b""));
    match frame {
        Frame::Map(pairs) => pairs.iter().map(|(k, v)| (bytes(k), bytes(v))).collect(),
        Frame::Array(items) => items
            .chunks(2)
            .filter(|pair| pair.len() == 2)
            .map(|pair| (bytes(&pair[0]), bytes(&pair[1])))
            .collect(),
        _ => Vec::new(),
    }
}

async fn get(proxy: Arc<Proxy>, args: Vec<Bytes>, proto: Proto) -> Bytes {
    let request: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    let replies = match everywhere(&proxy, &request).await {
        Ok(replies) => replies,
        Err(e) => return e,
    };
    let gauge = mismatch_gauge(&proxy);
    let mut merged: Vec<(Bytes, Bytes)> = Vec::new();
    let mut differing: Vec<String> = Vec::new();
    for (node, reply) in replies.iter().enumerate() {
        let Ok(Some((frame, _))) = parse_frame(reply) else {
            continue;
        };
        for (name, value) in pairs(frame) {
            let shown = String::from_utf8_lossy(&name).into_owned();
            if PROXY_SETTINGS.contains(&shown.as_str()) {
                continue;
            }
            match merged.iter().find(|(n, _)| *n == name) {
                None if node == 0 => merged.push((name, value)),
                None => differing.push(shown),
                Some((_, first)) if *first != value => differing.push(shown),
                Some(_) => {}
            }
        }
    }
    for (name, _) in &merged {
        let name = String::from_utf8_lossy(name);
        let differs = differing.iter().any(|d| *d == name);
        if differs {
            tracing::warn!(
                "CONFIG GET: nodes disagree on '{name}'; answering the first master's value"
            );
        }
        gauge.with_label_values(&[&name]).set(i64::from(differs));
    }
    for name in PROXY_SETTINGS {
        if args[2..]
            .iter()
            .any(|pattern| glob_match(pattern, name.as_bytes(), true))
        {
            let value = proxy_value(&proxy, name);
            merged.push((Bytes::from_static(name.as_bytes()), Bytes::from(value)));
        }
    }
    let mut buf = bytes::BytesMut::new();
    let mut out = ReplyBuf::new(&mut buf, proto);
    out.map(merged.len());
    for (name, value) in &merged {
        out.bulk(name);
        out.bulk(value);
    }
    buf.freeze()
}

/// Redis's text for a CONFIG SET argument it refuses.
fn set_failed(name: &str, reason: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
}

/// Checks a value of one of the proxy's settings.
fn parse_proxy_value(name: &str, value: &[u8]) -> Result<u64, String> {
    let (min, max) = match name {
        "maxclients" => (1, u64::from(u32::MAX)),
        "timeout" => (0, i32::MAX as u64),
        _ => return Err(set_failed(name, "can't set immutable config")),
    };
    let number = crate::numbers::parse_i64(value)
        .ok_or_else(|| set_failed(name, "argument couldn't be parsed into an integer"))?;
    u64::try_from(number)
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            set_failed(
                name,
                &format!("argument must be between {min} and {max} inclusive"),
            )
        })
}

async fn set(proxy: Arc<Proxy>, args: Vec<Bytes>) -> Bytes {
    if !(args.len() - 2).is_multiple_of(2) {
        return error_reply("ERR wrong number of arguments for 'config|set' command");
    }
    let mut own: Vec<(&str, u64)> = Vec::new();
    let mut for_nodes: Vec<&[u8]> = vec![b"CONFIG", b"SET"];
    for pair in args[2..].chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        match PROXY_SETTINGS.iter().find(|s| **s == name) {
            Some(setting) => {
                if own.iter().any(|(n, _)| n == setting) {
                    return error_reply(&set_failed(setting, "duplicate parameter"));
                }
                match parse_proxy_value(setting, &pair[1]) {
                    Ok(value) => own.push((setting, value)),
                    Err(e) => return error_reply(&e),
                }
            }
            None => {
                for_nodes.push(&pair[0]);
                for_nodes.push(&pair[1]);
            }
        }
    }
    if for_nodes.len() > 2 {
        if let Err(e) = everywhere(&proxy, &for_nodes).await {
            return e;
        }
    }
    if !own.is_empty() {
        let mut config = (**proxy.config.load()).clone();
        for (name, value) in own {
            match name {
                "maxclients" => config.limits.max_clients = value as usize,
                _ => config.timeouts.idle_secs = value,
            }
        }
        proxy.set_config(config);
    }
    Bytes::from_static(b"+OK\r\n")
}

async fn resetstat(proxy: Arc<Proxy>) -> Bytes {
    if let Err(e) = everywhere(&proxy, &[b"CONFIG", b"RESETSTAT"]).await {
        return e;
    }
    proxy.stats.reset();
    proxy.metrics.reset_info_counts();
    Bytes::from_static(b"+OK\r\n")
}
