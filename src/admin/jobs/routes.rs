//! The job routes of the admin API.
//!
//! | route | body | answer |
//! |---|---|---|
//! | `POST /v1/reshard` | `{"from", "to", "slots": [n, "a-b", ...] \| "count": N, "batch"?, "replace"?}` | 202 job |
//! | `POST /v1/rebalance` | `{"by": "slots"\|"keys", "threshold"?: percent, "batch"?}` | 202 job |
//! | `POST /v1/nodes` | `{"addr": "host:port", "rebalance"?: bool, "batch"?}` | 202 job |
//! | `POST /v1/nodes/{id}/drain` | none | 202 job |
//! | `DELETE /v1/nodes/{id}` | none | 202 job (409 while it owns slots) |
//! | `GET /v1/jobs`, `GET /v1/jobs/{id}` | | progress |
//!
//! Nodes are named by id (or an unambiguous id prefix of 8+ characters) or by `host:port`.
//! Errors: 400 names the field, 404 an unknown node or job, 409 another job is still
//! running (one at a time) or the node still owns slots, 503 the cluster cannot be read.

use std::sync::Arc;

use hyper::{Method, StatusCode};
use serde_json::{Map, Value};

use super::ops::{candidates, links_for, own_id};
use super::view::{nodes_of, ClusterView, NodeInfo};
use super::{plan, Operation, Options};
use crate::admin::http::{error, json, AdminRequest, HttpResponse};
use crate::admin::Admin;
use crate::cluster::SLOT_COUNT;

/// Answers the job routes; `None` for any other path.
pub async fn route(
    admin: &Arc<Admin>,
    request: &AdminRequest,
    segments: &[&str],
) -> Option<HttpResponse> {
    let method = &request.method;
    Some(match (method, segments) {
        (&Method::GET, ["v1", "jobs"]) => {
            let jobs: Vec<Value> = admin.jobs.all().iter().map(|j| j.to_json()).collect();
            json(StatusCode::OK, &serde_json::json!({ "jobs": jobs }))
        }
        (&Method::GET, ["v1", "jobs", id]) => match admin.jobs.get(id) {
            Some(job) => json(StatusCode::OK, &job.to_json()),
            None => error(StatusCode::NOT_FOUND, format!("no job {id}")),
        },
        (&Method::POST, ["v1", "reshard"]) => start(admin, request, reshard).await,
        (&Method::POST, ["v1", "rebalance"]) => start(admin, request, rebalance).await,
        (&Method::POST, ["v1", "nodes"]) => start(admin, request, add_node).await,
        (&Method::POST, ["v1", "nodes", id, "drain"]) => {
            let id = id.to_string();
            start(admin, request, move |view, body| drain(view, body, &id)).await
        }
        (&Method::DELETE, ["v1", "nodes", id]) => {
            let id = id.to_string();
            start(admin, request, move |view, body| forget(view, body, &id)).await
        }
        (_, ["v1", "jobs"] | ["v1", "jobs", _] | ["v1", "reshard"] | ["v1", "rebalance"])
        | (_, ["v1", "nodes"] | ["v1", "nodes", _] | ["v1", "nodes", _, "drain"]) => error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} {} is not supported", request.method, request.path),
        ),
        _ => return None,
    })
}

/// A refusal: status and message.
type Refusal = (StatusCode, String);

fn bad(message: impl Into<String>) -> Refusal {
    (StatusCode::BAD_REQUEST, message.into())
}

/// What a planner needs: the request body, the cluster, and a way to ask one node.
struct Body {
    fields: Map<String, Value>,
}

impl Body {
    fn parse(request: &AdminRequest, allowed: &[&str]) -> Result<Body, Refusal> {
        let value = request.json_body().map_err(bad)?;
        let Value::Object(fields) = value else {
            return Err(bad("the body must be a JSON object"));
        };
        if let Some(unknown) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(bad(format!(
                "{unknown}: unknown field (expected one of: {})",
                allowed.join(", ")
            )));
        }
        Ok(Body { fields })
    }

    fn string(&self, name: &str) -> Result<Option<&str>, Refusal> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
            Some(_) => Err(bad(format!("{name}: must be a non-empty string"))),
        }
    }

    fn positive(&self, name: &str) -> Result<Option<usize>, Refusal> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Ok(Some(n as usize)),
                _ => Err(bad(format!("{name}: must be a positive integer"))),
            },
        }
    }

    fn boolean(&self, name: &str) -> Result<bool, Refusal> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(format!("{name}: must be true or false"))),
        }
    }

    fn options(&self) -> Result<Options, Refusal> {
        Ok(Options {
            batch: self.positive("batch")?,
            replace: self.boolean("replace")?,
        })
    }
}

