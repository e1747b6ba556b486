//! The admin HTTP API: health, readiness, topology, and its authorization rules.

use test_harness::http::{get, request};
use test_harness::{start_proxy, Cluster};

#[test]
fn health_ready_cluster_and_auth() {
    let cluster = Cluster::redis(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    let admin = proxy.admin_port().expect("admin port announced");
    let health = get(admin, "/health");
    assert_eq!(health.status, 200, "{health:?}");
    let ready = get(admin, "/ready");
    assert_eq!(ready.status, 200, "{ready:?}");
    let topology = get(admin, "/v1/cluster");
    assert_eq!(topology.status, 200);
    for node in &cluster.nodes {
        assert!(
            topology.contains(&format!("127.0.0.1:{}", node.port)),
            "{}",
            topology.body
        );
    }
    assert!(topology.contains("\"slot_count\""));
    // Changing calls need the token, which this proxy does not have configured.
    let refused = request(admin, "POST", "/v1/reshard", Some("guess"), "{}");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(refused.contains("\"error\""));
    let missing = get(admin, "/v1/nothing");
    assert_eq!(missing.status, 404);
    assert!(missing.contains("no route"));
}
