//! The admin API's routes.
//!
//! | route | answer |
//! |---|---|
//! | `GET /metrics` | Prometheus text format |
//! | `GET /health` | 200 `{"status":"ok"}` while the process serves; with `--local`, also each local node's state (`"status":"degraded"`, `"ready":false` while one is down) |
//! | `GET /ready` | 200 when every slot has a master (and, with `--local`, every local node runs), 503 otherwise |
//! | `GET /v1/cluster` | nodes, roles, slot ranges, health, keys and memory |
//! | `POST /v1/reshard`, `POST /v1/rebalance`, `POST /v1/nodes`, `POST /v1/nodes/{id}/drain`, `DELETE /v1/nodes/{id}` | start a job (token needed) |
//! | `GET /v1/jobs`, `GET /v1/jobs/{id}` | job progress |
//! | `GET /v1/shards`, `POST /v1/shards/{master}/replicas`, `POST /v1/shards/{master}/failover` | shards, replicas and lag; add a replica; manual failover (see [`super::shards`]) |

use std::sync::Arc;

use hyper::{Method, StatusCode};

use super::http::{error, json, text, AdminRequest, HttpResponse};
use super::metrics::CONTENT_TYPE;
use super::Admin;
use crate::proxy::Proxy;

/// Whether `authorization` carries the configured bearer token.
fn authorized(proxy: &Proxy, authorization: Option<&str>) -> bool {
    let config = proxy.config.load();
    let Some(token) = config.admin.token.as_deref().filter(|t| !t.is_empty()) else {
        return false;
    };
    authorization
        .and_then(|h| h.strip_prefix("Bearer "))
        .is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

/// 401 for a call that changes the cluster without the configured token. Checked from the
/// request's head, before its body is read: an unauthenticated client never makes the
/// proxy take in a body.
pub fn unauthorized(
    proxy: &Proxy,
    method: &Method,
    authorization: Option<&str>,
) -> Option<HttpResponse> {
    let mutating = matches!(
        *method,
        Method::POST | Method::DELETE | Method::PUT | Method::PATCH
    );
    (mutating && !authorized(proxy, authorization)).then(|| {
        error(
            StatusCode::UNAUTHORIZED,
            "this call changes the cluster: send Authorization: Bearer <admin.token> (and configure admin.token)",
        )
    })
}

/// Compares secrets without an early exit, so timing does not reveal a prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub async fn route(admin: &Arc<Admin>, request: AdminRequest) -> HttpResponse {
    let proxy = &admin.proxy;
    let path = request.path.trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(response) = super::jobs::routes::route(admin, &request, &segments).await {
        return response;
    }
    if let Some(response) = super::shards::route(admin, &request, &segments).await {
        return response;
    }
    match (&request.method, segments.as_slice()) {
        (&Method::GET, ["metrics"]) => text(super::metrics::render(proxy), CONTENT_TYPE),
        (&Method::GET, ["health"]) => health(),
        (&Method::GET, ["ready"]) => ready(proxy),
        (&Method::GET, ["v1", "cluster"]) => cluster(proxy),
        (_, ["metrics"] | ["health"] | ["ready"] | ["v1", "cluster"]) => error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} {} is not supported", request.method, request.path),
        ),
        _ => error(
            StatusCode::NOT_FOUND,
            format!("no route for {} {}", request.method, request.path),
        ),
    }
}

/// Liveness: the process answers, so 200 even while a local node is down (restarting the
/// proxy would not help it); the body says which node is down.
fn health() -> HttpResponse {
    let Some(nodes) = crate::local::local_nodes() else {
        return json(StatusCode::OK, &serde_json::json!({ "status": "ok" }));
    };
    let all_running = nodes.iter().all(|n| n.running);
    json(
        StatusCode::OK,
        &serde_json::json!({
            "status": if all_running { "ok" } else { "degraded" },
            "ready": all_running,
            "local_nodes": nodes,
        }),
    )
}

/// Ports of the `--local` nodes that are not running now.
fn local_nodes_down() -> Vec<u16> {
    crate::local::local_nodes()
        .unwrap_or_default()
        .iter()
        .filter(|n| !n.running)
        .map(|n| n.port)
        .collect()
}

fn ready(proxy: &Proxy) -> HttpResponse {
    let topology = proxy.topology.load();
    let uncovered = (0..crate::cluster::SLOT_COUNT as u16)
        .filter(|&slot| topology.master_for(slot).is_none())
        .count();
    // A local node that is down still owns its slots in the topology: check it directly.
    let down = local_nodes_down();
    if topology.masters.is_empty() || uncovered > 0 || !down.is_empty() {
        json(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({
                "ready": false,
                "masters": topology.masters.len(),
                "uncovered_slots": uncovered,
                "local_nodes_down": down,
            }),
        )
    } else {
        json(
            StatusCode::OK,
            &serde_json::json!({ "ready": true, "masters": topology.masters.len() }),
        )
    }
}

fn cluster(proxy: &Proxy) -> HttpResponse {
    let topology = proxy.topology.load();
    let ranges = topology.ranges();
    // Health, keys and memory come from the metrics' last node poll (admin.poll_interval_ms).
    let polled = proxy.metrics.snapshot();
    let nodes: Vec<serde_json::Value> = topology
        .masters
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let slots: Vec<serde_json::Value> = ranges
                .iter()
                .filter(|(_, _, owner)| *owner == i)
                .map(|(start, end, _)| serde_json::json!([start, end]))
                .collect();
            let slot_count: u32 = ranges
                .iter()
                .filter(|(_, _, owner)| *owner == i)
                .map(|(start, end, _)| u32::from(end - start) + 1)
                .sum();
            let sample = polled.nodes.iter().find(|n| n.addr == node.addr);
            let health = match polled.up.iter().find(|(addr, _)| *addr == node.addr) {
                Some((_, true)) => "ok",
                Some((_, false)) => "unreachable",
                None => "unknown",
            };
            serde_json::json!({
                "id": node.id,
                "addr": node.addr,
                "role": "master",
                "slots": slots,
                "slot_count": slot_count,
                "health": health,
                "keys": sample.map(|s| s.keys),
                "used_memory_bytes": sample.map(|s| s.used_memory),
                "replicas": sample.map(|s| s.replicas.clone()).unwrap_or_default(),
            })
        })
        .collect();
    json(
        StatusCode::OK,
        &serde_json::json!({ "topology_version": topology.version, "nodes": nodes }),
    )
}