/// Parses `[n, "a-b", "n", ...]` into slots.
fn slot_list(value: &Value) -> Result<Vec<u16>, Refusal> {
    let items = value
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad("slots: must be a non-empty array of slots or \"a-b\" ranges"))?;
    let max = SLOT_COUNT as u64 - 1;
    let slot = |n: u64, i: usize| {
        if n <= max {
            Ok(n as u16)
        } else {
            Err(bad(format!("slots[{i}]: {n} is not a slot (0-{max})")))
        }
    };
    let mut slots = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let wrong = || bad(format!("slots[{i}]: expected a slot number or \"a-b\""));
        match item {
            Value::Number(n) => slots.push(slot(n.as_u64().ok_or_else(wrong)?, i)?),
            Value::String(text) => {
                let (a, b) = text.split_once('-').unwrap_or((text, text));
                let a = slot(a.trim().parse().map_err(|_| wrong())?, i)?;
                let b = slot(b.trim().parse().map_err(|_| wrong())?, i)?;
                if a > b {
                    return Err(bad(format!("slots[{i}]: range {a}-{b} is backwards")));
                }
                slots.extend(a..=b);
            }
            _ => return Err(wrong()),
        }
    }
    slots.sort_unstable();
    slots.dedup();
    Ok(slots)
}

/// A live master named by the request, or 404 / 400.
fn master<'v>(view: &'v ClusterView, field: &str, name: &str) -> Result<&'v NodeInfo, Refusal> {
    let node = view.find(name).ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            format!("{field}: no node {name} in the cluster"),
        )
    })?;
    if !node.is_master() {
        return Err(bad(format!("{field}: {name} is a replica, not a master")));
    }
    if node.is_down() {
        return Err(bad(format!("{field}: {name} is failing or unreachable")));
    }
    Ok(node)
}

fn reshard(view: &ClusterView, body: &Body) -> Result<Operation, Refusal> {
    let from = body.string("from")?.ok_or_else(|| bad("from: required"))?;
    let to = body.string("to")?.ok_or_else(|| bad("to: required"))?;
    let slots = body.fields.get("slots").map(slot_list).transpose()?;
    let count = body.positive("count")?;
    let field = match (&slots, count) {
        (Some(_), Some(_)) => return Err(bad("slots, count: give one of them, not both")),
        (None, None) => return Err(bad("slots: give slots or count")),
        (Some(_), None) => "slots",
        (None, Some(_)) => "count",
    };
    let from = master(view, "from", from)?;
    let to = master(view, "to", to)?;
    if from.id == to.id {
        return Err(bad("to: must differ from from"));
    }
    plan::reshard(view, &from.id, &to.id, slots.as_deref(), count)
        .map_err(|e| bad(format!("{field}: {e}")))?;
    Ok(Operation::Reshard {
        from: from.id.clone(),
        to: to.id.clone(),
        slots,
        count,
    })
}

fn rebalance(_view: &ClusterView, body: &Body) -> Result<Operation, Refusal> {
    let by_keys = match body.string("by")? {
        None | Some("slots") => false,
        Some("keys") => true,
        Some(other) => {
            return Err(bad(format!(
                "by: '{other}' is neither \"slots\" nor \"keys\""
            )))
        }
    };
    let threshold = match body.fields.get("threshold") {
        None | Some(Value::Null) => 2.0,
        Some(v) => match v.as_f64() {
            Some(t) if (0.0..=100.0).contains(&t) => t,
            _ => return Err(bad("threshold: must be a percentage between 0 and 100")),
        },
    };
    Ok(Operation::Rebalance { by_keys, threshold })
}

fn drain(view: &ClusterView, _body: &Body, id: &str) -> Result<Operation, Refusal> {
    let node = master(view, "id", id)?;
    if view.live_masters().len() < 2 {
        return Err((
            StatusCode::CONFLICT,
            "id: no other master to take the slots".into(),
        ));
    }
    Ok(Operation::Drain {
        id: node.id.clone(),
    })
}

