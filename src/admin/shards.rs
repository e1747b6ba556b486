//! The shard routes of the admin API: each shard's master and replicas, adding a replica,
//! and a manual failover.
//!
//! | route | body | answer |
//! |---|---|---|
//! | `GET /v1/shards` | | every master (failed ones too) with its slots and replicas: flags, health, the replica's link to its master, offsets and lag in bytes |
//! | `POST /v1/shards/{master}/replicas` | `{"addr": "host:port"}` | 200 once the node (empty, cluster mode) was met and `CLUSTER REPLICATE` accepted it |
//! | `POST /v1/shards/{master}/failover` | `{"replica"?: node, "mode"?: "force" \| "takeover"}` | 200 once the replica says it is master; 504 if it did not become master in time |
//!
//! Nodes are named as in the job routes (id, 8+ character id prefix, or `host:port`). The
//! view is read live from the nodes (`CLUSTER NODES`, and `INFO replication` of each
//! node), never from the proxy's memory. The failover's replica, when not named, is the
//! master's healthy replica with the largest replication offset (the one that lost least).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use super::http::{error, json, AdminRequest, HttpResponse};
use super::jobs::link::{cmd, Links};
use super::jobs::ops::{add_node, candidates};
use super::jobs::view::{nodes_of, ClusterView, NodeInfo};
use super::Admin;

/// How long a failover may take to complete (Redis gives a manual failover 5 s, an election
/// after it up to twice the node timeout).
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(20);
/// Interval between checks while waiting for the replica to become master.
const POLL: Duration = Duration::from_millis(100);

/// Answers the shard routes; `None` for any other path.
pub async fn route(
    admin: &Arc<Admin>,
    request: &AdminRequest,
    segments: &[&str],
) -> Option<HttpResponse> {
    Some(match (&request.method, segments) {
        (&Method::GET, ["v1", "shards"]) => view(admin).await,
        (&Method::POST, ["v1", "shards", master, "replicas"]) => {
            add_replica(admin, request, master).await
        }
        (&Method::POST, ["v1", "shards", master, "failover"]) => {
            failover(admin, request, master).await
        }
        (_, ["v1", "shards"] | ["v1", "shards", _, "replicas" | "failover"]) => error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} {} is not supported", request.method, request.path),
        ),
        _ => return None,
    })
}

/// Connections for one admin call: each command bounded, so a stopped node costs seconds,
/// not the jobs' long MIGRATE timeout.
fn links(admin: &Admin) -> Links {
    let connect = Duration::from_millis(admin.proxy.config.load().timeouts.connect_ms.max(100));
    Links::new(admin.jobs.permits.clone(), connect, Duration::from_secs(5))
}

/// A refusal: status and message (turned into the answer by [`refuse`]).
type Refusal = (StatusCode, String);

fn refuse((status, message): Refusal) -> HttpResponse {
    error(status, message)
}

async fn load(links: &mut Links, admin: &Admin) -> Result<ClusterView, Refusal> {
    ClusterView::load(links, &candidates(&admin.proxy))
        .await
        .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e))
}

/// What a node's `INFO replication` says; `None` fields when it did not answer.
#[derive(Default)]
struct Replication {
    answered: bool,
    offset: Option<u64>,
    link_up: Option<bool>,
}

async fn replication(links: &mut Links, addr: &str) -> Replication {
    let Ok(frame) = links.call(addr, cmd(&["INFO", "replication"])).await else {
        return Replication::default();
    };
    let Some(text) = frame.as_bytes().map(String::from_utf8_lossy) else {
        return Replication::default();
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    Replication {
        answered: true,
        offset: field("master_repl_offset").and_then(|v| v.parse().ok()),
        link_up: field("master_link_status").map(|s| s == "up"),
    }
}

fn health(node: &NodeInfo, answered: bool) -> &'static str {
    let flag = |f: &str| node.flags.iter().any(|x| x == f);
    if flag("fail") {
        "fail"
    } else if flag("fail?") {
        "pfail"
    } else if !answered {
        "unreachable"
    } else {
        "ok"
    }
}

