//! `/metrics` against a real Prometheus: every PromQL expression of the shipped dashboard and
//! alert rules must return data from a proxy under load.
//!
//! A real 3-master Redis Cluster with a replica each, the proxy in front of it (cluster poll every 300 ms), a
//! bounded mixed load from a thread (SET, GET, cross-slot MGET and DEL, INCR, HSET, EXISTS,
//! PING, and a few commands that fail), and Debian's `prometheus` scraping the admin endpoint
//! every second with `dashboards/slotproxy-alerts.yml` loaded as its rules. Then, through
//! Prometheus's HTTP query API:
//! - every `targets[].expr` of `dashboards/slotproxy-grafana.json` (template variables
//!   substituted: `$__rate_interval` → `1m`, `$command` and `$instance` → `.*`) must return
//!   a non-empty result;
//! - every alert rule must be valid and evaluated by Prometheus without error, and its
//!   condition's *measured side* must return data. An alert condition is `A > threshold`
//!   (or `A == 0`, ...), possibly several joined by `and`/`or`/`unless`; on a healthy
//!   cluster the full condition is rightly empty (no alert), so requiring data from it would
//!   demand a broken cluster. Instead each operand of a top-level `and`/`or`/`unless` is
//!   evaluated with its trailing top-level comparison removed: that is the figure the alert
//!   watches, and it must exist. The full expression is evaluated too and must be accepted
//!   (an empty result is fine for it).
//! - every `slotproxy_*` name in the dashboard and the rules must be a sample name the
//!   proxy's `/metrics` actually shows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_harness::http::get;
use test_harness::{free_port, start_proxy, Cluster, RawClient, ServerProcess};

/// Bounds of the load thread.
const LOAD_MAX_OPS: u64 = 1_000_000;
const LOAD_MAX_TIME: Duration = Duration::from_secs(120);
/// Commands per pipelined batch, and the pause between batches (pacing, so the load leaves
/// CPU for the cluster, the proxy and Prometheus on a small machine).
const BATCH: usize = 40;
const PACE: Duration = Duration::from_millis(5);
/// How long Prometheus may take to have data for every expression.
const DATA_TIMEOUT: Duration = Duration::from_secs(90);
/// Scrapes to wait for before evaluating (a `rate` needs two samples).
const MIN_SCRAPES: f64 = 5.0;

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slotproxy-{name}-{}", free_port()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

#[test]
fn dashboard_and_alert_expressions_return_data() {
    // With replicas, so the replica link and lag panels have data too.
    let cluster = Cluster::redis_with_replicas(3);
    let dir = temp_dir("prometheus-test");
    let config = dir.join("slotproxy.yaml");
    std::fs::write(
        &config,
        "admin:\n  poll_interval_ms: 300\n  slot_keys_every: 1\n",
    )
    .expect("write proxy config");
    let proxy = start_proxy(
        &cluster.seeds(),
        &["--config", &config.display().to_string()],
    );
    dashboards_and_alerts_return_data(&proxy, &dir);
}

/// The scenario, for any cluster behind `proxy`: load, Prometheus, every expression.
pub fn dashboards_and_alerts_return_data(proxy: &ServerProcess, dir: &Path) {
    let admin = proxy.admin_port().expect("admin port announced");
    let stop = Arc::new(AtomicBool::new(false));
    let load = start_load(proxy.port, stop.clone());
    let prometheus = start_prometheus(admin, dir);
    let outcome = std::panic::catch_unwind(|| check_everything(prometheus.port, admin));
    stop.store(true, Ordering::Relaxed);
    let ops = load.join().expect("load thread");
    if let Err(panic) = outcome {
        eprintln!("prometheus log:\n{}", tail(&prometheus.log(), 40));
        std::panic::resume_unwind(panic);
    }
    assert!(ops > 0, "the load ran no commands");
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A mixed, pipelined load until `stop`, bounded in commands and time. Returns the commands
/// sent.
fn start_load(port: u16, stop: Arc<AtomicBool>) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut client = RawClient::connect(port);
        let started = Instant::now();
        let mut ops: u64 = 0;
        let mut round: u64 = 0;
        while !stop.load(Ordering::Relaxed)
            && ops < LOAD_MAX_OPS
            && started.elapsed() < LOAD_MAX_TIME
        {
            let mut expected = 0;
            for i in 0..BATCH as u64 {
                let n = round * BATCH as u64 + i;
                let key = format!("load:{}", n % 500);
                let other = format!("load:{}", (n * 7 + 3) % 500);
                let value = n.to_string();
                let command: Vec<&[u8]> = match n % 12 {
                    0..=3 => vec![b"SET", key.as_bytes(), value.as_bytes()],
                    4..=6 => vec![b"GET", key.as_bytes()],
                    7 => vec![b"MGET", key.as_bytes(), other.as_bytes(), b"load:x"],
                    8 => vec![b"HSET", b"load:hash", key.as_bytes(), value.as_bytes()],
                    9 => vec![b"EXISTS", key.as_bytes(), other.as_bytes()],
                    10 if n.is_multiple_of(5) => vec![b"INCR", b"load:hash"], // WRONGTYPE: an error
                    10 => vec![b"INCR", b"load:counter"],
                    _ if n.is_multiple_of(7) => vec![b"DEL", b"load:gone1", b"load:gone2"],
                    _ => vec![b"PING"],
                };
                client.send(&command);
                expected += 1;
            }
            for _ in 0..expected {
                client.read_reply();
            }
            ops += expected;
            round += 1;
            std::thread::sleep(PACE);
        }
        ops
    })
}