fn forget(view: &ClusterView, _body: &Body, id: &str) -> Result<Operation, Refusal> {
    let node = view.find(id).ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            format!("id: no node {id} in the cluster"),
        )
    })?;
    if !node.slots.is_empty() {
        return Err((
            StatusCode::CONFLICT,
            format!(
                "id: {} still owns {} slots; drain it first (POST /v1/nodes/{}/drain)",
                node.id,
                node.slots.len(),
                node.id
            ),
        ));
    }
    Ok(Operation::Forget {
        id: node.id.clone(),
    })
}

/// Add-node requests are checked against the new node itself, so they are planned apart.
fn add_node(_view: &ClusterView, body: &Body) -> Result<Operation, Refusal> {
    let addr = body.string("addr")?.ok_or_else(|| bad("addr: required"))?;
    let valid = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if !valid {
        return Err(bad(format!("addr: '{addr}' is not host:port")));
    }
    Ok(Operation::AddNode {
        addr: addr.to_string(),
        rebalance: body.boolean("rebalance")?,
    })
}

/// The fields each kind of request accepts.
fn allowed(segments_kind: &Operation) -> &'static [&'static str] {
    match segments_kind {
        Operation::Reshard { .. } => &["from", "to", "slots", "count", "batch", "replace"],
        Operation::Rebalance { .. } => &["by", "threshold", "batch", "replace"],
        Operation::AddNode { .. } => &["addr", "rebalance", "batch", "replace"],
        Operation::Drain { .. } | Operation::Forget { .. } => &["batch", "replace"],
    }
}

/// Checks the request, then registers and starts the job: 202 with the job.
async fn start(
    admin: &Arc<Admin>,
    request: &AdminRequest,
    planner: impl FnOnce(&ClusterView, &Body) -> Result<Operation, Refusal>,
) -> HttpResponse {
    match check(admin, request, planner).await {
        Ok((operation, options)) => {
            match admin
                .jobs
                .create(operation, options, admin.proxy.metrics.reshard().clone())
            {
                Ok(job) => {
                    super::spawn(admin.clone(), job.clone());
                    json(StatusCode::ACCEPTED, &job.to_json())
                }
                Err(active) => busy(&active.id),
            }
        }
        Err((status, message)) => error(status, message),
    }
}

fn busy(id: &str) -> HttpResponse {
    error(
        StatusCode::CONFLICT,
        format!("job {id} is still running; one job runs at a time"),
    )
}

async fn check(
    admin: &Arc<Admin>,
    request: &AdminRequest,
    planner: impl FnOnce(&ClusterView, &Body) -> Result<Operation, Refusal>,
) -> Result<(Operation, Options), Refusal> {
    // The body is parsed permissively first, then checked against the kind's fields.
    let body = Body::parse(
        request,
        &[
            "from",
            "to",
            "slots",
            "count",
            "batch",
            "replace",
            "by",
            "threshold",
            "addr",
            "rebalance",
        ],
    )?;
    let options = body.options()?;
    let proxy = &admin.proxy;
    if let Some(active) = admin.jobs.active() {
        return Err((
            StatusCode::CONFLICT,
            format!("job {} is still running; one job runs at a time", active.id),
        ));
    }
    let mut links = links_for(proxy, &admin.jobs);
    let view = ClusterView::load(&mut links, &candidates(proxy))
        .await
        .map_err(|e| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("cannot read the cluster: {e}"),
            )
        })?;
    let operation = planner(&view, &body)?;
    let allowed = allowed(&operation);
    if let Some(unknown) = body.fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!(
            "{unknown}: unknown field (expected one of: {})",
            allowed.join(", ")
        )));
    }
    if let Operation::AddNode { addr, .. } = &operation {
        let id = own_id(&mut links, addr)
            .await
            .map_err(|e| bad(format!("addr: cannot use {addr}: {e}")))?;
        if view.by_id(&id).is_some() {
            return Err((
                StatusCode::CONFLICT,
                format!("addr: {addr} ({id}) is already in the cluster"),
            ));
        }
        let known = nodes_of(&mut links, addr).await.unwrap_or_default();
        if known.len() > 1 || known.iter().any(|n| !n.slots.is_empty()) {
            return Err(bad(format!(
                "addr: {addr} already belongs to a cluster or owns slots (CLUSTER RESET it first)"
            )));
        }
    }
    Ok((operation, options))
}
