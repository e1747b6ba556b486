//! The cluster as the metrics show it: a background task on the control runtime polls every
//! node (`INFO`, and `CLUSTER INFO` on masters) every `admin.poll_interval_ms`, and every
//! `admin.slot_keys_every` polls counts the keys of every slot (`CLUSTER COUNTKEYSINSLOT`,
//! pipelined per node). Scrapes read the last [`ClusterSnapshot`]; polling on every scrape
//! would make a scrape as slow as the slowest node.
//!
//! The slot map only names the masters that serve slots, so masters also answer
//! `CLUSTER NODES`: that finds failed masters (reported down rather than silently dropped)
//! and replicas; replicas are also read from `INFO replication` (`slaveN:ip=..,port=..`).
//! A node the cluster forgot (`CLUSTER FORGET`, a drained node removed) leaves the metrics
//! with the next poll, so removing a node does not leave a "down" node behind.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::backend::topology::call_many;
use crate::metrics::{ClusterSnapshot, NodeSample};
use crate::proxy::Proxy;
use crate::resp::Frame;

/// Slots counted per pipeline.
const COUNT_BATCH: usize = 1024;

/// Polls until the process ends.
pub async fn run(proxy: Arc<Proxy>) {
    let mut round: u64 = 0;
    loop {
        let config = proxy.config.load_full();
        let interval = Duration::from_millis(config.admin.poll_interval_ms.max(100));
        let count_slots = round.is_multiple_of(config.admin.slot_keys_every.max(1));
        let snapshot = poll(&proxy, interval.min(Duration::from_secs(2)), count_slots).await;
        proxy.metrics.store_snapshot(snapshot);
        round = round.wrapping_add(1);
        tokio::time::sleep(interval).await;
    }
}

fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
        .map(str::trim)
}

fn number(info: &str, name: &str) -> u64 {
    field(info, name).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Reads what the metrics need from an INFO reply.
pub fn parse_info(addr: &str, info: &str) -> NodeSample {
    let keys = info
        .lines()
        .filter(|l| l.starts_with("db"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, fields)| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix("keys="))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum();
    let replicas = info
        .lines()
        .filter(|l| l.starts_with("slave") && l.contains("ip="))
        .filter_map(|l| {
            let fields = l.split_once(':')?.1;
            let get = |k: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(k)?.strip_prefix('='))
            };
            Some(format!("{}:{}", get("ip")?, get("port")?))
        })
        .collect();
    NodeSample {
        addr: addr.to_string(),
        role: field(info, "role").unwrap_or("unknown").to_string(),
        used_memory: number(info, "used_memory"),
        keys,
        ops_per_sec: number(info, "instantaneous_ops_per_sec"),
        connected_clients: number(info, "connected_clients"),
        repl_offset: number(info, "master_repl_offset"),
        epoch: None,
        replicas,
        known: Vec::new(),
        master_link: field(info, "master_host")
            .zip(field(info, "master_port"))
            .map(|(host, port)| {
                let up = field(info, "master_link_status") == Some("up");
                (format!("{host}:{port}"), up)
            }),
    }
}

/// `(addr, is_master)` of every node with an address in a `CLUSTER NODES` reply.
pub fn parse_cluster_nodes(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let addr = fields.nth(1)?.split(['@', ',']).next()?;
            let flags = fields.next()?;
            if addr.starts_with(':') || flags.contains("noaddr") || flags.contains("handshake") {
                return None;
            }
            Some((addr.to_string(), flags.split(',').any(|f| f == "master")))
        })
        .collect()
}

