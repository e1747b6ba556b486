//! End-to-end tests of slotproxy in front of a real 3-master Redis Cluster (redis-server 7.0
//! in cluster mode, joined with `redis-cli --cluster create`), all on free loopback ports.
//!
//! Each scenario takes the cluster and the proxy as parameters, so the same code can run
//! against other backends (storage-node clusters) later.

mod proxy_e2e {
    pub mod blocking_pubsub;
    pub mod failures;
    pub mod fanout;
    pub mod routing;
    pub mod transactions;
}

use proxy_e2e::*;
use test_harness::{start_proxy, Cluster};

#[test]
fn routing_fanout_transactions_blocking_pubsub() {
    let cluster = Cluster::redis(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    routing::single_keys_reach_their_slot_owner(&cluster, proxy.port);
    routing::pipeline_of_10000_mixed_commands(proxy.port);
    routing::local_commands_and_errors(proxy.port);
    routing::resp3_through_the_proxy(proxy.port);
    routing::same_slot_rules(proxy.port);
    fanout::mget_of_1000_keys_over_all_slots(proxy.port);
    fanout::split_commands_merge_like_one_server(proxy.port);
    fanout::all_master_commands(proxy.port);
    transactions::multi_exec_in_one_slot(proxy.port);
    transactions::cross_slot_multi_aborts(proxy.port);
    transactions::watch_detects_changes(proxy.port);
    blocking_pubsub::blocking_pop_woken_by_another_client(proxy.port);
    blocking_pubsub::pubsub_across_nodes(&cluster, proxy.port);
    blocking_pubsub::sharded_pubsub(proxy.port);
}

#[test]
fn moved_and_ask_redirects_are_followed() {
    let cluster = Cluster::redis(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    failures::slot_migration_is_invisible_to_clients(&cluster, proxy.port);
}

#[test]
fn client_killed_during_large_fanout() {
    let cluster = Cluster::redis(3);
    let proxy = start_proxy(&cluster.seeds(), &["--workers", "2"]);
    failures::client_killed_during_fanout(&cluster, proxy.port);
}

#[test]
fn dead_master_fails_only_its_slots() {
    let mut cluster = Cluster::redis(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    failures::dead_master_fails_only_its_slots(&mut cluster, proxy.port);
}

#[test]
fn redis_benchmark_default_tests_run_without_errors() {
    let cluster = Cluster::redis(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    failures::redis_benchmark_runs_clean(proxy.port);
}
