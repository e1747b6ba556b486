//! The nodes file (`cluster-config-file`), in Redis's `nodes.conf` format:
//!
//! ```text
//! <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link> <slots...>
//! vars currentEpoch <n> lastVoteEpoch <n>
//! ```
//!
//! one line per node, the node itself flagged `myself`, its open migrations written as
//! `[slot->-id]` / `[slot-<-id]`. It is written to a temporary file that then replaces the
//! old one, so a crash leaves either the old or the new file, never half of one.

use std::io::Write;
use std::path::Path;

use super::node::{Flags, Node, NodeId};
use super::state::ClusterState;

/// Writes the state to `path` atomically. With `fsync`, the data also reaches the disk
/// before the rename (Redis does so for epoch changes, which must survive a power loss;
/// slot moves are frequent and only written).
pub fn save(state: &ClusterState, path: &Path, now_ms: u64, fsync: bool) -> std::io::Result<()> {
    let mut text = state.describe(now_ms);
    text.push_str(&format!(
        "vars currentEpoch {} lastVoteEpoch {}\n",
        state.current_epoch, state.last_vote_epoch
    ));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "nodes.conf".into());
    let temp = path.with_file_name(format!("{file_name}.tmp-{}", std::process::id()));
    let mut file = std::fs::File::create(&temp)?;
    file.write_all(text.as_bytes())?;
    if fsync {
        file.sync_all()?;
    }
    drop(file);
    std::fs::rename(&temp, path)
}

/// Reads a nodes file. `Ok(None)` when there is none (or it is empty): the node starts as
/// a new one.
pub fn load(path: &Path, now_ms: u64) -> Result<Option<ClusterState>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    parse(&text, now_ms).map(Some).map_err(|e| {
        format!(
            "Unrecoverable error: corrupted cluster config file {}: {e}",
            path.display()
        )
    })
}

fn parse_id(text: &str) -> Result<NodeId, String> {
    NodeId::parse(text.as_bytes()).ok_or_else(|| format!("bad node id '{text}'"))
}

/// `ip:port@cport[,hostname]`.
fn parse_address(text: &str) -> Result<(String, u16, u16), String> {
    let bad = || format!("bad address '{text}'");
    let text = text.split(',').next().unwrap_or(text);
    let (host_port, cport) = text.split_once('@').ok_or_else(bad)?;
    let (ip, port) = host_port.rsplit_once(':').ok_or_else(bad)?;
    Ok((
        ip.to_string(),
        port.parse().map_err(|_| bad())?,
        cport.parse().map_err(|_| bad())?,
    ))
}