fn start_prometheus(admin: u16, dir: &Path) -> ServerProcess {
    let port = free_port();
    let config = dir.join("prometheus.yml");
    let rules = repo_file("dashboards/slotproxy-alerts.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: slotproxy\n    static_configs:\n      - targets: ['127.0.0.1:{admin}']\n",
            rules.display()
        ),
    )
    .expect("write prometheus config");
    let data = dir.join("tsdb");
    let prometheus = ServerProcess::spawn(
        "prometheus",
        &PathBuf::from("prometheus"),
        &[
            format!("--config.file={}", config.display()),
            format!("--storage.tsdb.path={}", data.display()),
            format!("--web.listen-address=127.0.0.1:{port}"),
        ],
        port,
        "Server is ready to receive web requests.",
    );
    wait_until("Prometheus /-/ready", Duration::from_secs(30), || {
        (get(port, "/-/ready").status == 200).then_some(())
    });
    prometheus
}

/// Polls `probe` (bounded) until it gives a value.
fn wait_until<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Evaluates an instant query: the result samples, or Prometheus's error.
fn query(port: u16, expr: &str) -> Result<Vec<Value>, String> {
    let reply = get(port, &format!("/api/v1/query?query={}", url_encode(expr)));
    let body: Value =
        serde_json::from_str(&reply.body).map_err(|e| format!("{e}: {}", reply.body))?;
    if body["status"] != "success" {
        return Err(format!("{}: {}", body["errorType"], body["error"]));
    }
    match body["data"]["resultType"].as_str() {
        Some("vector" | "matrix") => Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()),
        Some(_) => Ok(vec![body["data"]["result"].clone()]),
        None => Err(format!("no result type: {}", reply.body)),
    }
}

/// Every `targets[].expr` in the dashboard, panels nested in rows included.
fn dashboard_exprs(dashboard: &Value) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(targets) = map.get("targets").and_then(Value::as_array) {
                    for target in targets {
                        if let Some(expr) = target.get("expr").and_then(Value::as_str) {
                            out.push(expr.to_string());
                        }
                    }
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(dashboard, &mut out);
    out
}

/// Grafana's variables replaced by values a test Prometheus can evaluate.
fn substitute(expr: &str) -> String {
    let out = expr
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
        .replace("$command", ".*")
        .replace("$instance", ".*");
    assert!(!out.contains('$'), "unsubstituted variable in {expr}");
    out
}

/// `(alert name, expr)` of every rule.
fn alert_rules() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_file("dashboards/slotproxy-alerts.yml"))
        .expect("read alert rules");
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).expect("alert rules are YAML");
    let mut rules = Vec::new();
    for group in doc["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"]
                .as_str()
                .or_else(|| rule["record"].as_str())
                .expect("rule name");
            let expr = rule["expr"].as_str().expect("rule expr");
            rules.push((name.to_string(), expr.trim().to_string()));
        }
    }
    rules
}