/// `[[start, end], ...]` of a sorted slot list.
fn ranges(slots: &[u16]) -> Vec<Value> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for &slot in slots {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == slot => *end = slot,
            _ => out.push((slot, slot)),
        }
    }
    out.into_iter().map(|(a, b)| json!([a, b])).collect()
}

async fn view(admin: &Arc<Admin>) -> HttpResponse {
    let mut links = links(admin);
    let view = match load(&mut links, admin).await {
        Ok(view) => view,
        Err(refused) => return refuse(refused),
    };
    let mut shards = Vec::new();
    for master in view.nodes.iter().filter(|n| n.is_master()) {
        let own = replication(&mut links, &master.addr).await;
        let mut replicas = Vec::new();
        for replica in view.nodes.iter().filter(|n| n.master_of == master.id) {
            let state = replication(&mut links, &replica.addr).await;
            let lag = own
                .offset
                .zip(state.offset)
                .map(|(m, r)| m.saturating_sub(r));
            replicas.push(json!({
                "id": replica.id,
                "addr": replica.addr,
                "flags": replica.flags,
                "health": health(replica, state.answered),
                "link": match state.link_up {
                    Some(true) => "up",
                    Some(false) => "down",
                    None => "unknown",
                },
                "repl_offset": state.offset,
                "lag_bytes": lag,
            }));
        }
        shards.push(json!({
            "master": {
                "id": master.id,
                "addr": master.addr,
                "flags": master.flags,
                "health": health(master, own.answered),
                "repl_offset": own.offset,
            },
            "slot_count": master.slots.len(),
            "slots": ranges(&master.slots),
            "replicas": replicas,
        }));
    }
    json(
        StatusCode::OK,
        &json!({ "topology_version": admin.proxy.topology.load().version, "shards": shards }),
    )
}

/// The request's JSON object, with only `allowed` fields, or a 400.
fn body(
    request: &AdminRequest,
    allowed: &[&str],
) -> Result<serde_json::Map<String, Value>, Refusal> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let Value::Object(fields) = request.json_body().map_err(bad)? else {
        return Err(bad("the body must be a JSON object".into()));
    };
    if let Some(unknown) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!(
            "{unknown}: unknown field (expected one of: {})",
            allowed.join(", ")
        )));
    }
    for (name, value) in &fields {
        if !value.is_string() {
            return Err(bad(format!("{name}: must be a string")));
        }
    }
    Ok(fields)
}

fn string<'a>(fields: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a str> {
    fields.get(name).and_then(Value::as_str)
}

/// The master a route names, or 404 / 400.
fn named_master<'v>(view: &'v ClusterView, name: &str) -> Result<&'v NodeInfo, Refusal> {
    let node = view.find(name).ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            format!("master: no node {name} in the cluster"),
        )
    })?;
    if !node.is_master() {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("master: {name} is a replica, not a master"),
        ));
    }
    Ok(node)
}

async fn add_replica(admin: &Arc<Admin>, request: &AdminRequest, name: &str) -> HttpResponse {
    let fields = match body(request, &["addr"]) {
        Ok(fields) => fields,
        Err(refused) => return refuse(refused),
    };
    let Some(addr) = string(&fields, "addr") else {
        return error(StatusCode::BAD_REQUEST, "addr: required (host:port)");
    };
    let mut links = links(admin);
    let view = match load(&mut links, admin).await {
        Ok(view) => view,
        Err(refused) => return refuse(refused),
    };
    let master = match named_master(&view, name) {
        Ok(master) if master.is_down() => {
            return error(
                StatusCode::CONFLICT,
                format!("master: {name} is failing; a replica cannot sync from it"),
            )
        }
        Ok(master) => master.clone(),
        Err(refused) => return refuse(refused),
    };
    if view.find(addr).is_none() {
        if let Err(e) = add_node(&mut links, &view, addr).await {
            return error(StatusCode::BAD_GATEWAY, e);
        }
    }
    if let Err(e) = links
        .ok(addr, cmd(&["CLUSTER", "REPLICATE", master.id.as_str()]))
        .await
    {
        return error(StatusCode::CONFLICT, e);
    }
    admin.proxy.request_refresh();
    let id = nodes_of(&mut links, addr)
        .await
        .ok()
        .and_then(|nodes| nodes.into_iter().find(NodeInfo::is_myself))
        .map(|n| n.id);
    json(
        StatusCode::OK,
        &json!({
            "replica": { "id": id, "addr": addr },
            "master": { "id": master.id, "addr": master.addr },
        }),
    )
}