fn parse_flags(text: &str) -> u16 {
    text.split(',')
        .map(|name| match name {
            "myself" => Flags::MYSELF,
            "master" => Flags::MASTER,
            "slave" => Flags::REPLICA,
            "fail?" => Flags::PFAIL,
            "fail" => Flags::FAIL,
            "handshake" => Flags::HANDSHAKE,
            "noaddr" => Flags::NOADDR,
            "nofailover" => Flags::NOFAILOVER,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

fn parse_slot(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .ok()
        .filter(|&s| (s as usize) < slotproxy::cluster::SLOT_COUNT)
        .ok_or_else(|| format!("bad slot '{text}'"))
}

/// What a node line says about slots, applied once every node is known.
enum SlotClaim {
    Owns(NodeId, u16, u16),
    Migrating(u16, NodeId),
    Importing(u16, NodeId),
}

fn parse(text: &str, now_ms: u64) -> Result<ClusterState, String> {
    let mut state: Option<ClusterState> = None;
    let mut others = Vec::new();
    let mut claims = Vec::new();
    let mut epochs = (0, 0);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
        if fields[0] == "vars" {
            let mut pairs = fields[1..].chunks(2);
            for pair in pairs.by_ref() {
                let value = pair.get(1).and_then(|v| v.parse().ok());
                match (pair[0], value) {
                    ("currentEpoch", Some(v)) => epochs.0 = v,
                    ("lastVoteEpoch", Some(v)) => epochs.1 = v,
                    _ => return Err(format!("bad vars line '{line}'")),
                }
            }
            continue;
        }
        if fields.len() < 8 {
            return Err(format!("short line '{line}'"));
        }
        let id = parse_id(fields[0])?;
        let (ip, port, cport) = parse_address(fields[1])?;
        let flags = parse_flags(fields[2]);
        if flags & Flags::HANDSHAKE != 0 {
            continue;
        }
        let mut node = Node::new(id, &ip, port, cport, flags, now_ms);
        if fields[3] != "-" {
            node.master = Some(parse_id(fields[3])?);
        }
        node.config_epoch = fields[6]
            .parse()
            .map_err(|_| format!("bad config epoch '{}'", fields[6]))?;
        for slot in &fields[8..] {
            if let Some(open) = slot.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                if let Some((s, target)) = open.split_once("->-") {
                    claims.push(SlotClaim::Migrating(parse_slot(s)?, parse_id(target)?));
                } else if let Some((s, source)) = open.split_once("-<-") {
                    claims.push(SlotClaim::Importing(parse_slot(s)?, parse_id(source)?));
                } else {
                    return Err(format!("bad slot entry '{slot}'"));
                }
            } else if let Some((a, b)) = slot.split_once('-') {
                claims.push(SlotClaim::Owns(id, parse_slot(a)?, parse_slot(b)?));
            } else {
                let s = parse_slot(slot)?;
                claims.push(SlotClaim::Owns(id, s, s));
            }
        }
        if node.is_myself() {
            if state.is_some() {
                return Err("two nodes are flagged myself".into());
            }
            let mut fresh = ClusterState::new(port, cport, now_ms);
            fresh.nodes.clear();
            fresh.myself = id;
            fresh.nodes.insert(id, node);
            state = Some(fresh);
        } else {
            others.push(node);
        }
    }
    let mut state = state.ok_or("no node is flagged myself")?;
    for node in others {
        state.nodes.entry(node.id).or_insert(node);
    }
    state.current_epoch = epochs.0;
    state.last_vote_epoch = epochs.1;
    for claim in claims {
        match claim {
            SlotClaim::Owns(id, a, b) => {
                for slot in a..=b {
                    state.assign(slot, id);
                }
            }
            SlotClaim::Migrating(slot, id) if state.nodes.contains_key(&id) => {
                state.migrating.insert(slot, id);
            }
            SlotClaim::Importing(slot, id) if state.nodes.contains_key(&id) => {
                state.importing.insert(slot, id);
            }
            _ => {}
        }
    }
    state.needs_save = false;
    state.needs_fsync = false;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_id_slots_epochs_and_peers() {
        let mut state = ClusterState::new(7000, 17000, 0);
        let me = state.myself;
        let peer = NodeId::random();
        let mut node = Node::new(peer, "127.0.0.1", 7001, 17001, Flags::MASTER, 0);
        node.config_epoch = 2;
        state.nodes.insert(peer, node);
        state.me_mut().ip = "127.0.0.1".into();
        state.me_mut().config_epoch = 3;
        state.current_epoch = 3;
        for s in 0..100 {
            state.assign(s, me);
        }
        state.assign(200, peer);
        let replica = NodeId::random();
        let mut node = Node::new(replica, "127.0.0.1", 7002, 17002, Flags::REPLICA, 0);
        node.master = Some(peer);
        state.nodes.insert(replica, node);
        state.migrating.insert(5, peer);
        state.importing.insert(300, peer);
        let dir = std::env::temp_dir().join(format!("nodes-file-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nodes.conf");
        save(&state, &path, 0, true).unwrap();
        let loaded = load(&path, 0).unwrap().unwrap();
        assert_eq!(loaded.myself, me);
        assert_eq!(loaded.current_epoch, 3);
        assert_eq!(loaded.me().config_epoch, 3);
        assert_eq!(loaded.ranges_of(&me), vec![(0, 99)]);
        assert_eq!(loaded.slots[200], Some(peer));
        assert_eq!(loaded.nodes[&peer].config_epoch, 2);
        assert_eq!(loaded.nodes[&replica].master, Some(peer));
        assert!(loaded.nodes[&replica].is_replica());
        assert_eq!(loaded.migrating.get(&5), Some(&peer));
        assert_eq!(loaded.importing.get(&300), Some(&peer));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reads_a_redis_nodes_conf() {
        let text = "f963e34d02741028ef2132051c5a1fc2557d0afa 127.0.0.1:31001@41001 myself,master - 0 1795253735000 6 connected 0-6826 10923-12287\n\
                    d5a53706ced89f12036e9fa9ea21c17ea8221f19 127.0.0.1:31003@41003 master - 0 1795253735172 3 connected 12288-16383\n\
                    vars currentEpoch 6 lastVoteEpoch 0\n";
        let state = parse(text, 0).unwrap();
        assert_eq!(state.me().port, 31001);
        assert_eq!(state.current_epoch, 6);
        assert_eq!(state.slot_count(&state.myself), 6827 + 1365);
    }

    #[test]
    fn corrupt_files_are_refused() {
        assert!(parse("garbage\n", 0).is_err());
        assert!(parse("vars currentEpoch x\n", 0).is_err());
    }
}