/// Byte offsets of top-level (outside brackets and quotes) occurrences of `words`.
fn top_level_words(expr: &str, words: &[&str]) -> Vec<(usize, usize)> {
    let bytes = expr.as_bytes();
    let (mut depth, mut quote) = (0i32, None);
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), b'\\') => i += 1,
            (Some(_), _) => {}
            (None, b'"' | b'\'' | b'`') => quote = Some(c),
            (None, b'(' | b'{' | b'[') => depth += 1,
            (None, b')' | b'}' | b']') => depth -= 1,
            (None, _) if depth == 0 => {
                let boundary_before =
                    i == 0 || !bytes[i - 1].is_ascii_alphanumeric() && bytes[i - 1] != b'_';
                for word in words {
                    let end = i + word.len();
                    let boundary_after = end >= bytes.len()
                        || !bytes[end].is_ascii_alphanumeric() && bytes[end] != b'_';
                    if boundary_before && boundary_after && expr[i..].starts_with(word) {
                        found.push((i, end));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The operands of top-level `and` / `or` / `unless`.
fn set_operands(expr: &str) -> Vec<String> {
    let mut operands = Vec::new();
    let mut start = 0;
    for (at, end) in top_level_words(expr, &["and", "or", "unless"]) {
        operands.push(expr[start..at].trim().to_string());
        start = end;
    }
    operands.push(expr[start..].trim().to_string());
    operands
        .into_iter()
        .map(|op| {
            // Drop a leading `on(...)` / `ignoring(...)` matching modifier.
            let trimmed = op.trim_start();
            for modifier in ["on", "ignoring"] {
                if let Some(rest) = trimmed.strip_prefix(modifier) {
                    if let Some(rest) = rest.trim_start().strip_prefix('(') {
                        if let Some(close) = rest.find(')') {
                            return rest[close + 1..].trim().to_string();
                        }
                    }
                }
            }
            op
        })
        .collect()
}

/// The left side of a top-level comparison (`A > 0.5` → `A`), or the expression itself.
fn strip_comparison(expr: &str) -> String {
    let bytes = expr.as_bytes();
    let (mut depth, mut quote) = (0i32, None);
    for (i, &c) in bytes.iter().enumerate() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'' | b'`') => quote = Some(c),
            (None, b'(' | b'{' | b'[') => depth += 1,
            (None, b')' | b'}' | b']') => depth -= 1,
            (None, b'>' | b'<') if depth == 0 => return expr[..i].trim().to_string(),
            (None, b'=' | b'!') if depth == 0 && bytes.get(i + 1) == Some(&b'=') => {
                return expr[..i].trim().to_string()
            }
            _ => {}
        }
    }
    expr.trim().to_string()
}

/// The sample names `/metrics` shows.
fn exported_names(admin: u16) -> BTreeSet<String> {
    let reply = get(admin, "/metrics");
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
        .body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

/// The `slotproxy_*` names an expression uses.
fn referenced_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("slotproxy_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

fn check_everything(prometheus: u16, admin: u16) {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_file("dashboards/slotproxy-grafana.json"))
            .expect("read dashboard"),
    )
    .expect("dashboard is JSON");
    let panel_exprs = dashboard_exprs(&dashboard);
    assert!(
        panel_exprs.len() >= 20,
        "dashboard has {} exprs",
        panel_exprs.len()
    );
    let rules = alert_rules();
    assert!(rules.len() >= 5, "only {} alert rules", rules.len());

    // Enough scrapes for rates over 1m.
    wait_until("Prometheus to scrape the proxy", DATA_TIMEOUT, || {
        let samples = query(prometheus, "count_over_time(slotproxy_uptime_seconds[1m])").ok()?;
        let value = samples.first()?["value"][1].as_str()?.parse::<f64>().ok()?;
        (value >= MIN_SCRAPES).then_some(())
    });

    // (what, PromQL): all must return data.
    let mut must_have_data: Vec<(String, String)> = panel_exprs
        .iter()
        .map(|e| (format!("dashboard: {e}"), substitute(e)))
        .collect();
    for (name, expr) in &rules {
        for operand in set_operands(expr) {
            let measured = strip_comparison(&operand);
            must_have_data.push((format!("alert {name}: {measured}"), measured));
        }
    }
    let deadline = Instant::now() + DATA_TIMEOUT;
    loop {
        let failures: Vec<String> = must_have_data
            .iter()
            .filter_map(|(what, expr)| match query(prometheus, expr) {
                Ok(result) if !result.is_empty() => None,
                Ok(_) => Some(format!("{what}: empty result")),
                Err(e) => Some(format!("{what}: {e}")),
            })
            .collect();
        if failures.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} expressions returned no data:\n{}",
            failures.len(),
            failures.join("\n")
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // Full alert expressions are valid PromQL (empty is fine: no alert is firing).
    for (name, expr) in &rules {
        if let Err(e) = query(prometheus, expr) {
            panic!("alert {name} does not evaluate: {e}");
        }
    }
    // Prometheus loaded every rule and evaluates them without error.
    wait_until("every rule evaluated", DATA_TIMEOUT, || {
        let body: Value = serde_json::from_str(&get(prometheus, "/api/v1/rules").body).ok()?;
        let loaded: Vec<&Value> = body["data"]["groups"]
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().into_iter().flatten())
            .collect();
        assert!(
            loaded.iter().all(|r| r["health"] != "err"),
            "a rule fails: {loaded:?}"
        );
        (loaded.len() == rules.len() && loaded.iter().all(|r| r["health"] == "ok")).then_some(())
    });

    // No dashboard panel or rule names a metric the proxy does not export.
    let exported = exported_names(admin);
    let mut referenced = BTreeSet::new();
    for expr in panel_exprs.iter().chain(rules.iter().map(|(_, e)| e)) {
        referenced.extend(referenced_names(expr));
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("templating")
    {
        if let Some(definition) = variable["definition"].as_str() {
            referenced.extend(referenced_names(definition));
        }
    }
    let missing: Vec<&String> = referenced.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "referenced but not exported: {missing:?}\nexported: {exported:?}"
    );

    // The same node poll feeds /v1/cluster.
    let topology: Value =
        serde_json::from_str(&get(admin, "/v1/cluster").body).expect("/v1/cluster is JSON");
    for node in topology["nodes"].as_array().expect("nodes") {
        assert_eq!(node["health"], "ok", "{node}");
        assert!(
            node["keys"].is_u64() && node["used_memory_bytes"].as_u64() > Some(0),
            "{node}"
        );
    }
}

