//! A plain client pointed at the proxy sees one Redis 7.0 server: the same protocol texts
//! (AUTH, HELLO, unknown commands, arity), the same `COMMAND` answers, CLIENT REPLY, INFO's
//! section rules, and keyspace notifications from every node of the cluster. Replies are
//! compared byte for byte with a standalone redis-server wherever they should be identical.
//! Every scenario runs in front of a real Redis Cluster and a storage-node cluster.

mod proxy_transparency {
    pub mod command;
    pub mod identity;
    pub mod info;
    pub mod keyspace;
    pub mod reply_mode;
}

use proxy_transparency::*;
use test_harness::{on_both_backends, Cluster};

on_both_backends!(
    auth_and_hello_texts_match_redis,
    &["--config", &identity::users_config()],
    |cluster: &mut Cluster, port| {
        identity::auth_session_matches_redis(port);
        identity::hello_describes_the_proxy(port);
        identity::cluster_node_hello_says_cluster(cluster.nodes[0].port);
    }
);

on_both_backends!(
    command_info_reply_mode_and_info_sections,
    &[],
    |_cluster: &mut Cluster, port| {
        command::session_matches_redis(port);
        command::lists_only_what_it_serves(port);
        reply_mode::client_reply_matches_redis(port);
        reply_mode::client_tracking_is_refused(port);
        info::sections_follow_redis(port);
    }
);

on_both_backends!(
    keyspace_notifications_from_every_master,
    &[],
    |cluster: &mut Cluster, port| {
        keyspace::events_from_every_master_arrive_once(cluster, port);
    }
);

/// The node answers the same `COMMAND` session as redis-server (the proxy tests above run
/// it through the proxy).
#[test]
fn node_answers_the_command_session_like_redis() {
    command::node_session_matches_redis();
}
