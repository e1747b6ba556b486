//! Resharding jobs through the admin API, against a real 3-master Redis Cluster and a
//! storage-node cluster (each scenario runs on both): a reshard
//! under client load, a job interrupted by killing the proxy and finished by the next one,
//! adding / draining / removing a node, and the API's error answers.
//!
//! The scenarios take the cluster and the proxy as parameters (see `reshard_jobs/`), so the
//! same code can run against storage-node clusters. They run one at a time: the load test
//! measures throughput and the machine is small.

mod reshard_jobs {
    pub mod admin;
    pub mod data;
    pub mod scenarios;
}

use std::sync::Mutex;

use reshard_jobs::admin::proxy_with_token;
use reshard_jobs::scenarios;
use test_harness::Cluster;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn reshard_2000_slots_under_load() {
    let _serial = serial();
    let cluster = Cluster::redis(3);
    let (proxy, admin) = proxy_with_token(&cluster.seeds());
    scenarios::reshard_under_load(&cluster, proxy.port, admin);
}

#[test]
fn killed_proxy_job_is_finished_by_the_next_job() {
    let _serial = serial();
    let cluster = Cluster::redis(3);
    let seeds = cluster.seeds();
    scenarios::interrupted_job_is_finished_by_the_next(&cluster, &|| proxy_with_token(&seeds));
}

#[test]
fn add_drain_and_remove_a_node() {
    let _serial = serial();
    let cluster = Cluster::redis(3);
    let (proxy, admin) = proxy_with_token(&cluster.seeds());
    scenarios::add_drain_remove_a_node(&cluster, proxy.port, admin);
}

#[test]
fn admin_errors_and_one_job_at_a_time() {
    let _serial = serial();
    let cluster = Cluster::redis(3);
    let (_proxy, admin) = proxy_with_token(&cluster.seeds());
    scenarios::request_errors(&cluster, admin);
}

#[test]
fn tryagain_waits_out_a_slow_migration() {
    let _serial = serial();
    let cluster = Cluster::redis(3);
    let (proxy, _admin) = proxy_with_token(&cluster.seeds());
    scenarios::multi_key_requests_wait_out_a_slow_migration(&cluster, proxy.port);
}

#[test]
fn reshard_2000_slots_under_load_on_storage_nodes() {
    let _serial = serial();
    let cluster = Cluster::storage_nodes(3);
    let (proxy, admin) = proxy_with_token(&cluster.seeds());
    scenarios::reshard_under_load(&cluster, proxy.port, admin);
}

#[test]
fn killed_proxy_job_is_finished_by_the_next_job_on_storage_nodes() {
    let _serial = serial();
    let cluster = Cluster::storage_nodes(3);
    let seeds = cluster.seeds();
    scenarios::interrupted_job_is_finished_by_the_next(&cluster, &|| proxy_with_token(&seeds));
}

#[test]
fn add_drain_and_remove_a_node_on_storage_nodes() {
    let _serial = serial();
    let cluster = Cluster::storage_nodes(3);
    let (proxy, admin) = proxy_with_token(&cluster.seeds());
    scenarios::add_drain_remove_a_node(&cluster, proxy.port, admin);
}

#[test]
fn admin_errors_and_one_job_at_a_time_on_storage_nodes() {
    let _serial = serial();
    let cluster = Cluster::storage_nodes(3);
    let (_proxy, admin) = proxy_with_token(&cluster.seeds());
    scenarios::request_errors(&cluster, admin);
}

#[test]
fn tryagain_waits_out_a_slow_migration_on_storage_nodes() {
    let _serial = serial();
    let cluster = Cluster::storage_nodes(3);
    let (proxy, _admin) = proxy_with_token(&cluster.seeds());
    scenarios::multi_key_requests_wait_out_a_slow_migration(&cluster, proxy.port);
}