/// The value of the sample `name{labels}` exactly as `/metrics` prints it.
fn sample_value(admin: u16, series: &str) -> Option<f64> {
    get(admin, "/metrics")
        .body
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn a_dead_master_is_reported_down_and_its_peers_up() {
    let mut cluster = Cluster::redis(3);
    let dir = temp_dir("metrics-dead-master");
    let config = dir.join("slotproxy.yaml");
    std::fs::write(&config, "admin:\n  poll_interval_ms: 200\n").expect("write proxy config");
    let proxy = start_proxy(
        &cluster.seeds(),
        &["--config", &config.display().to_string()],
    );
    dead_master_is_reported_down(&mut cluster, &proxy);
}

/// Kills the last node of `cluster` and waits for `slotproxy_backend_up` to say so, while
/// the survivors stay up, through the cluster marking it failed. With no replica to replace
/// it, the failed master keeps its slots in the proxy's map, as in Redis Cluster's own.
pub fn dead_master_is_reported_down(cluster: &mut Cluster, proxy: &ServerProcess) {
    let admin = proxy.admin_port().expect("admin port announced");
    let up =
        |node: &ServerProcess| format!("slotproxy_backend_up{{node=\"127.0.0.1:{}\"}}", node.port);
    let series: Vec<String> = cluster.nodes.iter().map(up).collect();
    wait_until("every master up", Duration::from_secs(30), || {
        series
            .iter()
            .all(|s| sample_value(admin, s) == Some(1.0))
            .then_some(())
    });
    let (victim, survivors) = series.split_last().expect("nodes");
    cluster.nodes.last_mut().expect("node").kill();
    wait_until(
        "the dead master reported down",
        Duration::from_secs(10),
        || (sample_value(admin, victim) == Some(0.0)).then_some(()),
    );
    wait_until(
        "the cluster to mark the node failed",
        Duration::from_secs(30),
        || {
            let mut c = RawClient::connect(cluster.nodes[0].port);
            let nodes = c.call(&["CLUSTER", "NODES"]);
            let text = String::from_utf8_lossy(nodes.as_bytes().unwrap_or(b"")).into_owned();
            text.lines()
                .any(|l| l.contains("master,fail "))
                .then_some(())
        },
    );
    let victim_addr = format!("127.0.0.1:{}", cluster.nodes[cluster.nodes.len() - 1].port);
    wait_until(
        "down after the failure flag, peers up",
        Duration::from_secs(10),
        || {
            (sample_value(admin, victim) == Some(0.0)
                && survivors
                    .iter()
                    .all(|s| sample_value(admin, s) == Some(1.0)))
            .then_some(())
        },
    );
    assert!(
        get(admin, "/v1/cluster").contains(&victim_addr),
        "the failed master, not replaced, still owns its slots"
    );
}

#[test]
fn alert_conditions_are_split_into_measured_sides() {
    assert_eq!(
        strip_comparison("max by (node) (slotproxy_backend_up) == 0"),
        "max by (node) (slotproxy_backend_up)"
    );
    assert_eq!(
        strip_comparison("sum(rate(x{a=~\"b\",c!=\"d\"}[5m])) / sum(rate(y[5m])) > 0.05"),
        "sum(rate(x{a=~\"b\",c!=\"d\"}[5m])) / sum(rate(y[5m]))"
    );
    assert_eq!(strip_comparison("up"), "up");
    assert_eq!(
        set_operands("max(a) > 0\n  and max(increase(b_total[15m])) == 0"),
        vec!["max(a) > 0", "max(increase(b_total[15m])) == 0"]
    );
    assert_eq!(
        set_operands("a unless on(x) b"),
        vec!["a".to_string(), "b".to_string()]
    );
    assert_eq!(
        set_operands("slotproxy_backend_errors_total"),
        vec!["slotproxy_backend_errors_total"]
    );
    assert_eq!(
        referenced_names("rate(slotproxy_a_total[1m]) / slotproxy_b"),
        ["slotproxy_a_total", "slotproxy_b"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}
