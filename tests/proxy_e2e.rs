//! End-to-end tests of slotproxy in front of a 3-master cluster, all on free loopback
//! ports. Every scenario runs twice, with the backend as a parameter: a real Redis Cluster
//! (redis-server 7.0 in cluster mode, joined with `redis-cli --cluster create`) and a
//! storage-node cluster (joined the same way).

mod proxy_e2e {
    pub mod blocking_pubsub;
    pub mod failures;
    pub mod fanout;
    pub mod pubsub_order;
    pub mod routing;
    pub mod transactions;
}

use proxy_e2e::*;
use test_harness::{on_both_backends, Cluster};

on_both_backends!(
    routing_fanout_transactions_blocking_pubsub,
    &[],
    |cluster: &mut Cluster, port| {
        routing::single_keys_reach_their_slot_owner(cluster, port);
        routing::pipeline_of_10000_mixed_commands(port);
        routing::local_commands_and_errors(port);
        routing::resp3_through_the_proxy(port);
        routing::same_slot_rules(port);
        fanout::mget_of_1000_keys_over_all_slots(port);
        fanout::split_commands_merge_like_one_server(port);
        fanout::all_master_commands(port);
        transactions::multi_exec_in_one_slot(port);
        transactions::cross_slot_multi_aborts(port);
        transactions::watch_detects_changes(port);
        transactions::pipelined_transactions_in_every_split(port);
        blocking_pubsub::blocking_pop_woken_by_another_client(port);
        blocking_pubsub::pubsub_across_nodes(cluster, port);
        blocking_pubsub::sharded_pubsub(port);
    }
);

on_both_backends!(
    pubsub_messages_in_order_and_shape,
    &[],
    |_cluster: &mut Cluster, port| {
        pubsub_order::messages_come_before_the_next_reply(port);
        pubsub_order::hello_switch_is_followed_like_redis(port);
        pubsub_order::reply_off_keeps_pushes_like_redis(port);
    }
);

on_both_backends!(
    moved_and_ask_redirects_are_followed,
    &[],
    |cluster: &mut Cluster, port| {
        failures::slot_migration_is_invisible_to_clients(cluster, port);
    }
);

on_both_backends!(
    client_killed_during_large_fanout,
    &["--workers", "2"],
    |cluster: &mut Cluster, port| {
        failures::client_killed_during_fanout(cluster, port);
    }
);

on_both_backends!(
    dead_master_fails_only_its_slots,
    &[],
    |cluster: &mut Cluster, port| {
        failures::dead_master_fails_only_its_slots(cluster, port);
    }
);

on_both_backends!(
    redis_benchmark_default_tests_run_without_errors,
    &[],
    |_: &mut Cluster, port| {
        failures::redis_benchmark_runs_clean(port);
    }
);