fn text(frame: &Frame) -> Option<String> {
    frame
        .as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

async fn sample(proxy: Arc<Proxy>, addr: String, master: bool, timeout: Duration) -> NodeSample {
    let pool = proxy.pool(proxy.control_lane());
    let commands: &[&[&str]] = if master {
        &[&["INFO"], &["CLUSTER", "INFO"], &["CLUSTER", "NODES"]]
    } else {
        &[&["INFO"]]
    };
    let Some(frames) = call_many(pool, &addr, commands, timeout).await else {
        return NodeSample {
            addr,
            ..NodeSample::default()
        };
    };
    let Some(info) = frames.first().and_then(text) else {
        return NodeSample {
            addr,
            ..NodeSample::default()
        };
    };
    let mut sample = parse_info(&addr, &info);
    if let Some(cluster) = frames.get(1).and_then(text) {
        sample.epoch = field(&cluster, "cluster_current_epoch").and_then(|v| v.parse().ok());
    }
    if let Some(nodes) = frames.get(2).and_then(text) {
        sample.known = parse_cluster_nodes(&nodes);
    }
    sample
}

/// Counts the keys of each of `slots` on `addr`; slots whose count failed are left out.
async fn count_keys(
    proxy: &Proxy,
    addr: &str,
    slots: &[u16],
    timeout: Duration,
) -> Vec<(u16, u64)> {
    let pool = proxy.pool(proxy.control_lane());
    let mut counts = Vec::with_capacity(slots.len());
    for chunk in slots.chunks(COUNT_BATCH) {
        let texts: Vec<String> = chunk.iter().map(u16::to_string).collect();
        let commands: Vec<[&str; 3]> = texts
            .iter()
            .map(|s| ["CLUSTER", "COUNTKEYSINSLOT", s.as_str()])
            .collect();
        let refs: Vec<&[&str]> = commands.iter().map(|c| &c[..]).collect();
        let Some(frames) = call_many(pool, addr, &refs, timeout).await else {
            break;
        };
        counts.extend(
            chunk
                .iter()
                .zip(&frames)
                .filter_map(|(&slot, f)| Some((slot, u64::try_from(f.as_integer()?).ok()?))),
        );
    }
    counts
}

async fn poll(proxy: &Arc<Proxy>, timeout: Duration, count_slots: bool) -> ClusterSnapshot {
    let topology = proxy.topology.load_full();
    let masters = topology.master_addrs();
    let mut tasks = JoinSet::new();
    for addr in &masters {
        tasks.spawn(sample(proxy.clone(), addr.clone(), true, timeout));
    }
    let mut answered: HashMap<String, NodeSample> = HashMap::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok(sample) = done {
            answered.insert(sample.addr.clone(), sample);
        }
    }
    // Masters the cluster knows but the slot map does not (failed, or without slots).
    let mut all_masters = masters.clone();
    let mut replicas: Vec<String> = Vec::new();
    for sample in answered.values() {
        for (addr, is_master) in &sample.known {
            if *is_master && !all_masters.contains(addr) {
                all_masters.push(addr.clone());
                tasks.spawn(self::sample(proxy.clone(), addr.clone(), true, timeout));
            }
        }
        replicas.extend(sample.replicas.iter().cloned());
        replicas.extend(sample.known.iter().filter(|k| !k.1).map(|k| k.0.clone()));
    }
    replicas.sort();
    replicas.dedup();
    for addr in replicas.into_iter().filter(|r| !all_masters.contains(r)) {
        tasks.spawn(sample(proxy.clone(), addr, false, timeout));
    }
    while let Some(done) = tasks.join_next().await {
        if let Ok(sample) = done {
            answered.insert(sample.addr.clone(), sample);
        }
    }
    // A node that did not answer has no role.
    answered.retain(|_, s| !s.role.is_empty());
    all_masters.sort();
    let up = all_masters
        .iter()
        .map(|a| (a.clone(), answered.contains_key(a)))
        .collect();
    let mut nodes: Vec<NodeSample> = answered.into_values().collect();
    nodes.sort_by(|a, b| a.addr.cmp(&b.addr));
    let top = proxy.config.load().admin.top_slots;
    let slot_keys = if count_slots {
        let mut all = Vec::new();
        for (index, node) in topology.masters.iter().enumerate() {
            let slots: Vec<u16> = topology
                .ranges()
                .into_iter()
                .filter(|&(_, _, owner)| owner == index)
                .flat_map(|(start, end, _)| start..=end)
                .collect();
            for (slot, keys) in count_keys(proxy, &node.addr, &slots, timeout).await {
                all.push((slot, node.addr.clone(), keys));
            }
        }
        all.retain(|s| s.2 > 0);
        all.sort_unstable_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        all.truncate(top);
        all
    } else {
        proxy.metrics.snapshot().slot_keys.clone()
    };
    ClusterSnapshot {
        up,
        nodes,
        slot_keys,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_info() {
        let info = "# Server\r\nredis_version:7.0.15\r\n# Clients\r\nconnected_clients:4\r\n\
            # Memory\r\nused_memory:1048576\r\nused_memory_human:1M\r\n# Stats\r\n\
            instantaneous_ops_per_sec:250\r\n# Replication\r\nrole:master\r\nconnected_slaves:1\r\n\
            slave0:ip=127.0.0.1,port=7004,state=online,offset=99,lag=0\r\nmaster_repl_offset:99\r\n\
            # Keyspace\r\ndb0:keys=120,expires=3,avg_ttl=0\r\ndb1:keys=5,expires=0,avg_ttl=0\r\n";
        let s = parse_info("n:1", info);
        assert_eq!(s.role, "master");
        assert_eq!(s.used_memory, 1_048_576);
        assert_eq!(s.connected_clients, 4);
        assert_eq!(s.ops_per_sec, 250);
        assert_eq!(s.repl_offset, 99);
        assert_eq!(s.keys, 125);
        assert_eq!(s.replicas, vec!["127.0.0.1:7004".to_string()]);
        assert_eq!(s.master_link, None);
        let replica = parse_info(
            "n:2",
            "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7000\r\nmaster_link_status:down\r\n",
        );
        assert_eq!(replica.master_link, Some(("127.0.0.1:7000".into(), false)));
    }

    #[test]
    fn reads_cluster_nodes() {
        let text = "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n\
            b2 127.0.0.1:7001@17001,host1 master,fail - 0 0 2 connected\n\
            c3 127.0.0.1:7004@17004 slave a1 0 0 1 connected\n\
            d4 :0@0 master,noaddr - 0 0 0 disconnected\n";
        assert_eq!(
            parse_cluster_nodes(text),
            vec![
                ("127.0.0.1:7000".to_string(), true),
                ("127.0.0.1:7001".to_string(), true),
                ("127.0.0.1:7004".to_string(), false),
            ]
        );
    }
}
