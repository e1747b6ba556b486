//! `CLUSTER INFO` through the proxy: the state of the real cluster behind the one-node view
//! the proxy presents (one known node, owning every slot, epoch 1, as `CLUSTER NODES` and
//! `CLUSTER SLOTS` show it).
//!
//! Every master of the slot map is asked for its own `CLUSTER INFO`. A slot is
//! - ok when its master answered and says `cluster_state:ok`,
//! - failing when its master did not answer, or answered an error or `cluster_state:fail`,
//! - unassigned when no master serves it.
//!
//! `cluster_state:ok` needs all 16384 slots ok, as a Redis node with
//! `cluster-require-full-coverage yes` (the default) reports. `cluster_slots_pfail` is the
//! largest count any master reports (slots whose master some node suspects).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::forward::{send_to_node, Pending};
use super::Proxy;
use crate::cluster::SLOT_COUNT;
use crate::resp::{parse_frame, request_bytes, Proto, ReplyBuf};

/// What one master says of itself.
struct MasterState {
    ok: bool,
    pfail: u64,
}

async fn read(proxy: &Arc<Proxy>, pending: Pending) -> MasterState {
    let reply = pending.reply(proxy).await;
    let text = match parse_frame(&reply) {
        Ok(Some((frame, _))) if !frame.is_error() => frame
            .as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
            .map(str::to_string)
    };
    MasterState {
        ok: field("cluster_state").as_deref() == Some("ok"),
        pfail: field("cluster_slots_pfail")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    }
}

/// The `CLUSTER INFO` text.
pub async fn text(proxy: Arc<Proxy>) -> String {
    let topology = proxy.topology.load_full();
    // All asked before any answer is awaited, so a dead master costs one wait, not one each.
    let request = request_bytes(&["CLUSTER", "INFO"]);
    let asked: Vec<Pending> = topology
        .masters
        .iter()
        .map(|m| {
            let lane = proxy.control_lane();
            send_to_node(&proxy, m.addr.clone(), request.clone(), Proto::Resp2, lane)
        })
        .collect();
    let mut states = Vec::with_capacity(asked.len());
    for pending in asked {
        states.push(read(&proxy, pending).await);
    }
    let mut assigned = 0;
    let mut ok = 0;
    for slot in 0..SLOT_COUNT as u16 {
        if let Some(index) = topology.master_of_slot(slot) {
            assigned += 1;
            if states.get(index).is_some_and(|s| s.ok) {
                ok += 1;
            }
        }
    }
    let pfail = states.iter().map(|s| s.pfail).max().unwrap_or(0);
    let state = if ok == SLOT_COUNT { "ok" } else { "fail" };
    format!(
        "cluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{}\r\ncluster_known_nodes:1\r\n\
         cluster_size:1\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\n",
        assigned - ok
    )
}

/// The `CLUSTER INFO` reply.
pub async fn reply(proxy: Arc<Proxy>, proto: Proto) -> Bytes {
    let text = text(proxy).await;
    let mut buf = BytesMut::new();
    ReplyBuf::new(&mut buf, proto).verbatim(b"txt", text.as_bytes());
    buf.freeze()
}