async fn failover(admin: &Arc<Admin>, request: &AdminRequest, name: &str) -> HttpResponse {
    let fields = match body(request, &["replica", "mode"]) {
        Ok(fields) => fields,
        Err(refused) => return refuse(refused),
    };
    let mode = match string(&fields, "mode") {
        None => None,
        Some(m) if m.eq_ignore_ascii_case("force") => Some("FORCE"),
        Some(m) if m.eq_ignore_ascii_case("takeover") => Some("TAKEOVER"),
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("mode: '{other}' is neither \"force\" nor \"takeover\""),
            )
        }
    };
    let mut links = links(admin);
    let view = match load(&mut links, admin).await {
        Ok(view) => view,
        Err(refused) => return refuse(refused),
    };
    let master = match named_master(&view, name) {
        Ok(master) => master.clone(),
        Err(refused) => return refuse(refused),
    };
    let replica = match string(&fields, "replica") {
        Some(wanted) => match view.find(wanted) {
            Some(node) if node.master_of == master.id => node.clone(),
            Some(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("replica: {wanted} is not a replica of {}", master.addr),
                )
            }
            None => {
                return error(
                    StatusCode::NOT_FOUND,
                    format!("replica: no node {wanted} in the cluster"),
                )
            }
        },
        None => match best_replica(&mut links, &view, &master).await {
            Some(node) => node,
            None => {
                return error(
                    StatusCode::CONFLICT,
                    format!("{} has no healthy replica to fail over to", master.addr),
                )
            }
        },
    };
    let mut command = vec!["CLUSTER", "FAILOVER"];
    command.extend(mode);
    if let Err(e) = links.ok(&replica.addr, cmd(&command)).await {
        return error(StatusCode::CONFLICT, e);
    }
    let deadline = Instant::now() + FAILOVER_TIMEOUT;
    loop {
        let promoted = nodes_of(&mut links, &replica.addr)
            .await
            .ok()
            .and_then(|nodes| nodes.into_iter().find(NodeInfo::is_myself))
            .is_some_and(|me| me.is_master());
        if promoted {
            break;
        }
        if Instant::now() > deadline {
            return error(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "{} accepted CLUSTER FAILOVER but was not master within {FAILOVER_TIMEOUT:?}",
                    replica.addr
                ),
            );
        }
        tokio::time::sleep(POLL).await;
    }
    // Learned now rather than at the next refresh, so the proxy's answer means its
    // requests already go to the new master.
    let _ = admin.proxy.refresh_topology().await;
    json(
        StatusCode::OK,
        &json!({
            "old_master": { "id": master.id, "addr": master.addr },
            "new_master": { "id": replica.id, "addr": replica.addr },
            "mode": mode.unwrap_or("default").to_ascii_lowercase(),
        }),
    )
}

/// The healthy replica of `master` with the largest replication offset (then the lowest
/// address, so the choice is stable).
async fn best_replica(
    links: &mut Links,
    view: &ClusterView,
    master: &NodeInfo,
) -> Option<NodeInfo> {
    let mut best: Option<(u64, NodeInfo)> = None;
    for node in view
        .nodes
        .iter()
        .filter(|n| n.master_of == master.id && !n.is_down())
    {
        let state = replication(links, &node.addr).await;
        if !state.answered {
            continue;
        }
        let offset = state.offset.unwrap_or(0);
        let better = match &best {
            None => true,
            Some((top, chosen)) => offset > *top || (offset == *top && node.addr < chosen.addr),
        };
        if better {
            best = Some((offset, node.clone()));
        }
    }
    best.map(|(_, node)| node)
}
